package api_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	apiv1 "github.com/mcpmon/mcpmon/pkg/api/v1"
	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/store"
)

func TestMaintenanceCRUD(t *testing.T) {
	h := newHarness(t)

	var oneOff, recurring apiv1.MaintenanceView
	resp := h.mustJSON("POST", "/v1/maintenance", `{"name":"db upgrade","endpointIds":["ep-a"],
		"start":"2026-03-02T01:00:00+01:00","end":"2026-03-02T02:00:00+01:00"}`, http.StatusCreated, &oneOff)
	if resp.Header.Get("Location") != "/v1/maintenance/"+oneOff.ID || !oneOff.CreatedAt.Equal(t0) ||
		!oneOff.Start.Equal(time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)) {
		t.Fatalf("created %+v (Location %q)", oneOff, resp.Header.Get("Location"))
	}
	h.mustJSON("POST", "/v1/maintenance", `{"selector":{"team":"payments"},"cron":"0 2 * * 0","duration":"90m"}`, http.StatusCreated, &recurring)
	if recurring.Duration != "1h30m0s" || recurring.Cron != "0 2 * * 0" {
		t.Fatalf("recurring %+v", recurring)
	}

	// The alerter reads what the API stored, in its own type.
	doc, err := h.store.GetObject(t.Context(), store.KindMaintenance, recurring.ID)
	if err != nil {
		t.Fatal(err)
	}
	m, err := model.DecodeMaintenance(doc)
	if err != nil || m.Duration != 90*time.Minute || m.Selector["team"] != "payments" || m.Validate() != nil {
		t.Fatalf("stored maintenance %+v, %v", m, err)
	}
	sunday2am := time.Date(2026, 3, 8, 2, 30, 0, 0, time.UTC)
	if !m.ActiveAt(sunday2am, model.EndpointRef{ID: "x", Labels: map[string]string{"team": "payments"}}) {
		t.Error("stored recurring window is not active on Sunday 02:30 UTC")
	}

	var list struct{ Maintenance []apiv1.MaintenanceView }
	h.mustJSON("GET", "/v1/maintenance", "", http.StatusOK, &list)
	if len(list.Maintenance) != 2 || list.Maintenance[0].ID != oneOff.ID {
		t.Fatalf("list %+v", list)
	}

	var replaced apiv1.MaintenanceView
	h.mustJSON("PUT", "/v1/maintenance/"+oneOff.ID, `{"name":"db upgrade (extended)","endpointIds":["ep-a","ep-b"],
		"start":"2026-03-02T00:00:00Z","end":"2026-03-02T03:00:00Z"}`, http.StatusOK, &replaced)
	if replaced.ID != oneOff.ID || len(replaced.EndpointIDs) != 2 || !replaced.CreatedAt.Equal(oneOff.CreatedAt) {
		t.Fatalf("replaced %+v", replaced)
	}
	var got apiv1.MaintenanceView
	h.mustJSON("GET", "/v1/maintenance/"+oneOff.ID, "", http.StatusOK, &got)
	if got.Name != "db upgrade (extended)" || !got.End.Equal(time.Date(2026, 3, 2, 3, 0, 0, 0, time.UTC)) {
		t.Fatalf("after PUT, GET = %+v", got)
	}

	h.mustJSON("DELETE", "/v1/maintenance/"+oneOff.ID, "", http.StatusNoContent, nil)
	h.mustJSON("GET", "/v1/maintenance/"+oneOff.ID, "", http.StatusNotFound, nil)
	h.mustJSON("GET", "/v1/maintenance", "", http.StatusOK, &list)
	if len(list.Maintenance) != 1 || list.Maintenance[0].ID != recurring.ID {
		t.Fatalf("after delete, list %+v", list)
	}
}

// TestMaintenanceProblemsNameTheField: a window that breaks a rule is
// refused at the field the rule is about, saying what is wrong, never
// at "#" with the empty name of a window not created yet; a start sent
// as the zero time is called unset, not missing.
func TestMaintenanceProblemsNameTheField(t *testing.T) {
	h := newHarness(t)
	const sel = `"selector":{"team":"a"}`
	for _, tc := range []struct {
		name, body, pointer, detail string
	}{
		{"zero start", `{` + sel + `,"start":"0001-01-01T00:00:00Z","end":"2027-01-01T01:00:00Z"}`, "#/start", "start is unset (0001-01-01T00:00:00Z is the zero time"},
		{"no end", `{` + sel + `,"start":"2027-01-01T00:00:00Z"}`, "#/end", "a one-off window needs both start and end; end is unset"},
		{"end before start", `{` + sel + `,"start":"2027-01-01T01:00:00Z","end":"2027-01-01T00:00:00Z"}`, "#/end", "is not after start"},
		{"no endpoints", `{"start":"2027-01-01T00:00:00Z","end":"2027-01-01T01:00:00Z"}`, "#/endpointIds", "set endpointIds or a label selector"},
		{"both kinds", `{` + sel + `,"start":"2027-01-01T00:00:00Z","end":"2027-01-01T01:00:00Z","cron":"0 2 * * *","duration":"1h"}`, "#/cron", "not both"},
		{"cron without duration", `{` + sel + `,"cron":"0 2 * * *"}`, "#/duration", "a recurring window needs a positive duration"},
		{"duration without cron", `{` + sel + `,"duration":"1h"}`, "#/cron", "a recurring window needs a cron spec"},
		{"a bad cron", `{` + sel + `,"cron":"not cron","duration":"1h"}`, "#/cron", "cron"},
		{"neither kind", `{` + sel + `}`, "#/start", "set start/end (one-off) or cron/duration (recurring)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, b := h.do("POST", "/v1/maintenance", "", tc.body)
			refusedAt(t, resp, b, tc.pointer, tc.detail)
			if strings.Contains(string(b), `window \"\"`) {
				t.Fatalf("%s names the window by an empty ID", b)
			}
		})
	}
}
