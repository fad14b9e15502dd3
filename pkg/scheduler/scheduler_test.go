package scheduler

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/schedule"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/mcpmon/mcpmon/pkg/msg"
	"github.com/mcpmon/mcpmon/pkg/queue"
	"github.com/mcpmon/mcpmon/pkg/store"
)

// recorder is a CommandSender that keeps what it was sent.
type recorder struct {
	mu   sync.Mutex
	sent []queue.SendInput
	err  error
}

func (r *recorder) Publish(_ context.Context, in queue.SendInput) (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err != nil {
		return "", r.err
	}
	r.sent = append(r.sent, in)
	return fmt.Sprintf("m%d", len(r.sent)), nil
}

// commands decodes what was sent, checking the envelope of each.
func (r *recorder) commands(t *testing.T) []msg.ProbeCommand {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []msg.ProbeCommand
	for _, in := range r.sent {
		var c msg.ProbeCommand
		if err := msg.Decode(in.Body, &c); err != nil {
			t.Fatalf("decode sent body %s: %v", in.Body, err)
		}
		if in.GroupID != c.EndpointID {
			t.Errorf("GroupID = %q, want endpoint ID %q", in.GroupID, c.EndpointID)
		}
		if in.DedupID != "" {
			t.Errorf("DedupID = %q, want empty (content-based dedup)", in.DedupID)
		}
		if want := msg.NewProbeCommand(c.EndpointID, c.Slot).Body(); string(in.Body) != string(want) {
			t.Errorf("body %s is not the deterministic encoding %s", in.Body, want)
		}
		out = append(out, c)
	}
	return out
}

func (r *recorder) slotsOf(t *testing.T, id string) []time.Time {
	var out []time.Time
	for _, c := range r.commands(t) {
		if c.EndpointID == id {
			out = append(out, c.Slot)
		}
	}
	return out
}

func ep(id, schedule string) model.Endpoint {
	return model.Endpoint{ID: id, Name: id, URL: "https://example.invalid/mcp", Schedule: schedule}
}

// start runs s in the bubble and returns a stop func that cancels it and
// checks Run's return value.
func start(t *testing.T, s *Scheduler) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	return func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run returned %v, want nil on cancel", err)
		}
	}
}

func TestRunEmitsEachSlot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &recorder{}
		s := New(rec, Options{})
		if err := s.Upsert(ep("a", "@every 10s")); err != nil {
			t.Fatal(err)
		}
		if err := s.Upsert(ep("b", "* * * * *")); err != nil {
			t.Fatal(err)
		}
		first, _ := s.Next("a")
		stop := start(t, s)
		defer stop()

		time.Sleep(time.Until(first) + 25*time.Second)
		synctest.Wait()

		got := rec.slotsOf(t, "a")
		want := []time.Time{first, first.Add(10 * time.Second), first.Add(20 * time.Second)}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("slots of a = %v, want %v", got, want)
		}
		// The minute cron fired once at most, and only on a minute boundary.
		for _, slot := range rec.slotsOf(t, "b") {
			if slot.Second() != 0 {
				t.Errorf("cron slot %v not on a minute boundary", slot)
			}
		}
	})
}

func TestUpsertReschedulesOnlyOnChange(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &recorder{}
		s := New(rec, Options{})
		_ = s.Upsert(ep("a", "@every 1h"))
		before, _ := s.Next("a")
		stop := start(t, s)
		defer stop()

		time.Sleep(time.Second)
		e := ep("a", "@every 1h")
		e.Name = "renamed"
		_ = s.Upsert(e) // same schedule: the slot is kept
		if got, _ := s.Next("a"); !got.Equal(before) {
			t.Fatalf("unchanged schedule moved next slot from %v to %v", before, got)
		}

		_ = s.Upsert(ep("a", "@every 5s")) // the loop is asleep for up to an hour; it must wake
		time.Sleep(11 * time.Second)
		synctest.Wait()
		if n := len(rec.slotsOf(t, "a")); n < 2 {
			t.Fatalf("after re-scheduling to @every 5s, %d commands in 11s; want ≥ 2", n)
		}
	})
}

func TestPausedAndRemovedEndpointsStop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &recorder{}
		s := New(rec, Options{})
		_ = s.Upsert(ep("a", "@every 5s"))
		_ = s.Upsert(ep("b", "@every 5s"))
		stop := start(t, s)
		defer stop()

		time.Sleep(6 * time.Second)
		synctest.Wait()
		na, nb := len(rec.slotsOf(t, "a")), len(rec.slotsOf(t, "b"))
		if na == 0 || nb == 0 {
			t.Fatalf("before pause: a=%d b=%d commands, want both > 0", na, nb)
		}
		p := ep("a", "@every 5s")
		p.Paused = true
		_ = s.Upsert(p)
		s.Remove("b")
		s.Remove("never-added")
		if s.Len() != 0 {
			t.Fatalf("Len = %d after pause and remove, want 0", s.Len())
		}
		time.Sleep(time.Minute)
		synctest.Wait()
		if a, b := len(rec.slotsOf(t, "a")), len(rec.slotsOf(t, "b")); a != na || b != nb {
			t.Fatalf("after pause/remove: a %d→%d, b %d→%d commands; want no more", na, a, nb, b)
		}
	})
}

func TestSync(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := New(&recorder{}, Options{})
		_ = s.Upsert(ep("keep", "@every 1m"))
		_ = s.Upsert(ep("gone", "@every 1m"))
		_ = s.Upsert(ep("change", "@every 1m"))
		keepNext, _ := s.Next("keep")
		time.Sleep(90 * time.Second) // no Run: slots are not consumed

		paused := ep("paused", "@every 1m")
		paused.Paused = true
		err := s.Sync(t.Context(), []model.Endpoint{
			ep("keep", "@every 1m"), ep("change", "@every 1h"), ep("new", "@every 1m"),
			ep("bad", "not a schedule"), paused,
		})
		if !errors.Is(err, schedule.ErrInvalidSchedule) || !strings.Contains(err.Error(), "bad") {
			t.Fatalf("Sync err = %v, want ErrInvalidSchedule naming endpoint bad", err)
		}
		for id, want := range map[string]bool{"keep": true, "change": true, "new": true, "gone": false, "bad": false, "paused": false} {
			if _, ok := s.Next(id); ok != want {
				t.Errorf("after Sync, %s scheduled = %v, want %v", id, ok, want)
			}
		}
		if got, _ := s.Next("keep"); !got.Equal(keepNext) {
			t.Errorf("unchanged endpoint's slot moved from %v to %v", keepNext, got)
		}
		if got, _ := s.Next("change"); !got.After(time.Now()) {
			t.Errorf("changed endpoint's next slot %v is not after now", got)
		}
	})
}

// After the loop falls behind (here: the whole scheduler was not run for an
// hour) only the latest missed slot is emitted, then the normal cadence resumes.
func TestMissedSlotsEmitOnlyTheLatest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &recorder{}
		s := New(rec, Options{})
		_ = s.Upsert(ep("every", "@every 10s"))
		_ = s.Upsert(ep("cron", "*/5 * * * *"))
		time.Sleep(time.Hour + 2*time.Second)
		now := time.Now()

		stop := start(t, s)
		defer stop()
		synctest.Wait()

		every := rec.slotsOf(t, "every")
		if len(every) != 1 {
			t.Fatalf("@every 10s after an hour behind: %d commands %v, want 1", len(every), every)
		}
		if age := now.Sub(every[0]); age < 0 || age >= 10*time.Second {
			t.Fatalf("emitted slot %v is not the latest missed one (now %v)", every[0], now)
		}
		cron := rec.slotsOf(t, "cron")
		if len(cron) != 1 || now.Sub(cron[0]) >= 5*time.Minute || cron[0].Minute()%5 != 0 {
			t.Fatalf("*/5 cron after an hour behind: %v, want only the latest 5-minute slot before %v", cron, now)
		}

		next, _ := s.Next("every")
		if next.Sub(every[0]) != 10*time.Second {
			t.Fatalf("next slot %v does not resume the cadence after %v", next, every[0])
		}
	})
}

func TestPublishFailureIsNotFatal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &recorder{err: errors.New("queue down")}
		reg := prometheus.NewRegistry()
		s := New(rec, Options{Metrics: NewMetrics(reg)})
		_ = s.Upsert(ep("a", "@every 5s"))
		stop := start(t, s)
		defer stop()
		time.Sleep(6 * time.Second)
		synctest.Wait()
		if got := testutil.ToFloat64(s.metrics.commands); got != 0 {
			t.Fatalf("commands_total = %v after failed publishes, want 0", got)
		}
		rec.mu.Lock()
		rec.err = nil
		rec.mu.Unlock()
		time.Sleep(5 * time.Second)
		synctest.Wait()
		if n := len(rec.slotsOf(t, "a")); n != 1 {
			t.Fatalf("after the queue recovered: %d commands, want 1 (the next slot)", n)
		}
	})
}

func TestMetrics(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reg := prometheus.NewRegistry()
		s := New(&recorder{}, Options{Metrics: NewMetrics(reg)})
		_ = s.Upsert(ep("a", "@every 5s"))
		_ = s.Upsert(ep("b", "@every 5s"))
		stop := start(t, s)
		defer stop()
		time.Sleep(10 * time.Second)
		synctest.Wait()
		s.Remove("b")

		if got := testutil.ToFloat64(s.metrics.endpoints); got != 1 {
			t.Errorf("mcpmon_scheduler_endpoints = %v, want 1", got)
		}
		if got := testutil.ToFloat64(s.metrics.commands); got != 4 {
			t.Errorf("mcpmon_scheduler_commands_total = %v, want 4", got)
		}
		n, err := testutil.GatherAndCount(reg, "mcpmon_scheduler_lag_seconds", "mcpmon_scheduler_endpoints", "mcpmon_scheduler_commands_total")
		if err != nil || n != 3 {
			t.Errorf("gathered %d scheduler metric families (err %v), want 3", n, err)
		}
	})
}

// flakyLister fails its first n lists with the store unavailable.
type flakyLister struct {
	mu    sync.Mutex
	fails int
	calls int
	eps   []model.Endpoint
}

func (l *flakyLister) ListEndpoints(context.Context) ([]model.Endpoint, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.calls++
	if l.calls <= l.fails {
		return nil, store.ErrUnavailable
	}
	return l.eps, nil
}

// TestSyncEveryRetriesSoonAfterAFailedList: a scheduler started while its
// store is unreachable loads its endpoints within seconds of the store
// returning, not a whole resync interval later.
func TestSyncEveryRetriesSoonAfterAFailedList(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := New(&recorder{}, Options{})
		src := &flakyLister{fails: 3, eps: []model.Endpoint{ep("a", "@every 1m")}}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error)
		go func() { done <- s.SyncEvery(ctx, src, time.Minute) }()
		// Retries after 1 s, 2 s and 4 s: the fourth list, 7 s in, succeeds.
		time.Sleep(7*time.Second - time.Millisecond)
		synctest.Wait()
		if _, ok := s.Next("a"); ok {
			t.Fatal("scheduled before the store answered")
		}
		time.Sleep(time.Millisecond)
		synctest.Wait()
		if _, ok := s.Next("a"); !ok {
			t.Fatal("endpoint not scheduled right after the store answered")
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	})
}

// steppedClock is the bubble's clock plus an offset the test moves: the
// host's wall clock stepped by NTP.
type steppedClock struct{ off atomic.Int64 }

func (c *steppedClock) Now() time.Time { return time.Now().Add(time.Duration(c.off.Load())) }

// TestClockSteppedBackKeepsProbing: the wall clock steps back an hour (NTP
// correcting a clock that ran ahead). Every endpoint's next slot is then
// an hour away by the clock; without noticing, the scheduler would wait
// that hour out with every endpoint unprobed. It reschedules from the
// stepped clock instead, and logs what happened.
func TestClockSteppedBackKeepsProbing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &recorder{}
		clk := &steppedClock{}
		var logs bytes.Buffer
		s := New(rec, Options{Clock: clk, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
		_ = s.Upsert(ep("every", "@every 10s"))
		stop := start(t, s)
		defer stop()
		time.Sleep(25 * time.Second)
		synctest.Wait()
		before := len(rec.slotsOf(t, "every"))

		clk.off.Add(int64(-time.Hour))
		stepped := clk.Now()
		time.Sleep(25 * time.Second)
		synctest.Wait()
		after := rec.slotsOf(t, "every")[before:]
		if len(after) < 2 {
			t.Fatalf("25 s after the clock stepped back an hour: %d commands, want 2 or more (probing goes on)", len(after))
		}
		for _, slot := range after {
			if slot.Before(stepped.Add(-10*time.Second)) || slot.After(clk.Now()) {
				t.Errorf("slot %v after the step: want one of the stepped clock's last 25 s (from %v)", slot, stepped)
			}
		}
		if !strings.Contains(logs.String(), "stepped back") {
			t.Errorf("no warning of the step in the log:\n%s", logs.String())
		}
		if n := strings.Count(logs.String(), "stepped back"); n != 1 {
			t.Errorf("%d warnings of one step, want 1:\n%s", n, logs.String())
		}
	})
}
