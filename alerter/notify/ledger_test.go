package notify

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/mcpmon/mcpmon/pkg/alert"
	"github.com/mcpmon/mcpmon/pkg/clock"
	"github.com/mcpmon/mcpmon/pkg/store"
)

// fakeLedger is a one-owner ledger that logs the writes it is asked for
// and fails Complete while completeErr is set.
type fakeLedger struct {
	done, held  map[string]bool
	completeErr error
	calls       []string
}

func newFakeLedger() *fakeLedger {
	return &fakeLedger{done: map[string]bool{}, held: map[string]bool{}}
}

func (l *fakeLedger) Claim(_ context.Context, key, _ string, _ time.Duration) (store.ClaimState, error) {
	l.calls = append(l.calls, "claim")
	switch {
	case l.done[key]:
		return store.ClaimDone, nil
	case l.held[key]:
		return store.ClaimHeld, nil
	}
	return store.ClaimAcquired, nil
}

func (l *fakeLedger) Complete(_ context.Context, key, _ string) error {
	l.calls = append(l.calls, "complete")
	if l.completeErr != nil {
		return l.completeErr
	}
	l.done[key] = true
	return nil
}

func (l *fakeLedger) Release(context.Context, string, string) error {
	l.calls = append(l.calls, "release")
	return nil
}

// scriptedSink answers its calls with errs in order, then accepts.
type scriptedSink struct {
	errs  []error
	calls int
}

func (s *scriptedSink) Name() string { return "hook" }

func (s *scriptedSink) Notify(context.Context, alert.Notification) error {
	s.calls++
	if len(s.errs) > 0 {
		err := s.errs[0]
		s.errs = s.errs[1:]
		return err
	}
	return nil
}

func testPipeline(l Ledger, clk clock.Clock, r Redelivery) *Pipeline {
	return New(Config{Ledger: l, Owner: "a", Lease: time.Minute, Attempts: 1, Budget: time.Second,
		BackoffInitial: time.Millisecond, BackoffMax: time.Millisecond, SendTimeout: time.Second,
		Redelivery: r, Jitter: func() float64 { return 0 }, Clock: clk})
}

// TestLedgerStage: what one dispatch does to the ledger and the sink, for
// incidents and change events alike (they share this stage).
func TestLedgerStage(t *testing.T) {
	permanent := fmt.Errorf("HTTP 400: %w", alert.ErrPermanent)
	for _, c := range []struct {
		name       string
		done, held bool
		sinkErr    error
		retry      RetryState // the state earlier dispatches left
		wantCalls  []string
		wantSends  int
		wantOut    string
		wantGaveUp bool
		wantErr    error
	}{
		{name: "sent and marked", wantCalls: []string{"claim", "complete"}, wantSends: 1, wantOut: OutcomeSent},
		{name: "already done", done: true, wantCalls: []string{"claim"}, wantOut: OutcomeDuplicate},
		{name: "held elsewhere", held: true, wantCalls: []string{"claim"}, wantErr: ErrClaimHeld},
		{name: "transient failure releases", sinkErr: errors.New("HTTP 503"), wantCalls: []string{"claim", "release"}, wantSends: 1, wantErr: ErrDelivery},
		{name: "permanent failure is given up and marked done", sinkErr: permanent,
			wantCalls: []string{"claim", "complete"}, wantSends: 1, wantOut: OutcomeAbandoned, wantGaveUp: true},
		{name: "failing past the give-up age is given up and marked done", sinkErr: errors.New("HTTP 503"),
			retry:     RetryState{FirstFailedAt: t0.Add(-25 * time.Hour), Failures: 30},
			wantCalls: []string{"claim", "complete"}, wantSends: 1, wantOut: OutcomeAbandoned, wantGaveUp: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			l := newFakeLedger()
			l.done["k"], l.held["k"] = c.done, c.held
			sink := &scriptedSink{}
			if c.sinkErr != nil {
				sink.errs = []error{c.sinkErr}
			}
			d := &Delivery{Notification: alert.Notification{Key: "k"}, Sink: sink, Retry: c.retry}
			testPipeline(l, clock.NewFake(t0), NewRedelivery(DefaultGiveUpAfter)).Deliver(t.Context(), d)
			if !slices.Equal(l.calls, c.wantCalls) || sink.calls != c.wantSends {
				t.Fatalf("ledger calls %v, sends %d; want %v, %d", l.calls, sink.calls, c.wantCalls, c.wantSends)
			}
			if d.Outcome != c.wantOut || d.GaveUp != c.wantGaveUp {
				t.Fatalf("outcome %q gaveUp %v, want %q %v", d.Outcome, d.GaveUp, c.wantOut, c.wantGaveUp)
			}
			if (c.wantErr == nil) != (d.Err == nil) || (c.wantErr != nil && !errors.Is(d.Err, c.wantErr)) {
				t.Fatalf("err %v, want %v", d.Err, c.wantErr)
			}
		})
	}
}

// TestTransientFailureBacksOff: a failure that called the sink is folded
// into the delivery's redelivery state, which the caller keeps.
func TestTransientFailureBacksOff(t *testing.T) {
	clk := clock.NewFake(t0)
	d := &Delivery{Notification: alert.Notification{Key: "k"}, Sink: &scriptedSink{errs: []error{errors.New("HTTP 503")}}}
	testPipeline(newFakeLedger(), clk, NewRedelivery(DefaultGiveUpAfter)).Deliver(t.Context(), d)
	if d.Retry.Failures != 1 || !d.Retry.FirstFailedAt.Equal(t0) || !d.Retry.NextAt.After(t0) || d.GaveUp {
		t.Fatalf("retry state %+v gaveUp %v, want one failure since t0 and a wait", d.Retry, d.GaveUp)
	}
	// A change event's age starts at its origin, not at this dispatch.
	origin := t0.Add(-time.Hour)
	d = &Delivery{Notification: alert.Notification{Key: "k2"}, Sink: &scriptedSink{errs: []error{errors.New("HTTP 503")}}, Origin: origin}
	testPipeline(newFakeLedger(), clk, NewRedelivery(DefaultGiveUpAfter)).Deliver(t.Context(), d)
	if !d.Retry.FirstFailedAt.Equal(origin) {
		t.Fatalf("FirstFailedAt %s, want the origin %s", d.Retry.FirstFailedAt, origin)
	}
}

// TestSentButUnmarkedIsMarkedNotResent: the store fails the mark right
// after the sink accepted; the next claim of the key in this process marks
// it instead of sending it again.
func TestSentButUnmarkedIsMarkedNotResent(t *testing.T) {
	l := newFakeLedger()
	l.completeErr = fmt.Errorf("mark: %w", store.ErrUnavailable)
	p := testPipeline(l, clock.NewFake(t0), NewRedelivery(DefaultGiveUpAfter))
	sink := &scriptedSink{}
	d := &Delivery{Notification: alert.Notification{Key: "k"}, Sink: sink}
	p.Deliver(t.Context(), d)
	if !errors.Is(d.Err, store.ErrUnavailable) || d.DeliveredAt.IsZero() {
		t.Fatalf("err %v delivered %v, want delivered and the mark's outage reported", d.Err, d.DeliveredAt)
	}
	l.completeErr = nil
	d = &Delivery{Notification: alert.Notification{Key: "k"}, Sink: sink}
	p.Deliver(t.Context(), d)
	if d.Err != nil || d.Outcome != OutcomeDuplicate || sink.calls != 1 || !l.done["k"] {
		t.Fatalf("after the outage: err %v outcome %q, %d sends, done %v; want marked, not resent", d.Err, d.Outcome, sink.calls, l.done["k"])
	}
}

// TestCrashReleasesNothing: a crash injected after the claim leaves the
// claim to lapse with its lease, as a killed process would.
func TestCrashReleasesNothing(t *testing.T) {
	l := newFakeLedger()
	p := New(Config{Ledger: l, Owner: "a", Lease: time.Minute, Attempts: 1, Budget: time.Second, SendTimeout: time.Second,
		Clock: clock.NewFake(t0), Hook: func(point string) error {
			if point == "claimed" {
				return ErrCrash
			}
			return nil
		}})
	sink := &scriptedSink{}
	d := &Delivery{Notification: alert.Notification{Key: "k"}, Sink: sink}
	p.Deliver(t.Context(), d)
	if !errors.Is(d.Err, ErrCrash) || !slices.Equal(l.calls, []string{"claim"}) || sink.calls != 0 {
		t.Fatalf("err %v, ledger calls %v, sends %d; want the crash and nothing after the claim", d.Err, l.calls, sink.calls)
	}
}
