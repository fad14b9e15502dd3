package alerter

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/mcpmon/mcpmon/alerter/notify"
	"github.com/mcpmon/mcpmon/pkg/alert"
	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/store"
)

// eventSink is a hand-written sink that carries change events: it records
// every event key it accepted and fails with the errors queued in fail.
type eventSink struct {
	name string
	mu   sync.Mutex
	got  []string // keys, in order
	ns   []alert.EventNotification
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
	s.ns = append(s.ns, n)
	return nil
}

func (s *eventSink) notifications() []alert.EventNotification {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]alert.EventNotification(nil), s.ns...)
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
			if err := al.NotifyEvents(e.ctx); err != nil && !errors.Is(err, notify.ErrClaimHeld) {
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

// testFlappingEndpointNotifiesOnce: a server that changes a tool
// description and its version at every probe (1 s), with the event loop
// running every 5 s, notifies a sink opted into catalog_security of the
// changes within the endpoint's event budget and then once, by the
// flapping marker, for the rest of the period — not once per change.
func testFlappingEndpointNotifiesOnce(t *testing.T, e *env) {
	e.endpoint("ep", nil, nil)
	security := &eventSink{name: "security"}
	a := e.alerter("a", func(o *Options) {
		o.Sinks = []alert.Sink{alert.Subscribed(security, []string{model.EventCatalogSecurity})}
	})
	const probes = 600
	for i := range probes {
		at := e.clk.Now()
		v := fmt.Sprint(i)
		_, err := e.st.AppendEvents(e.ctx,
			model.ChangeEvent{EndpointID: "ep", Kind: model.EventCatalogSecurity, Fingerprint: model.EventFingerprint("ep", model.EventCatalogSecurity, v),
				ObservedAt: at, Message: "tool description changed: search", Before: v, After: v + "'"},
			model.ChangeEvent{EndpointID: "ep", Kind: model.EventVersion, Fingerprint: model.EventFingerprint("ep", model.EventVersion, v),
				ObservedAt: at, Message: "server version changed", Before: v, After: v + "'"})
		if err != nil {
			t.Fatal(err)
		}
		if i%5 == 4 {
			if err := a.NotifyEvents(e.ctx); err != nil {
				t.Fatal(err)
			}
		}
		e.clk.Advance(time.Second)
	}
	if err := a.Sweep(e.ctx); err != nil {
		t.Fatal(err)
	}
	var flapping []alert.EventNotification
	ns := security.notifications()
	for _, n := range ns {
		if n.Kind != model.EventCatalogSecurity {
			t.Fatalf("a sink opted into catalog_security got %s", n.Kind)
		}
		if n.Suppressed != nil {
			flapping = append(flapping, n)
		}
	}
	// The budget's events are half catalog_security, half version.
	if len(ns) != store.EventsPerHour/2+1 || len(flapping) != 1 {
		t.Fatalf("%d changes made %d notifications (%d flapping), want %d and one flapping", 2*probes, len(ns), len(flapping), store.EventsPerHour/2+1)
	}
	if n := flapping[0]; !strings.Contains(n.Message, "flapping") || n.Suppressed.Count < 1 {
		t.Fatalf("flapping notification %+v", n)
	}
	if n := e.pendingEvents(); n != 0 {
		t.Fatalf("%d events still pending", n)
	}
}

func TestFlappingEndpointNotifiesOnce(t *testing.T) {
	testFlappingEndpointNotifiesOnce(t, newEnv(t))
}

func TestFlappingEndpointNotifiesOnceRedis(t *testing.T) {
	testFlappingEndpointNotifiesOnce(t, newRedisEnv(t))
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
	}{{"flaky", notify.OutcomeFailed, 1}, {"flaky", notify.OutcomeSent, 2}, {"refused", notify.OutcomeAbandoned, 2}, {"refused", notify.OutcomeSent, 0}} {
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
