package alerter

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/mcpmon/mcpmon/alerter/notify"
	"github.com/mcpmon/mcpmon/pkg/alert"
	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/store"
)

// postUpdate writes what POST /v1/incidents/{id}/updates with notify
// writes (pkg/api/updates.go): the incident with the update appended and
// the update's notice on the tracker, in one SaveTracker.
func (e *env) postUpdate(incidentID string, status model.UpdateStatus, message string) {
	e.t.Helper()
	for range maxCASAttempts {
		inc, err := e.st.GetIncident(e.ctx, incidentID)
		if err != nil {
			e.t.Fatal(err)
		}
		next, err := inc.AddUpdate(model.IncidentUpdate{At: e.clk.Now(), Status: status, Message: message, Notify: true})
		if err != nil {
			e.t.Fatal(err)
		}
		tr, err := e.st.GetTracker(e.ctx, inc.EndpointID)
		if err != nil {
			e.t.Fatal(err)
		}
		tr.QueueUpdateNotice(inc.ID, len(next.Updates))
		err = e.st.SaveTracker(e.ctx, tr, next)
		if errors.Is(err, store.ErrConflict) {
			continue
		}
		if err != nil {
			e.t.Fatal(err)
		}
		return
	}
	e.t.Fatal("tracker kept changing")
}

// updates are the update notifications the receiver got.
func (r *receiver) updates() []alert.Notification {
	return slices.DeleteFunc(r.notifications(), func(n alert.Notification) bool { return n.Kind != alert.KindUpdate })
}

// openIncident opens an incident on ep1 and delivers its open.
func (e *env) openIncident(a *Alerter) model.Incident {
	e.t.Helper()
	e.endpoint("ep1", nil, nil)
	e.step(a, "ep1", 0, down, down)
	incs := e.incidents("ep1")
	if len(incs) != 1 || !slices.Equal(e.rcv.kinds(), []string{"open"}) {
		e.t.Fatalf("setup: incidents %d, alerts %v", len(incs), e.rcv.kinds())
	}
	return incs[0]
}

func TestUpdateWithNotifyReachesTheSinkOnce(t *testing.T) {
	e := newEnv(t)
	a := e.alerter("a")
	inc := e.openIncident(a)
	e.postUpdate(inc.ID, model.UpdateIdentified, "A bad deploy; rolling back.")
	if ids, _ := e.st.PendingOutboxes(e.ctx); !slices.Equal(ids, []string{"ep1"}) {
		t.Fatalf("pending outboxes %v: the update's write must list the outbox", ids)
	}
	for range 3 {
		if err := a.Sweep(e.ctx); err != nil {
			t.Fatal(err)
		}
	}
	got := e.rcv.updates()
	if len(got) != 1 {
		t.Fatalf("update notifications %v, want one", e.rcv.kinds())
	}
	n := got[0]
	if n.Update == nil || n.Update.Status != "identified" || n.Update.Message != "A bad deploy; rolling back." || n.Update.Seq != 1 || n.Sequence != 1 {
		t.Fatalf("update notification %+v / %+v", n, n.Update)
	}
	if want := "alert-ep1-" + inc.ID + ":update-1:hook"; n.Key != want || n.IncidentID != inc.ID {
		t.Fatalf("key %q, want %q", n.Key, want)
	}
	if ids, _ := e.st.PendingOutboxes(e.ctx); len(ids) != 0 {
		t.Fatalf("pending outboxes %v after the update went out", ids)
	}
	// The delivery record names the update.
	ds, err := e.st.Deliveries(e.ctx, inc.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(ds, func(d model.Delivery) bool {
		return d.Kind == "update-1" && d.Outcome == model.DeliveryDelivered
	}) {
		t.Fatalf("deliveries %+v: want update-1 delivered", ds)
	}
	// A second update is the second notification; the first is not sent again.
	e.postUpdate(inc.ID, model.UpdateMonitoring, "Rolled back; watching.")
	if err := a.Sweep(e.ctx); err != nil {
		t.Fatal(err)
	}
	if got := e.rcv.updates(); len(got) != 2 || got[1].Update.Seq != 2 || got[1].Update.Status != "monitoring" {
		t.Fatalf("after the second update: %v", e.rcv.kinds())
	}
	// Updates leave the reminder clock alone and the incident open.
	if incs := e.incidents("ep1"); incs[0].State != model.IncidentOpen {
		t.Fatalf("incident %s after updates", incs[0].State)
	}
}

// TestUpdateGoesOutDuringMaintenance: a window silences the outage alerts
// (the open waits for its end), not the owner's update.
func TestUpdateGoesOutDuringMaintenance(t *testing.T) {
	e := newEnv(t)
	e.endpoint("ep1", nil, nil)
	e.maintenance(model.Maintenance{ID: "m1", EndpointIDs: []string{"ep1"}, Start: win(0), End: win(30)})
	a := e.alerter("a")
	e.step(a, "ep1", 0, down, down)
	if got := e.rcv.kinds(); len(got) != 0 {
		t.Fatalf("alerts %v during maintenance, want none", got)
	}
	inc := e.incidents("ep1")[0]
	e.postUpdate(inc.ID, model.UpdateInvestigating, "Planned migration running long.")
	if err := a.Sweep(e.ctx); err != nil {
		t.Fatal(err)
	}
	if got := e.rcv.kinds(); !slices.Equal(got, []string{"update-1"}) {
		t.Fatalf("alerts %v, want the update alone (the open waits for the window's end)", got)
	}
	e.clk.Set(win(31))
	if err := a.Sweep(e.ctx); err != nil {
		t.Fatal(err)
	}
	if got := e.rcv.kinds(); !slices.Equal(got, []string{"update-1", "open"}) {
		t.Fatalf("after the window: %v, want the open once more", got)
	}
}

// warningOnly is a sink routed to warning (regional) incidents only.
type warningOnly struct{ httpSink }

func (warningOnly) TakesSeverity(sev string) bool { return sev == model.SeverityWarning }

// TestUpdateFollowsSeverityRouting: a sink that does not take the
// incident's severity does not get its updates either.
func TestUpdateFollowsSeverityRouting(t *testing.T) {
	e := newEnv(t)
	chat := newReceiver(t)
	a := e.alerter("a", func(o *Options) {
		o.Sinks = []alert.Sink{e.sink, warningOnly{httpSink{name: "chat", url: chat.srv.URL}}}
	})
	inc := e.openIncident(a)
	e.postUpdate(inc.ID, model.UpdateIdentified, "Found it.")
	if err := a.Sweep(e.ctx); err != nil {
		t.Fatal(err)
	}
	if len(e.rcv.updates()) != 1 || len(chat.notifications()) != 0 {
		t.Fatalf("hook %v, chat %v: the update goes where the critical open went", e.rcv.kinds(), chat.kinds())
	}
}

// testUpdateCrashAt: a replica killed at point of an update notification;
// another replica (after the dead one's lease) finishes it.
func testUpdateCrashAt(t *testing.T, e *env, point string, sends int) {
	live := e.alerter("setup")
	inc := e.openIncident(live)
	e.postUpdate(inc.ID, model.UpdateIdentified, "Found it.")
	dead := e.alerter("dead")
	dead.hook = func(p string) error {
		if p == point {
			return fmt.Errorf("at %s: %w", p, notify.ErrCrash)
		}
		return nil
	}
	if err := dead.Sweep(e.ctx); !errors.Is(err, notify.ErrCrash) {
		t.Fatalf("crash at %s: err = %v", point, err)
	}
	before := map[string]int{"adopted": 0, "claimed": 0, "sent": 1, "marked": 1, "settled": 1}[point]
	if got := len(e.rcv.updates()); got != before {
		t.Fatalf("before takeover: %d updates, want %d", got, before)
	}
	e.clk.Advance(DefaultLease + time.Second)
	next := e.alerter("next")
	for range 3 {
		if err := next.Sweep(e.ctx); err != nil {
			t.Fatal(err)
		}
	}
	got := e.rcv.updates()
	if len(got) != sends {
		t.Fatalf("crash at %s: %d update notifications, want %d", point, len(got), sends)
	}
	for _, n := range got {
		if n.Key != got[0].Key {
			t.Fatalf("a repeat carried another key: %v", got)
		}
	}
	if ids, _ := e.st.PendingOutboxes(e.ctx); len(ids) != 0 {
		t.Fatalf("crash at %s: outboxes %v still pending", point, ids)
	}
}

func TestGateSendsUpdatesWhateverTheWindow(t *testing.T) {
	inc := model.Incident{State: model.IncidentResolved, Updates: []model.IncidentUpdate{{Status: model.UpdateResolved, Message: "post-mortem"}}}
	for _, c := range []struct {
		name   string
		p      pending
		active bool
		want   action
	}{
		{"in a window", pending{Kind: "update-1", Seq: 1}, true, actSend},
		{"resolved incident", pending{Kind: "update-1", Seq: 1}, false, actSend},
		{"no such update", pending{Kind: "update-2", Seq: 2}, false, actDrop},
		{"a reminder in a window is still dropped", pending{Kind: "reminder-1", Seq: 1}, true, actDrop},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got, why := gate(c.p, inc, incidentData{}, c.active, false, false); got != c.want {
				t.Fatalf("gate = %v (%s), want %v", got, why, c.want)
			}
		})
	}
}
