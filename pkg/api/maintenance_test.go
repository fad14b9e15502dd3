package api_test

import (
	"net/http"
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
