package alerter

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/mcpmon/mcpmon/alerter/notify"
	"github.com/mcpmon/mcpmon/pkg/alert"
	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/store"
)

// digestSink records the change events and digests it is handed.
type digestSink struct {
	name    string
	mu      sync.Mutex
	events  []string
	digests []alert.DigestNotification
}

func (s *digestSink) Name() string                                     { return s.name }
func (s *digestSink) Notify(context.Context, alert.Notification) error { return nil }

func (s *digestSink) NotifyEvent(_ context.Context, n alert.EventNotification) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.events = append(s.events, n.Key)
	return nil
}

func (s *digestSink) NotifyDigest(_ context.Context, n alert.DigestNotification) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.digests = append(s.digests, n)
	return nil
}

func (s *digestSink) got() (events []string, digests []alert.DigestNotification) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.events...), append([]alert.DigestNotification(nil), s.digests...)
}

// dailyAtNineBerlin is the sink taking info changes as a daily digest at
// 09:00 Europe/Berlin, and the rest of its notify list one by one.
func dailyAtNineBerlin(t *testing.T, s *digestSink) alert.Sink {
	t.Helper()
	rule := alert.DigestRule{Severities: []string{"info"}, Every: alert.DigestDaily, At: "09:00", TimeZone: "Europe/Berlin"}
	sched, err := rule.Schedule()
	if err != nil {
		t.Skip("no tzdata:", err)
	}
	return alert.Digested(alert.Subscribed(s, []string{model.EventCatalogInfo, model.EventCatalogBreaking}), s, rule, sched)
}

// event appends a change event of kind and severity, told apart by tag.
func (e *env) event(ep, kind, severity, tag string) {
	e.t.Helper()
	ev := model.ChangeEvent{EndpointID: ep, Kind: kind, Severity: severity, Fingerprint: model.EventFingerprint(ep, kind, tag),
		ObservedAt: e.clk.Now(), Message: "tool catalog changed: " + tag}
	if added, err := e.st.AppendEvents(e.ctx, ev); err != nil || len(added) != 1 {
		e.t.Fatalf("append event: %v %v", added, err)
	}
}

func (e *env) sweep(as ...*Alerter) {
	e.t.Helper()
	for _, a := range as {
		if err := a.Sweep(e.ctx); err != nil {
			e.t.Fatal(err)
		}
	}
}

// TestDigestOneMessageAtTheSetTimeAcrossARestart is the acceptance of
// digests: a day of low-severity changes, handled by one alerter and then
// by another over the same store (a restart), gives the sink one message
// at 09:00 Berlin listing all of them; the one breaking change of the day
// went out on its own; the empty day after sends nothing.
func TestDigestOneMessageAtTheSetTimeAcrossARestart(t *testing.T) {
	testDigestAcrossRestart(t, newEnv(t))
}

func TestDigestOneMessageAtTheSetTimeAcrossARestartRedis(t *testing.T) {
	testDigestAcrossRestart(t, newRedisEnv(t))
}

func testDigestAcrossRestart(t *testing.T, e *env) {
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Skip("no tzdata:", err)
	}
	e.endpoint("ep", nil, nil)
	sink := &digestSink{name: "hook"}
	sinks := func(o *Options) { o.Sinks = []alert.Sink{dailyAtNineBerlin(t, sink)} }
	start := time.Date(2026, 6, 10, 9, 30, 0, 0, berlin)
	first := e.alerter("first", sinks)
	var second *Alerter
	a := first
	for h := range 24 {
		e.clk.Set(start.Add(time.Duration(h) * time.Hour))
		if h == 12 {
			second = e.alerter("second", sinks) // the restart: a new process, the same store
			a = second
		}
		e.event("ep", model.EventCatalogInfo, "info", fmt.Sprint("added tool ", h))
		if h == 5 {
			e.event("ep", model.EventCatalogBreaking, "breaking", "removed search")
		}
		e.sweep(a)
		if n := e.pendingEvents(); n != 0 {
			t.Fatalf("hour %d: %d events pending: a digested event is settled", h, n)
		}
	}
	events, digests := sink.got()
	if len(events) != 1 || len(digests) != 0 {
		t.Fatalf("before 09:00: %d events one by one, %d digests; want the breaking change alone", len(events), len(digests))
	}
	nine := time.Date(2026, 6, 11, 9, 0, 0, 0, berlin)
	e.clk.Set(nine.Add(DigestGrace - time.Second))
	e.sweep(first, second)
	if _, digests := sink.got(); len(digests) != 0 {
		t.Fatalf("digest sent %s before the period's end and grace", nine.Add(DigestGrace).Sub(e.clk.Now()))
	}
	e.clk.Set(nine.Add(DigestGrace))
	e.sweep(second, first, second)
	_, digests = sink.got()
	if len(digests) != 1 {
		t.Fatalf("%d digests at 09:00, want one", len(digests))
	}
	d := digests[0]
	if want := "digest-hook-default-2026-06-10T07:00:00Z"; d.Key != want || d.Total != 24 || len(d.Events) != 24 || d.Scope != model.DefaultTenant {
		t.Fatalf("digest %s scope %s: %d of %d events; want %s with all 24", d.Key, d.Scope, len(d.Events), d.Total, want)
	}
	if !d.PeriodStart.Equal(start.Add(-30*time.Minute)) || !d.PeriodEnd.Equal(nine) || d.Events[0].Message != "tool catalog changed: added tool 0" {
		t.Fatalf("digest period [%s, %s), first event %+v", d.PeriodStart, d.PeriodEnd, d.Events[0])
	}
	// The next day has no changes: no digest, ever.
	e.clk.Set(nine.Add(48 * time.Hour))
	e.sweep(first, second)
	if _, digests := sink.got(); len(digests) != 1 {
		t.Fatalf("%d digests after two empty days, want still one", len(digests))
	}
}

// TestDigestMissedWhileDownIsSentOnTheNextStart: no alerter ran across the
// period's end; the first sweep after the start sends it, once, and the
// empty period after it sends nothing.
func TestDigestMissedWhileDownIsSentOnTheNextStart(t *testing.T) {
	e := newEnv(t)
	e.endpoint("ep", nil, nil)
	sink := &digestSink{name: "hook"}
	sinks := func(o *Options) { o.Sinks = []alert.Sink{dailyAtNineBerlin(t, sink)} }
	e.clk.Set(time.Date(2026, 6, 10, 10, 0, 0, 0, time.UTC))
	e.event("ep", model.EventCatalogInfo, "info", "added a")
	e.event("ep", model.EventCatalogInfo, "info", "added b")
	e.sweep(e.alerter("before", sinks))
	e.clk.Set(time.Date(2026, 6, 13, 12, 0, 0, 0, time.UTC)) // down for three days
	after := e.alerter("after", sinks)
	e.sweep(after, after)
	_, digests := sink.got()
	if len(digests) != 1 || digests[0].Total != 2 || digests[0].Key != "digest-hook-default-2026-06-10T07:00:00Z" {
		t.Fatalf("digests %+v, want the one of June 10 with two events", digests)
	}
}

// TestDigestListsAtMostMaxEvents: a period with more events than a
// message lists names the first ones and counts all.
func TestDigestListsAtMostMaxEvents(t *testing.T) {
	docs := map[string][]byte{}
	start := time.Date(2026, 6, 10, 7, 0, 0, 0, time.UTC)
	for i := range alert.MaxDigestEvents + 5 {
		docs[fmt.Sprint("hook|default|", i)] = []byte(fmt.Sprintf(`{"sink":"hook","scope":"default","every":"daily","periodStart":%q,"periodEnd":%q,"event":{"eventId":"%03d","observedAt":%q,"message":"m%d"}}`,
			start.Format(time.RFC3339), start.Add(24*time.Hour).Format(time.RFC3339), i, start.Add(time.Duration(i)*time.Minute).Format(time.RFC3339), i))
	}
	docs["broken"] = []byte("{")
	docs["next"] = []byte(fmt.Sprintf(`{"sink":"hook","scope":"default","every":"daily","periodStart":%q,"periodEnd":%q,"event":{}}`,
		start.Add(24*time.Hour).Format(time.RFC3339), start.Add(48*time.Hour).Format(time.RFC3339)))
	due, bad := dueDigests(docs, start.Add(24*time.Hour+DigestGrace))
	if len(due) != 1 || len(bad) != 1 || bad[0] != "broken" {
		t.Fatalf("due %d, bad %v: want the ended period only, and the broken entry apart", len(due), bad)
	}
	n := due[0].notification()
	if n.Total != alert.MaxDigestEvents+5 || len(n.Events) != alert.MaxDigestEvents || n.Events[0].Message != "m0" || n.Events[99].Message != "m99" {
		t.Fatalf("digest total %d, listed %d from %q: want the first %d, oldest first", n.Total, len(n.Events), n.Events[0].Message, alert.MaxDigestEvents)
	}
}

// TestDigestCrashAtEveryStep: a replica killed at each step of sending a
// digest; another replica finishes it, sending it once but in the one
// duplicate window. After a crash between the mark and the deletion the
// entries are not lost: they move into the period now open (left).
func TestDigestCrashAtEveryStep(t *testing.T) {
	for _, tt := range []struct {
		point string
		sends int
		left  int
	}{
		{"claimed", 1, 0},
		{"sent", 2, 0},
		{"marked", 1, 1},
	} {
		t.Run(tt.point, func(t *testing.T) {
			e := newEnv(t)
			e.endpoint("ep", nil, nil)
			sink := &digestSink{name: "hook"}
			sinks := func(o *Options) { o.Sinks = []alert.Sink{dailyAtNineBerlin(t, sink)} }
			e.clk.Set(time.Date(2026, 6, 10, 10, 0, 0, 0, time.UTC))
			e.event("ep", model.EventCatalogInfo, "info", "added a")
			e.sweep(e.alerter("setup", sinks))
			e.clk.Set(time.Date(2026, 6, 11, 8, 0, 0, 0, time.UTC))
			dead := e.alerter("dead", sinks)
			dead.hook = func(p string) error {
				if p == tt.point {
					return fmt.Errorf("at %s: %w", p, notify.ErrCrash)
				}
				return nil
			}
			if err := dead.Sweep(e.ctx); !errors.Is(err, notify.ErrCrash) {
				t.Fatalf("crash at %s: err = %v", tt.point, err)
			}
			e.clk.Advance(DefaultLease + time.Second)
			next := e.alerter("next", sinks)
			e.sweep(next, next, next)
			_, digests := sink.got()
			if len(digests) != tt.sends {
				t.Fatalf("crash at %s: %d digests, want %d", tt.point, len(digests), tt.sends)
			}
			for _, d := range digests {
				if d.Key != digests[0].Key || d.Total != 1 {
					t.Fatalf("digests %+v: a repeat carries the same key and events", digests)
				}
			}
			docs, err := e.st.ListObjects(e.ctx, store.KindDigestEntry)
			if err != nil || len(docs) != tt.left {
				t.Fatalf("crash at %s: %d digest entries left (%v), want %d", tt.point, len(docs), err, tt.left)
			}
			for id := range docs {
				if due, _ := dueDigests(docs, e.clk.Now().Add(24*time.Hour)); len(due) != 1 || due[0].start.Before(digests[0].PeriodEnd) {
					t.Fatalf("entry %s left in a period already sent", id)
				}
			}
		})
	}
}
