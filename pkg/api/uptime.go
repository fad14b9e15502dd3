// Uptime, daily history, latency percentiles and the tool catalog of one
// endpoint, read from the rollups RecordVerdict folds (pkg/store
// rollups.go, where uptime is defined) and the prober's stored catalog.
// Tenant-scoped like every endpoint route: another tenant's endpoint is the
// same 404 as a missing one.

package api

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/DataDog/sketches-go/ddsketch"
	"github.com/go-chi/chi/v5"

	apiv1 "github.com/mcpmon/mcpmon/pkg/api/v1"
	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/msg"
	"github.com/mcpmon/mcpmon/pkg/store"
)

// RollupReader is what the uptime routes need beyond Store; both store
// backends implement it. A Store without it answers those routes 501.
type RollupReader interface {
	Rollups(ctx context.Context, endpointID string, size time.Duration, from, to time.Time) ([]model.Rollup, error)
}

// MaxHistoryDays bounds GET /history?days=: the daily rollups kept.
const MaxHistoryDays = model.DailyBuckets

// endpointRollups is the prologue of the rollup routes: the caller's
// endpoint {id} (another tenant's is a 404) and the store's rollups (501
// when it keeps none). ok is false when the answer was written.
func (s *server) endpointRollups(w http.ResponseWriter, r *http.Request) (id string, rr RollupReader, ok bool) {
	id = chi.URLParam(r, "id")
	if _, p := s.endpointOf(r, id); p != nil {
		writeProblem(w, r, p)
		return id, nil, false
	}
	rr, ok = s.store.(RollupReader)
	if !ok {
		writeProblem(w, r, problemf(http.StatusNotImplemented, apiv1.TypeInvalidRequest, "this store keeps no rollups"))
	}
	return id, rr, ok
}

func (s *server) getUptime(w http.ResponseWriter, r *http.Request) {
	id, rr, ok := s.endpointRollups(w, r)
	if !ok {
		return
	}
	q := r.URL.Query()
	name := q.Get("range")
	if name == "" {
		name = "24h"
	}
	now := s.clock.Now()
	from, to, size, known := model.RangeBounds(name, now)
	if name == "custom" {
		f, err1 := time.Parse(time.RFC3339, q.Get("from"))
		t, err2 := time.Parse(time.RFC3339, q.Get("to"))
		if err1 != nil || err2 != nil || !t.After(f) || timeInRange(f) != "" || timeInRange(t) != "" {
			writeProblem(w, r, invalid(apiv1.FieldError{Pointer: "?from", Detail: "range=custom needs from and to as RFC 3339 times " + queryTimeRange() + ", from before to"}))
			return
		}
		from, to, size = model.CustomBounds(f, t, now)
		known = true
	}
	if !known {
		writeProblem(w, r, invalid(apiv1.FieldError{Pointer: "?range", Detail: "must be 24h, 7d, 30d, 90d or custom"}))
		return
	}
	buckets, err := rr.Rollups(r.Context(), id, size, from, to)
	if err != nil {
		writeProblem(w, r, s.storeProblem(r, err, "rollups of endpoint "+id))
		return
	}
	incidents, p := s.incidentStarts(r, id)
	if p != nil {
		writeProblem(w, r, p)
		return
	}
	total, initialize, err := model.MergeLatency(buckets, from, to)
	if err != nil {
		writeProblem(w, r, s.storeProblem(r, err, "latency of endpoint "+id))
		return
	}
	view := apiv1.UptimeView{
		EndpointID: id, Range: name, Resolution: resolutionName(size),
		Uptime: apiv1.UptimeReportView(model.Uptime(buckets, from, to)), Incidents: countIn(incidents, from, to),
		Latency: map[string]apiv1.LatencyView{},
	}
	for phase, sk := range map[string]*ddsketch.DDSketch{msg.PhaseTotal: total, msg.PhaseInitialize: initialize} {
		if lv, ok := latencyView(sk); ok {
			view.Latency[phase] = lv
		}
	}
	writeJSON(w, http.StatusOK, view)
}

func (s *server) getHistory(w http.ResponseWriter, r *http.Request) {
	id, rr, ok := s.endpointRollups(w, r)
	if !ok {
		return
	}
	days := 90
	if raw := r.URL.Query().Get("days"); raw != "" {
		n, err := strconv.Atoi(raw)
		if err != nil || n < 1 || n > MaxHistoryDays {
			writeProblem(w, r, invalid(apiv1.FieldError{Pointer: "?days", Detail: "must be a whole number from 1 to " + strconv.Itoa(MaxHistoryDays)}))
			return
		}
		days = n
	}
	to := s.clock.Now().UTC().Truncate(model.Daily).Add(model.Daily)
	from := to.Add(-time.Duration(days) * model.Daily)
	buckets, err := rr.Rollups(r.Context(), id, model.Daily, from, to)
	if err != nil {
		writeProblem(w, r, s.storeProblem(r, err, "rollups of endpoint "+id))
		return
	}
	incidents, p := s.incidentStarts(r, id)
	if p != nil {
		writeProblem(w, r, p)
		return
	}
	out := make([]apiv1.DayView, 0, days)
	for d := from; d.Before(to); d = d.Add(model.Daily) {
		end := d.Add(model.Daily)
		out = append(out, apiv1.DayView{Date: d.Format(time.DateOnly), Uptime: apiv1.UptimeReportView(model.Uptime(buckets, d, end)), Incidents: countIn(incidents, d, end)})
	}
	writeJSON(w, http.StatusOK, struct {
		EndpointID string          `json:"endpointId"`
		Days       []apiv1.DayView `json:"days"` // oldest first, today (partial) last
	}{id, out})
}

// incidentStarts returns the opening windows of the endpoint's incidents,
// which the request's tenant owns.
func (s *server) incidentStarts(r *http.Request, id string) ([]time.Time, *apiv1.Problem) {
	incs, err := s.store.ListIncidents(r.Context(), store.IncidentFilter{EndpointID: id})
	if err != nil {
		return nil, s.storeProblem(r, err, "incidents of endpoint "+id)
	}
	out := make([]time.Time, 0, len(incs))
	for _, inc := range incs {
		out = append(out, inc.OpenedWindow)
	}
	return out, nil
}

func countIn(ts []time.Time, from, to time.Time) int {
	n := 0
	for _, t := range ts {
		if !t.Before(from) && t.Before(to) {
			n++
		}
	}
	return n
}

func resolutionName(size time.Duration) string {
	if size == model.Daily {
		return "day"
	}
	return "hour"
}

func latencyView(sk *ddsketch.DDSketch) (apiv1.LatencyView, bool) {
	if sk == nil || sk.IsEmpty() {
		return apiv1.LatencyView{}, false
	}
	qs, err := sk.GetValuesAtQuantiles([]float64{0.5, 0.95, 0.99})
	if err != nil {
		return apiv1.LatencyView{}, false
	}
	return apiv1.LatencyView{Count: sk.GetCount(), P50: qs[0], P95: qs[1], P99: qs[2]}, true
}
