package alerter

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/mcpmon/mcpmon/pkg/alert"
	"github.com/mcpmon/mcpmon/pkg/model"
)

// eventSink is a hand-written sink that carries change events: it records
// every event key it accepted and fails with the errors queued in fail.
type eventSink struct {
	name string
	mu   sync.Mutex
	got  []string // keys, in order
	fail []error
}

func (s *eventSink) Name() string                                     { return s.name }
func (s *eventSink) Notify(context.Context, alert.Notification) error { return nil }

func (s *eventSink) NotifyEvent(_ context.Context, n alert.EventNotification) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.fail) > 0 {
		err := s.fail[0]
		s.fail = s.fail[1:]
		return err
	}
	s.got = append(s.got, n.Key)
	return nil
}

func (s *eventSink) keys() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.got...)
}

func (e *env) changeEvent(ep, kind string) model.ChangeEvent {
	e.t.Helper()
	ev := model.ChangeEvent{EndpointID: ep, Kind: kind, Fingerprint: model.EventFingerprint(ep, kind, "old", "new"),
		ObservedAt: e.clk.Now(), Message: "tool catalog changed", Before: "old", After: "new"}
	added, err := e.st.AppendEvents(e.ctx, ev)
	if err != nil || len(added) != 1 {
		e.t.Fatalf("append event: %v %v", added, err)
	}
	return added[0]
}

func (e *env) pendingEvents() int {
	e.t.Helper()
	p, err := e.st.PendingEvents(e.ctx, 0)
	if err != nil {
		e.t.Fatal(err)
	}
	return len(p)
}

func testEventNotifiedOncePerOptedInSink(t *testing.T, e *env) {
	e.endpoint("ep", nil, nil)
	breaking := &eventSink{name: "breaking"}
	security := &eventSink{name: "security"}
	plain := &eventSink{name: "plain"} // carries events, opted into none
	sinks := []alert.Sink{
		alert.Subscribed(breaking, []string{alert.NotifyIncidents, model.EventCatalogBreaking}),
		alert.Subscribed(security, []string{model.EventCatalogSecurity}),
		plain,
	}
	a := e.alerter("a", func(o *Options) { o.Sinks = sinks })
	b := e.alerter("b", func(o *Options) { o.Sinks = sinks })
	ev := e.changeEvent("ep", model.EventCatalogBreaking)
	// Every sweep of two replicas, concurrently and again.
	var wg sync.WaitGroup
	for _, al := range []*Alerter{a, b, a, b} {
		wg.Go(func() {
			if err := al.NotifyEvents(e.ctx); err != nil && !errors.Is(err, ErrClaimHeld) {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if err := a.Sweep(e.ctx); err != nil {
		t.Fatal(err)
	}
	want := alert.EventKey("ep", model.EventCatalogBreaking, ev.Fingerprint) + ":breaking"
	if got := breaking.keys(); len(got) != 1 || got[0] != want {
		t.Fatalf("opted-in sink got %v, want exactly [%s]", got, want)
	}
	if got := append(security.keys(), plain.keys()...); len(got) != 0 {
		t.Fatalf("sinks not opted into catalog_breaking got %v", got)
	}
	if n := e.pendingEvents(); n != 0 {
		t.Fatalf("%d events still pending after delivery", n)
	}
}

func TestEventNotifiedOncePerOptedInSink(t *testing.T) {
	testEventNotifiedOncePerOptedInSink(t, newEnv(t))
}

func TestEventNotifiedOncePerOptedInSinkRedis(t *testing.T) {
	testEventNotifiedOncePerOptedInSink(t, newRedisEnv(t))
}

// TestEventCrashAtEveryStep: a replica killed at each step of an event's
// notification; another replica (after the dead one's lease) finishes it.
// The sink gets it once, except after a crash between its acceptance and
// the ledger mark — the alerter's one duplicate window, with the same key.
func TestEventCrashAtEveryStep(t *testing.T) {
	for _, store := range []struct {
		name string
		env  func(t *testing.T) *env
	}{{"bolt", newEnv}, {"redis", newRedisEnv}} {
		t.Run(store.name, func(t *testing.T) {
			for _, tt := range []struct {
				point string
				sends int
			}{
				{"event-claimed", 1},
				{"event-sent", 2}, // sink accepted, ledger not marked: THE duplicate window
				{"event-marked", 1},
			} {
				t.Run(tt.point, func(t *testing.T) { testEventCrashAt(t, store.env(t), tt.point, tt.sends) })
			}
		})
	}
}

func testEventCrashAt(t *testing.T, e *env, point string, sends int) {
	e.endpoint("ep", nil, nil)
	sink := &eventSink{name: "hook"}
	sinks := []alert.Sink{alert.Subscribed(sink, []string{model.EventCatalogSecurity})}
	dead := e.alerter("dead", func(o *Options) { o.Sinks = sinks })
	dead.hook = func(p string) error {
		if p == point {
			return fmt.Errorf("at %s: %w", p, errInjectedCrash)
		}
		return nil
	}
	e.changeEvent("ep", model.EventCatalogSecurity)
	if err := dead.NotifyEvents(e.ctx); !errors.Is(err, errInjectedCrash) {
		t.Fatalf("crash at %s: err = %v", point, err)
	}
	if n := e.pendingEvents(); n != 1 {
		t.Fatalf("after a crash at %s, %d events pending, want 1", point, n)
	}
	e.clk.Advance(DefaultLease + time.Second) // the dead replica's claim lapses
	live := e.alerter("live", func(o *Options) { o.Sinks = sinks })
	for range 3 {
		if err := live.NotifyEvents(e.ctx); err != nil {
			t.Fatal(err)
		}
	}
	got := sink.keys()
	if len(got) != sends {
		t.Fatalf("crash at %s: sink got %d deliveries %v, want %d", point, len(got), got, sends)
	}
	for _, k := range got {
		if k != got[0] {
			t.Fatalf("a repeat carried another key: %v", got)
		}
	}
	if n := e.pendingEvents(); n != 0 {
		t.Fatalf("crash at %s: %d events still pending", point, n)
	}
}

// TestEventFailuresRetriedOrGivenUp: a transient failure keeps the event
// pending for the next sweep, which delivers it once; a permanent one is
// given up for that sink (counted abandoned, never retried) without
// holding back the others.
func TestEventFailuresRetriedOrGivenUp(t *testing.T) {
	e := newEnv(t)
	e.endpoint("ep", nil, nil)
	flaky := &eventSink{name: "flaky", fail: []error{errors.New("503"), errors.New("503"), errors.New("503"), errors.New("503")}}
	refused := &eventSink{name: "refused", fail: []error{fmt.Errorf("400: %w", alert.ErrPermanent), fmt.Errorf("400: %w", alert.ErrPermanent)}}
	kinds := []string{model.EventVersion}
	m := NewMetrics(nil, nil)
	a := e.alerter("a", func(o *Options) {
		o.Sinks = []alert.Sink{alert.Subscribed(flaky, kinds), alert.Subscribed(refused, kinds)}
		o.Metrics = m
	})
	e.changeEvent("ep", model.EventVersion)
	e.endpoint("ep2", nil, nil)
	e.changeEvent("ep2", model.EventVersion)
	if err := a.NotifyEvents(e.ctx); err == nil {
		t.Fatal("a failing sink reported no error")
	}
	if n := e.pendingEvents(); n != 2 {
		t.Fatalf("%d pending after a transient failure, want 2", n)
	}
	if len(flaky.fail) != 0 || len(flaky.keys()) != 0 {
		t.Fatalf("the failing sink was called for the second event in the same run (%d failures left, %v)", len(flaky.fail), flaky.keys())
	}
	for range 2 {
		if err := a.NotifyEvents(e.ctx); err != nil {
			t.Fatal(err)
		}
	}
	if len(flaky.keys()) != 2 || len(refused.keys()) != 0 || e.pendingEvents() != 0 {
		t.Fatalf("flaky got %v, refused got %v, pending %d; want both events, none, none", flaky.keys(), refused.keys(), e.pendingEvents())
	}
	for _, c := range []struct {
		sink, outcome string
		want          float64
	}{{"flaky", OutcomeFailed, 1}, {"flaky", OutcomeSent, 2}, {"refused", OutcomeAbandoned, 2}, {"refused", OutcomeSent, 0}} {
		if got := testutil.ToFloat64(m.EventNotifications.WithLabelValues(c.sink, model.EventVersion, c.outcome)); got != c.want {
			t.Errorf("mcpmon_event_notifications_total{sink=%s,outcome=%s} = %v, want %v", c.sink, c.outcome, got, c.want)
		}
	}
}

// TestSinkWithoutIncidentsGetsNoIncidents: a sink whose notify list leaves
// incidents out is not sent the incident alerts.
func TestSinkWithoutIncidentsGetsNoIncidents(t *testing.T) {
	e := newEnv(t)
	e.endpoint("ep", nil, nil)
	a := e.alerter("a", func(o *Options) {
		o.Sinks = []alert.Sink{e.sink, alert.Subscribed(httpSink{name: "changes-only", url: e.rcv.srv.URL}, []string{model.EventCatalogBreaking})}
	})
	for i := range 2 {
		if err := a.process(e.ctx, verdict("ep", t0.Add(time.Duration(i)*time.Minute), down)); err != nil {
			t.Fatal(err)
		}
	}
	got := e.rcv.notifications()
	if len(got) != 1 || got[0].Kind != alert.KindOpen {
		t.Fatalf("receiver got %v, want one open (from hook only)", e.rcv.kinds())
	}
	if want := "alert-ep-" + got[0].IncidentID + ":open:hook"; got[0].Key != want {
		t.Fatalf("key %s, want %s", got[0].Key, want)
	}
}
