package alerter

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/msg"
)

func (e *env) maintenance(m model.Maintenance) {
	e.t.Helper()
	if err := m.Validate(); err != nil {
		e.t.Fatal(err)
	}
	doc, _ := json.Marshal(m)
	if err := e.st.PutObject(e.ctx, model.MaintenanceKind, m.ID, doc); err != nil {
		e.t.Fatal(err)
	}
}

// step handles one verdict per window from window `from`, the clock
// following the windows (each verdict handled 70s after its window starts),
// then sweeps as Run would.
func (e *env) step(a *Alerter, ep string, from int, ss ...msg.State) {
	e.t.Helper()
	for i, s := range ss {
		e.clk.Set(win(from + i).Add(70 * time.Second))
		e.publish(verdict(ep, win(from+i), s))
		if errs := e.pump(a.Handle); errs != nil {
			e.t.Fatal(errs)
		}
		if err := a.Sweep(e.ctx); err != nil {
			e.t.Fatal(err)
		}
	}
}

func TestMaintenanceAlertedBeforeIsNotReAlerted(t *testing.T) {
	e := newEnv(t)
	e.endpoint("ep1", nil, nil)
	a := e.alerter("a")
	e.step(a, "ep1", 0, down, down)
	if got := e.rcv.kinds(); !slices.Equal(got, []string{"open"}) {
		t.Fatalf("alerts %v, want [open] before maintenance", got)
	}
	// Maintenance over windows 3..8; the incident stays open through it and
	// after it: no second open, ever.
	e.maintenance(model.Maintenance{ID: "m1", EndpointIDs: []string{"ep1"}, Start: win(3), End: win(9)})
	e.step(a, "ep1", 2, down, down, down, down, down, down, down, down, down, down)
	if got := e.rcv.kinds(); !slices.Equal(got, []string{"open"}) {
		t.Fatalf("alerts %v, want only the open from before maintenance", got)
	}
	e.step(a, "ep1", 12, up, up)
	if got := e.rcv.kinds(); !slices.Equal(got, []string{"open", "resolve"}) {
		t.Fatalf("alerts %v, want [open resolve]", got)
	}
}

func TestMaintenanceResolveDuringWindowSentAtEnd(t *testing.T) {
	e := newEnv(t)
	e.endpoint("ep1", nil, nil)
	a := e.alerter("a")
	e.step(a, "ep1", 0, down, down)
	e.maintenance(model.Maintenance{ID: "m1", EndpointIDs: []string{"ep1"}, Start: win(2), End: win(8)})
	e.step(a, "ep1", 2, down, up, up) // resolves at window 4, inside maintenance
	if got := e.rcv.kinds(); !slices.Equal(got, []string{"open"}) {
		t.Fatalf("alerts %v, want the resolve held back during maintenance", got)
	}
	// No more verdicts (say the endpoint was paused): the sweep delivers it.
	e.clk.Set(win(8).Add(time.Second))
	if err := a.Sweep(e.ctx); err != nil {
		t.Fatal(err)
	}
	if got := e.rcv.kinds(); !slices.Equal(got, []string{"open", "resolve"}) {
		t.Fatalf("alerts %v, want the resolve at the window's end", got)
	}
}

func TestMaintenanceOpenedDuringWindowAlertsOnceAtEnd(t *testing.T) {
	e := newEnv(t)
	e.endpoint("ep1", nil, map[string]string{"team": "payments"})
	a := e.alerter("a")
	// Recurring: every hour at :00 for 5 minutes, by label selector.
	e.maintenance(model.Maintenance{ID: "nightly", Selector: map[string]string{"team": "payments"}, Cron: "0 * * * *", Duration: 5 * time.Minute})
	e.step(a, "ep1", 0, down, down, down) // handled at 12:01:10 .. 12:03:10
	if got := e.rcv.kinds(); len(got) != 0 {
		t.Fatalf("alerts %v during maintenance, want none", got)
	}
	e.step(a, "ep1", 3, down) // 12:04:10: still inside
	if got := e.rcv.kinds(); len(got) != 0 {
		t.Fatalf("alerts %v during maintenance, want none", got)
	}
	e.step(a, "ep1", 4, down, down, down) // 12:05:10 onwards: after the end
	if got := e.rcv.kinds(); !slices.Equal(got, []string{"open"}) {
		t.Fatalf("alerts %v, want exactly one open after the window", got)
	}
	if inc := e.incidents("ep1")[0]; inc.ID != msg.IncidentID("ep1", win(1)) {
		t.Fatalf("incident %s, want the one opened during maintenance", inc.ID)
	}
}

func TestMaintenanceOpenedAndResolvedInsideWindowNeverAlerts(t *testing.T) {
	e := newEnv(t)
	e.endpoint("ep1", nil, nil)
	a := e.alerter("a")
	e.maintenance(model.Maintenance{ID: "m1", EndpointIDs: []string{"ep1"}, Start: t0, End: win(10)})
	e.step(a, "ep1", 0, down, down, down, up, up, up)
	e.clk.Set(win(11))
	if err := a.Sweep(e.ctx); err != nil {
		t.Fatal(err)
	}
	e.step(a, "ep1", 11, up, up)
	if got := e.rcv.kinds(); len(got) != 0 {
		t.Fatalf("alerts %v, want none for an incident that began and ended in maintenance", got)
	}
	incs := e.incidents("ep1")
	if len(incs) != 1 || incs[0].State != model.IncidentResolved {
		t.Fatalf("incidents %+v, want one resolved (recorded, not alerted)", incs)
	}
	// Nothing is left pending for the sweep.
	if ids, err := e.st.PendingOutboxes(e.ctx); err != nil || len(ids) != 0 {
		t.Fatalf("pending outboxes %v %v, want none", ids, err)
	}
}
