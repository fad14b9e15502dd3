package api_test

import (
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpmon/mcpmon/pkg/api"
	"github.com/mcpmon/mcpmon/pkg/store"
)

func TestListAndGetIncidents(t *testing.T) {
	h := newHarness(t)
	seedIncident(t, h, "a-open", "ep-a", store.IncidentOpen)
	seedIncident(t, h, "a-resolved", "ep-a", store.IncidentResolved)
	seedIncident(t, h, "b-open", "ep-b", store.IncidentOpen)

	for _, tc := range []struct {
		query string
		want  string
	}{
		{"", "a-open a-resolved b-open"},
		{"?endpoint=ep-a", "a-open a-resolved"},
		{"?state=open", "a-open b-open"},
		{"?endpoint=ep-a&state=resolved", "a-resolved"},
		{"?endpoint=ep-c", ""},
		{"?limit=1", "x"}, // one of them
	} {
		var out struct{ Incidents []api.IncidentView }
		h.mustJSON("GET", "/v1/incidents"+tc.query, "", http.StatusOK, &out)
		var ids []string
		for _, inc := range out.Incidents {
			ids = append(ids, inc.ID)
		}
		if tc.want == "x" {
			if len(ids) != 1 {
				t.Errorf("%s: %v, want 1 incident", tc.query, ids)
			}
			continue
		}
		slices.Sort(ids)
		if got := strings.Join(ids, " "); got != tc.want {
			t.Errorf("GET /v1/incidents%s = %q, want %q", tc.query, got, tc.want)
		}
	}

	resp, b := h.do("GET", "/v1/incidents/a-open", "", "")
	if resp.StatusCode != http.StatusOK || strings.Contains(string(b), "alerter state") || strings.Contains(string(b), `"data"`) {
		t.Fatalf("GET incident = %d %s: want 200 without the alerter's private data", resp.StatusCode, b)
	}
	var inc api.IncidentView
	h.mustJSON("GET", "/v1/incidents/a-open", "", http.StatusOK, &inc)
	if inc.EndpointID != "ep-a" || inc.State != store.IncidentOpen || inc.Class != "timeout" || len(inc.Transitions) != 1 || inc.Version != 1 {
		t.Errorf("incident %+v", inc)
	}
}

func TestAckIncident(t *testing.T) {
	h := newHarness(t)
	seedIncident(t, h, "inc", "ep-a", store.IncidentOpen)
	h.clock.Advance(3 * time.Minute)

	var got api.IncidentView
	h.mustJSON("POST", "/v1/incidents/inc/ack", `{"by":"alice","reason":"looking into it"}`, http.StatusOK, &got)
	if got.State != store.IncidentAcknowledged || got.AckedBy != "alice" || got.AckedAt == nil || !got.AckedAt.Equal(h.clock.Now()) {
		t.Fatalf("acked incident %+v", got)
	}
	last := got.Transitions[len(got.Transitions)-1]
	if len(got.Transitions) != 2 || last.From != store.IncidentOpen || last.To != store.IncidentAcknowledged ||
		!last.At.Equal(h.clock.Now()) || last.Reason != "acknowledged via API by alice: looking into it" {
		t.Fatalf("transitions %+v", got.Transitions)
	}
	stored, _ := h.store.GetIncident(t.Context(), "inc")
	if stored.State != store.IncidentAcknowledged || string(stored.Data) != `{"private":"alerter state"}` {
		t.Fatalf("stored %+v: want acknowledged with the alerter's data untouched", stored)
	}

	// Acknowledging again (no body) is a no-op, not a second transition.
	h.clock.Advance(time.Minute)
	h.mustJSON("POST", "/v1/incidents/inc/ack", "", http.StatusOK, &got)
	if len(got.Transitions) != 2 || got.AckedBy != "alice" {
		t.Fatalf("second ack changed the incident: %+v", got)
	}
	if !strings.Contains(h.logs.String(), "incident acknowledged") {
		t.Error("acknowledgement not logged")
	}
}
