package api_test

import (
	"net/http"
	"testing"
	"time"

	apiv1 "github.com/mcpmon/mcpmon/pkg/api/v1"
	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/msg"
	"github.com/mcpmon/mcpmon/pkg/store"
)

// TestUptimeHistoryAndLatencyFromRollups: the uptime routes answer from the
// rollups the verdicts folded: a 30-minute outage in the last day, daily
// bars with the day's incident, and latency percentiles within 1%.
func TestUptimeHistoryAndLatencyFromRollups(t *testing.T) {
	h := newHarness(t)
	ctx := t.Context()
	if _, err := h.store.CreateEndpoint(ctx, model.Endpoint{ID: "ep", Schedule: "@every 1m"}); err != nil {
		t.Fatal(err)
	}
	start := t0.Truncate(time.Hour).Add(-6 * time.Hour)
	outage := start.Add(2 * time.Hour)
	for w := start; w.Before(t0.Truncate(time.Minute)); w = w.Add(time.Minute) {
		v := msg.Verdict{Schema: msg.SchemaVersion, EndpointID: "ep", Window: w, WindowSecs: 60, State: msg.StateUp,
			Latency: &msg.VerdictLatency{Total: []float64{0.5}, Initialize: []float64{0.2}}}
		if !w.Before(outage) && w.Before(outage.Add(30*time.Minute)) {
			v.State, v.Latency = msg.StateDown, nil
		}
		if _, err := h.store.RecordVerdict(ctx, v); err != nil {
			t.Fatal(err)
		}
	}
	inc := model.Incident{ID: msg.IncidentID("ep", outage), EndpointID: "ep", State: model.IncidentResolved, OpenedWindow: outage}
	if err := h.store.SaveTracker(ctx, model.Tracker{EndpointID: "ep"}, inc); err != nil {
		t.Fatal(err)
	}

	var up apiv1.UptimeView
	h.mustJSON(http.MethodGet, "/v1/endpoints/ep/uptime?range=24h", "", http.StatusOK, &up)
	decided := int64(t0.Truncate(time.Minute).Sub(start) / time.Second)
	if up.Resolution != "hour" || up.Uptime.Down != 1800 || up.Uptime.Up != decided-1800 || up.Incidents != 1 {
		t.Fatalf("uptime %+v", up)
	}
	if want := float64(decided-1800) / float64(decided); up.Uptime.Ratio != want {
		t.Fatalf("ratio %v, want %v", up.Uptime.Ratio, want)
	}
	if l := up.Latency[msg.PhaseTotal]; l.P99 < 0.495 || l.P99 > 0.505 || l.Count != float64(decided/60-30) {
		t.Fatalf("total latency %+v", l)
	}

	var hist struct {
		Days []apiv1.DayView `json:"days"`
	}
	h.mustJSON(http.MethodGet, "/v1/endpoints/ep/history?days=3", "", http.StatusOK, &hist)
	if len(hist.Days) != 3 {
		t.Fatalf("%d days, want 3", len(hist.Days))
	}
	var down int64
	incidents := 0
	for _, d := range hist.Days {
		down += d.Uptime.Down
		incidents += d.Incidents
	}
	if down != 1800 || incidents != 1 || hist.Days[2].Date != t0.UTC().Format(time.DateOnly) {
		t.Fatalf("history %+v", hist.Days)
	}

	for _, path := range []string{
		"/v1/endpoints/ep/uptime?range=1y",
		"/v1/endpoints/ep/uptime?range=custom&from=x",
		"/v1/endpoints/ep/history?days=0",
		"/v1/endpoints/ep/history?days=401",
	} {
		if resp, b := h.do(http.MethodGet, path, "", ""); resp.StatusCode != http.StatusBadRequest {
			t.Errorf("GET %s = %d %s, want 400", path, resp.StatusCode, b)
		}
	}
	custom := "/v1/endpoints/ep/uptime?range=custom&from=" + outage.Format(time.RFC3339) + "&to=" + outage.Add(time.Hour).Format(time.RFC3339)
	h.mustJSON(http.MethodGet, custom, "", http.StatusOK, &up)
	if up.Uptime.Down != 1800 || up.Uptime.Up != 1800 {
		t.Fatalf("custom range %+v", up.Uptime)
	}
}

func TestCatalogShowsStoredToolsAndLatestDrift(t *testing.T) {
	h := newHarness(t)
	ctx := t.Context()
	if _, err := h.store.CreateEndpoint(ctx, model.Endpoint{ID: "ep", Schedule: "@every 1m"}); err != nil {
		t.Fatal(err)
	}
	var empty apiv1.CatalogView
	h.mustJSON(http.MethodGet, "/v1/endpoints/ep/catalog", "", http.StatusOK, &empty)
	if len(empty.Tools) != 0 || len(empty.Drift) != 0 || empty.Fingerprint != "" {
		t.Fatalf("catalog before any probe: %+v", empty)
	}
	if err := h.store.PutObject(ctx, store.KindCatalog, "ep", []byte(`{"fingerprint":"f2","tools":[{"name":"search","description":"d","inputSchema":null}]}`)); err != nil {
		t.Fatal(err)
	}
	res := msg.ProbeResult{Schema: msg.SchemaVersion, EndpointID: "ep", ProbeRunID: "r", Slot: t0, Status: msg.StatusUp, CatalogFingerprint: "f2",
		Events: []msg.Event{{Kind: "catalog_changed", Severity: "breaking", Message: "tool removed"}, {Kind: "cert_expiring", Message: "soon"}}}
	if err := h.store.PutLatestResult(ctx, res); err != nil {
		t.Fatal(err)
	}
	var c apiv1.CatalogView
	h.mustJSON(http.MethodGet, "/v1/endpoints/ep/catalog", "", http.StatusOK, &c)
	if c.Fingerprint != "f2" || c.LatestFingerprint != "f2" || len(c.Tools) != 1 || len(c.Drift) != 1 || c.Drift[0].Severity != "breaking" {
		t.Fatalf("catalog %+v", c)
	}
}
