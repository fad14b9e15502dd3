package api_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/mcpmon/mcpmon/alerter/sinks"
	"github.com/mcpmon/mcpmon/pkg/api"
	apiv1 "github.com/mcpmon/mcpmon/pkg/api/v1"
	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/store"
)

type eventPage struct {
	Events     []apiv1.EventView `json:"events"`
	NextCursor string            `json:"nextCursor"`
}

// TestEventPagesNewestFirst: the event list walks newest first page by
// page with no repeat or gap, ?kind= keeps one kind, and the diff comes
// back as the prober wrote it.
func TestEventPagesNewestFirst(t *testing.T) {
	h := newHarness(t)
	ep := h.create(`{"name":"docs","url":"https://mcp.example.com/mcp"}`)
	var want []string
	for i := range 5 {
		kind := model.EventCatalogBreaking
		if i%2 == 1 {
			kind = model.EventCatalogSecurity
		}
		after := fmt.Sprintf("sha256:%d", i)
		_, err := h.store.AppendEvents(t.Context(), model.ChangeEvent{EndpointID: ep.ID, Kind: kind,
			Fingerprint: model.EventFingerprint(ep.ID, kind, after), ObservedAt: t0.Add(time.Duration(i) * time.Minute),
			Message: "changed", After: after, Diff: json.RawMessage(`{"removed":["search"]}`)})
		if err != nil {
			t.Fatal(err)
		}
		want = append([]string{after}, want...)
	}
	var got []string
	path := "/v1/endpoints/" + ep.ID + "/events?limit=2"
	for range 5 {
		var page eventPage
		h.mustJSON("GET", path, "", http.StatusOK, &page)
		for _, e := range page.Events {
			got = append(got, e.After)
			if string(e.Diff) != `{"removed":["search"]}` || e.Fingerprint == "" || e.EndpointID != ep.ID {
				t.Fatalf("event %+v", e)
			}
		}
		if page.NextCursor == "" {
			break
		}
		path = "/v1/endpoints/" + ep.ID + "/events?limit=2&cursor=" + url.QueryEscape(page.NextCursor)
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("walk = %v, want %v", got, want)
	}
	var sec eventPage
	h.mustJSON("GET", "/v1/endpoints/"+ep.ID+"/events?kind=catalog_security", "", http.StatusOK, &sec)
	if len(sec.Events) != 2 || sec.Events[0].Kind != model.EventCatalogSecurity || sec.NextCursor != "" {
		t.Fatalf("?kind=catalog_security = %+v", sec)
	}
	var empty eventPage
	other := h.create(`{"name":"quiet","url":"https://mcp2.example.com/mcp"}`)
	_, b := h.do("GET", "/v1/endpoints/"+other.ID+"/events", "", "")
	if err := json.Unmarshal(b, &empty); err != nil || empty.Events == nil || len(empty.Events) != 0 {
		t.Fatalf("an endpoint without events = %s, want an empty list", b)
	}
}

func TestEventListRejectsBadInput(t *testing.T) {
	h := newHarness(t)
	ep := h.create(`{"name":"docs","url":"https://mcp.example.com/mcp"}`)
	verdictCursor := "eyJ2IjoxLCJrIjoidmVyZGljdHMiLCJhdCI6IjIwMjYtMDMtMDFUMTI6MDA6MDBaIn0"
	for _, c := range []struct {
		path, pointer string
		status        int
	}{
		{"/v1/endpoints/" + ep.ID + "/events?kind=outage", "?kind", http.StatusBadRequest},
		{"/v1/endpoints/" + ep.ID + "/events?cursor=garbage", "?cursor", http.StatusBadRequest},
		{"/v1/endpoints/" + ep.ID + "/events?cursor=" + verdictCursor, "?cursor", http.StatusBadRequest},
		{"/v1/endpoints/" + ep.ID + "/events?limit=0", "?limit", http.StatusBadRequest},
		{"/v1/endpoints/nope/events", "", http.StatusNotFound},
	} {
		resp, b := h.do("GET", c.path, "", "")
		if resp.StatusCode != c.status || resp.Header.Get("Content-Type") != "application/problem+json" || !strings.Contains(string(b), c.pointer) {
			t.Errorf("GET %s = %d %s %s, want %d problem naming %q", c.path, resp.StatusCode, resp.Header.Get("Content-Type"), b, c.status, c.pointer)
		}
	}
}

// TestSinkNotifyKindsValidated: an unknown notify kind, or an event kind
// on a sink type that carries none, is a 400 naming the field.
func TestSinkNotifyKindsValidated(t *testing.T) {
	h := newHarness(t, func(o *api.Options) {
		o.SinkValidator = func(raw json.RawMessage) error { return sinks.ValidateEndpointSinks(raw, true) }
	})
	for _, sinks := range []string{
		`[{"name":"hook","type":"webhook","url":"https://hooks.example.com/x","notify":["outages"]}]`,
		`[{"name":"og","type":"opsgenie","apiKey":"k","notify":["catalog_breaking"]}]`,
	} {
		resp, b := h.do("POST", "/v1/endpoints", "", `{"name":"docs","url":"https://mcp.example.com/mcp","sinks":`+sinks+`}`)
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), "notify") {
			t.Errorf("sinks %s = %d %s, want 400 naming notify", sinks, resp.StatusCode, b)
		}
	}
	ok := `[{"name":"hook","type":"webhook","url":"https://hooks.example.com/x","notify":["incidents","catalog_breaking","catalog_security"]}]`
	h.mustJSON("POST", "/v1/endpoints", `{"name":"docs","url":"https://mcp.example.com/mcp","sinks":`+ok+`}`, http.StatusCreated, nil)
}

// TestEventListShowsAFlappingMarker: an endpoint past its event budget
// lists the events within it and one marker per kind that says how many
// changes it stands for, since when.
func TestEventListShowsAFlappingMarker(t *testing.T) {
	h := newHarness(t)
	ep := h.create(`{"name":"hostile","url":"https://mcp.example.com/mcp"}`)
	const changes = 50
	for i := range changes {
		after := fmt.Sprintf("sha256:%d", i)
		_, err := h.store.AppendEvents(t.Context(), model.ChangeEvent{EndpointID: ep.ID, Kind: model.EventCatalogSecurity,
			Fingerprint: model.EventFingerprint(ep.ID, model.EventCatalogSecurity, after), ObservedAt: t0.Add(time.Duration(i) * time.Second),
			Message: "description changed", After: after})
		if err != nil {
			t.Fatal(err)
		}
	}
	var page eventPage
	h.mustJSON("GET", "/v1/endpoints/"+ep.ID+"/events", "", http.StatusOK, &page)
	if len(page.Events) != store.EventsPerHour+1 {
		t.Fatalf("%d events listed, want %d and the marker", len(page.Events), store.EventsPerHour)
	}
	m := page.Events[0]
	if m.Source != model.EventSourceFlapping || m.Suppressed == nil || m.Suppressed.Count != changes-store.EventsPerHour ||
		!m.Suppressed.Since.Equal(t0.Add(store.EventsPerHour*time.Second)) || !m.Suppressed.Last.Equal(t0.Add((changes-1)*time.Second)) {
		t.Fatalf("newest event %+v (%+v), want the marker counting %d changes", m, m.Suppressed, changes-store.EventsPerHour)
	}
}
