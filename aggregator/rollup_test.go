package aggregator

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/msg"
)

// TestVerdictsFeedRollups: a decided window carries its successful probes'
// latency and its maintenance state into the verdict, and the store's
// rollups hold them once, even when a second replica decides it again.
func TestVerdictsFeedRollups(t *testing.T) {
	e := newAenv(t)
	m, _ := json.Marshal(model.Maintenance{ID: "m", EndpointIDs: []string{"ep"}, Start: w0.Add(time.Minute), End: w0.Add(2 * time.Minute)})
	if err := e.st.PutObject(e.ctx, model.MaintenanceKind, "m", m); err != nil {
		t.Fatal(err)
	}
	for i, st := range []msg.Status{msg.StatusUp, msg.StatusDown, msg.StatusDegraded, msg.StatusDown} {
		r := res("", st, "ok", time.Duration(i)*30*time.Second)
		r.Phases = map[string]float64{msg.PhaseTotal: 0.3 + float64(i), msg.PhaseInitialize: 0.1}
		e.sendResult(r)
	}
	e.consume()
	e.clk.Set(w0.Add(2*time.Minute + 15*time.Second))
	if err := e.agg.Tick(e.ctx); err != nil {
		t.Fatal(err)
	}
	vs := e.published()
	if len(vs) != 2 || vs[0].Maintenance || !vs[1].Maintenance {
		t.Fatalf("verdicts %+v: want the second window in maintenance", vs)
	}
	if l := vs[0].Latency; l == nil || len(l.Total) != 1 || l.Total[0] != 0.3 || len(l.Initialize) != 1 {
		t.Fatalf("first window latency %+v: want the up probe's only", vs[0].Latency)
	}
	// A replica re-emitting the same verdicts (its listing raced ours).
	for _, v := range vs {
		if _, err := e.newAggregator().emit(e.ctx, v); err != nil {
			t.Fatal(err)
		}
	}
	days, err := e.st.Rollups(e.ctx, "ep", model.Daily, w0.Truncate(model.Daily), w0.Add(model.Daily))
	if err != nil {
		t.Fatal(err)
	}
	if len(days) != 1 || days[0].Down != 60 || days[0].Maintenance != 60 || days[0].Verdicts != 2 || days[0].Total.GetCount() != 1 {
		t.Fatalf("rollup %+v", days)
	}
}
