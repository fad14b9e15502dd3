package alerter

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/mcpmon/mcpmon/alerter/notify"
	"github.com/mcpmon/mcpmon/pkg/alert"
	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/msg"
	"github.com/mcpmon/mcpmon/pkg/store"
)

func win(i int) time.Time { return t0.Add(time.Duration(i) * time.Minute) }

// states publishes one verdict per window starting at window `from`.
func (e *env) states(ep string, from int, ss ...msg.State) {
	for i, s := range ss {
		e.publish(verdict(ep, win(from+i), s))
	}
}

const (
	up   = msg.StateUp
	down = msg.StateDown
)

func TestSteadyOutageOpensOnceResolvesOnce(t *testing.T) {
	e := newEnv(t)
	e.endpoint("ep1", nil, nil)
	a := e.alerter("a")

	e.states("ep1", 0, up, down)
	if errs := e.pump(a.Handle); errs != nil {
		t.Fatal(errs)
	}
	if got := e.rcv.kinds(); len(got) != 0 {
		t.Fatalf("after one down window: alerts %v, want none", got)
	}
	e.states("ep1", 2, down, down, down, up)
	e.pump(a.Handle)
	if got := e.rcv.kinds(); !slices.Equal(got, []string{"open"}) {
		t.Fatalf("alerts %v, want [open]", got)
	}
	e.states("ep1", 6, up, up, up)
	e.pump(a.Handle)
	if got := e.rcv.kinds(); !slices.Equal(got, []string{"open", "resolve"}) {
		t.Fatalf("alerts %v, want [open resolve]", got)
	}
	incs := e.incidents("ep1")
	if len(incs) != 1 {
		t.Fatalf("%d incidents, want 1", len(incs))
	}
	inc := incs[0]
	if inc.ID != msg.IncidentID("ep1", win(2)) || inc.State != model.IncidentResolved || !inc.FirstFailure.Equal(win(1)) {
		t.Fatalf("incident %+v: want ID opened at window 2, first failure window 1, resolved", inc)
	}
	if inc.ResolvedWindow == nil || !inc.ResolvedWindow.Equal(win(6)) || len(inc.Transitions) != 2 {
		t.Fatalf("incident resolved at %v with transitions %+v, want window 6 and two transitions", inc.ResolvedWindow, inc.Transitions)
	}
	n := e.rcv.notifications()[0]
	if n.Key != msg.LedgerKey("ep1", inc.ID, "open", "hook") || n.IncidentID != inc.ID || n.EndpointURL != "https://ep1.example/mcp?token=<redacted>" || n.Class != "refused" {
		t.Fatalf("open notification %+v: wrong key, incident, class or unredacted URL", n)
	}
}

func TestFlappingOneIncidentOneAlert(t *testing.T) {
	e := newEnv(t)
	e.endpoint("ep1", nil, nil)
	a := e.alerter("a")
	for i := range 20 {
		s := up
		if i%2 == 0 {
			s = down
		}
		e.states("ep1", i, s)
	}
	if errs := e.pump(a.Handle); errs != nil {
		t.Fatal(errs)
	}
	if got := e.rcv.kinds(); !slices.Equal(got, []string{"open"}) {
		t.Fatalf("alerts %v, want exactly one open", got)
	}
	if incs := e.incidents("ep1"); len(incs) != 1 || incs[0].State != model.IncidentOpen {
		t.Fatalf("incidents %+v, want one still open", incs)
	}
}

func TestStaleAndOutOfOrderVerdictsNeverFlip(t *testing.T) {
	e := newEnv(t)
	e.endpoint("ep1", nil, nil)
	a := e.alerter("a")
	e.states("ep1", 0, down, down)
	e.pump(a.Handle)
	// Old ups arriving late (a DLQ replay, another aggregator) change nothing.
	e.states("ep1", -5, up, up, up)
	e.pump(a.Handle)
	if incs := e.incidents("ep1"); len(incs) != 1 || incs[0].State != model.IncidentOpen {
		t.Fatalf("incidents %+v, want one still open", incs)
	}
	if got := e.rcv.kinds(); !slices.Equal(got, []string{"open"}) {
		t.Fatalf("alerts %v, want [open]", got)
	}
}

func TestDegradedAndRegionalNeitherOpenNorResolve(t *testing.T) {
	e := newEnv(t)
	e.endpoint("ep1", nil, nil)
	a := e.alerter("a")
	e.states("ep1", 0, msg.StateDegraded, msg.StateRegional, msg.StateDegraded, msg.StateRegional)
	e.pump(a.Handle)
	if n := len(e.incidents("ep1")); n != 0 {
		t.Fatalf("%d incidents from degraded/regional, want 0", n)
	}
	e.states("ep1", 4, down, down, up, msg.StateDegraded, up, msg.StateRegional, up)
	e.pump(a.Handle)
	if incs := e.incidents("ep1"); len(incs) != 1 || incs[0].State != model.IncidentOpen {
		t.Fatalf("incidents %+v: degraded/regional must break the run of ups", incs)
	}
	e.states("ep1", 11, up)
	e.pump(a.Handle)
	if got := e.rcv.kinds(); !slices.Equal(got, []string{"open", "resolve"}) {
		t.Fatalf("alerts %v, want [open resolve]", got)
	}
}

// TestSinkFailurePastBudgetLeavesNotification: the verdict is consumed (its
// state change is saved), the notification stays in the outbox with its
// claim released, and the sweep delivers it once the sink is back.
func TestSinkFailurePastBudgetLeavesNotification(t *testing.T) {
	e := newEnv(t)
	e.endpoint("ep1", nil, nil)
	a := e.alerter("a", func(o *Options) { o.RetryAttempts = 3 })
	e.rcv.failNext(500, 500, 500)
	e.states("ep1", 0, down, down)
	if errs := e.pump(a.Handle); errs != nil {
		t.Fatalf("handler errors %v, want none: the outbox keeps the notification", errs)
	}
	if hits := e.rcv.hits; hits != 3 {
		t.Fatalf("sink called %d times, want 3 (the retry budget)", hits)
	}
	// The claim was released: another replica can take it at once.
	inc := e.incidents("ep1")[0]
	if st, err := e.st.Claim(e.ctx, msg.LedgerKey("ep1", inc.ID, "open", "hook"), "probe-owner", time.Minute); err != nil || st != store.ClaimAcquired {
		t.Fatalf("claim after failure = %v %v, want acquired", st, err)
	}
	_ = e.st.Release(e.ctx, msg.LedgerKey("ep1", inc.ID, "open", "hook"), "probe-owner")

	if err := a.Sweep(e.ctx); err != nil {
		t.Fatal(err)
	}
	if got := e.rcv.kinds(); !slices.Equal(got, []string{"open"}) {
		t.Fatalf("alerts %v, want one open after the sink recovered", got)
	}
}

// TestPermanentFailureIsNotRetried: a sink that rejects a notification
// (HTTP 400) is called once for it: not retried by the drain, and not by a
// later sweep either — the notification leaves the outbox, the failure
// stays on the incident's record.
func TestPermanentFailureIsNotRetried(t *testing.T) {
	e := newEnv(t)
	e.endpoint("ep1", nil, nil)
	a := e.alerter("a")
	e.rcv.failNext(400)
	e.states("ep1", 0, down, down)
	if errs := e.pump(a.Handle); errs != nil {
		t.Fatalf("handler errors %v, want none", errs)
	}
	for range 3 {
		if err := a.Sweep(e.ctx); err != nil {
			t.Fatal(err)
		}
	}
	tr, _ := e.st.GetTracker(e.ctx, "ep1")
	if d, _ := decodeData[trackerData](tr.Data, ""); len(d.Outbox) != 0 || tr.Pending != 0 {
		t.Fatalf("outbox %+v (pending %d), want it empty: a permanent failure is given up", d.Outbox, tr.Pending)
	}
	if e.rcv.hits != 1 {
		t.Fatalf("sink called %d times, want 1: a permanent failure is not retried", e.rcv.hits)
	}
	if d := e.delivery(e.incidents("ep1")[0].ID); d.Outcome != model.DeliveryGaveUp || !strings.Contains(d.LastError, "given up") || !strings.Contains(d.LastError, alert.ErrPermanent.Error()) {
		t.Fatalf("record %+v, want failed, given up, with the reason", d)
	}
}

func TestRetryAfterHonoured(t *testing.T) {
	e := newEnv(t)
	e.endpoint("ep1", nil, nil)
	a := e.alerter("a")
	var waits []time.Duration
	a.sleep = func(_ context.Context, d time.Duration) error { waits = append(waits, d); e.clk.Advance(d); return nil }
	e.rcv.failNext(http.StatusTooManyRequests)
	e.states("ep1", 0, down, down)
	if errs := e.pump(a.Handle); errs != nil {
		t.Fatal(errs)
	}
	if !slices.Equal(waits, []time.Duration{3 * time.Second}) {
		t.Fatalf("waits %v, want [3s] from Retry-After", waits)
	}
	if got := e.rcv.kinds(); !slices.Equal(got, []string{"open"}) {
		t.Fatalf("alerts %v, want [open]", got)
	}
}

func TestReminders(t *testing.T) {
	e := newEnv(t)
	e.endpoint("ep1", &model.Rules{RepeatInterval: 5 * time.Minute}, nil)
	a := e.alerter("a")
	// One down verdict per minute, the clock following the windows.
	for i := range 12 {
		e.clk.Set(win(i).Add(70 * time.Second))
		e.states("ep1", i, down)
		if errs := e.pump(a.Handle); errs != nil {
			t.Fatal(errs)
		}
	}
	if got := e.rcv.kinds(); !slices.Equal(got, []string{"open", "reminder-1", "reminder-2"}) {
		t.Fatalf("alerts %v, want open and two reminders", got)
	}
	n := e.rcv.notifications()[1]
	if n.Key != msg.LedgerKey("ep1", n.IncidentID, "reminder-1", "hook") || n.Kind != alert.KindReminder {
		t.Fatalf("reminder %+v: want its own ledger key", n)
	}
	// Acknowledged: no more reminders.
	inc := e.incidents("ep1")[0]
	now := e.clk.Now()
	inc.State, inc.AckedAt, inc.AckedBy = model.IncidentAcknowledged, &now, "oncall"
	inc.Transitions = append(inc.Transitions, model.Transition{At: now, From: model.IncidentOpen, To: model.IncidentAcknowledged, Reason: "ack"})
	if _, err := e.st.UpdateIncident(e.ctx, inc); err != nil {
		t.Fatal(err)
	}
	for i := 12; i < 25; i++ {
		e.clk.Set(win(i).Add(70 * time.Second))
		e.states("ep1", i, down)
		if errs := e.pump(a.Handle); errs != nil {
			t.Fatal(errs)
		}
	}
	if got := e.rcv.kinds(); len(got) != 3 {
		t.Fatalf("alerts %v after acknowledge, want no new reminders", got)
	}
	if got := e.incidents("ep1")[0].State; got != model.IncidentAcknowledged {
		t.Fatalf("incident state %s, want acknowledged kept", got)
	}
	if got := testutil.ToFloat64(a.m.Incidents.WithLabelValues("acknowledged")); got != 1 {
		t.Fatalf("incidents_total{event=acknowledged} = %v, want 1", got)
	}
	e.states("ep1", 25, up, up)
	e.pump(a.Handle)
	if got := e.rcv.kinds(); !slices.Equal(got, []string{"open", "reminder-1", "reminder-2", "resolve"}) {
		t.Fatalf("alerts %v, want the acknowledged incident resolved", got)
	}
}

// TestSinkURLNeverLogged: a sink's URL is a secret (Slack and webhook URLs
// carry their key in the path); transport errors quote it, and neither the
// logs nor the stored outbox may.
func TestSinkURLNeverLogged(t *testing.T) {
	e := newEnv(t)
	e.endpoint("ep1", nil, nil)
	dead := httptest.NewServer(http.NotFoundHandler())
	secretURL := dead.URL + "/services/T000/B000/secret-token-xyz"
	dead.Close() // connection refused: a *url.Error quoting the URL
	var logs bytes.Buffer
	a := e.alerter("a", func(o *Options) {
		o.Sinks = []alert.Sink{httpSink{name: "slack", url: secretURL}}
		o.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
		o.RetryAttempts = 1
	})
	e.states("ep1", 0, down, down)
	e.pump(a.Handle)
	err := a.Sweep(e.ctx)
	if !errors.Is(err, notify.ErrDelivery) {
		t.Fatalf("sweep error %v, want the delivery failure", err)
	}
	tr, _ := e.st.GetTracker(e.ctx, "ep1")
	for what, text := range map[string]string{"logs": logs.String(), "error": err.Error(), "outbox": string(tr.Data)} {
		if strings.Contains(text, "secret-token-xyz") {
			t.Errorf("%s leak the sink URL: %s", what, text)
		}
	}
	if !strings.Contains(logs.String(), "redacted") {
		t.Errorf("logs %q: want the failure logged with the URL redacted", logs.String())
	}
}

func TestOneDeliveryPerSinkName(t *testing.T) {
	e := newEnv(t)
	e.endpoint("ep1", nil, nil)
	other := newReceiver(t)
	a := e.alerter("a", func(o *Options) {
		o.Sinks = []alert.Sink{e.sink, httpSink{name: "pager", url: other.srv.URL}, e.sink}
	})
	e.states("ep1", 0, down, down)
	if errs := e.pump(a.Handle); errs != nil {
		t.Fatal(errs)
	}
	if got, gotOther := e.rcv.kinds(), other.kinds(); !slices.Equal(got, []string{"open"}) || !slices.Equal(gotOther, []string{"open"}) {
		t.Fatalf("hook got %v, pager got %v: want one open each", got, gotOther)
	}
	if k := other.notifications()[0].Key; k != msg.LedgerKey("ep1", msg.IncidentID("ep1", win(1)), "open", "pager") {
		t.Fatalf("pager key %q, want its own ledger key", k)
	}
}

// TestSteadyUpsAreNotRewritten: once an endpoint's run of ups fills the
// window, an up verdict writes nothing but every quietWrites-th (so the
// stored last window lags by fewer than quietWrites); the outage after a
// long quiet run still opens once with its first failure, resolves once
// after the ups, and a redelivered quiet verdict changes nothing.
// TestSparseQuietUpsAreNotRewritten: an endpoint whose verdicts come
// every twelfth window (probed every minute in five-second windows, as in
// the load harness) is written every tenth verdict too, not every one.
func TestSparseQuietUpsAreNotRewritten(t *testing.T) {
	e := newEnv(t)
	e.endpoint("ep1", nil, nil)
	a := e.alerter("a")
	every := func(from, n int) {
		for i := range n {
			v := verdict("ep1", win(from+i), up)
			v.WindowSecs = 5
			e.publish(v)
		}
		if errs := e.pump(a.Handle); errs != nil {
			t.Fatal(errs)
		}
	}
	n := DefaultOpenWindow
	every(0, n)
	full, err := e.st.GetTracker(e.ctx, "ep1")
	if err != nil {
		t.Fatal(err)
	}
	every(n, 50)
	if got, err := e.st.GetTracker(e.ctx, "ep1"); err != nil || got.Version != full.Version+5 {
		t.Fatalf("tracker version %d after 50 quiet ups a minute apart in 5-second windows (%v), want %d: one write per %s",
			got.Version, err, full.Version+5, quietFor)
	}
}

// trackerReads counts the real store's GetTracker calls.
type trackerReads struct {
	Store
	n atomic.Int64
}

func (s *trackerReads) GetTracker(ctx context.Context, id string) (model.Tracker, error) {
	s.n.Add(1)
	return s.Store.GetTracker(ctx, id)
}

// TestVerdictOwingNothingSkipsTheDrain: a verdict whose tracker owes no
// notification reads the tracker once (apply), not again for a drain;
// one that owes one (the open, the resolve) drains and delivers it.
func TestVerdictOwingNothingSkipsTheDrain(t *testing.T) {
	e := newEnv(t)
	e.endpoint("ep1", nil, nil)
	reads := &trackerReads{Store: e.st}
	a := e.alerter("a", func(o *Options) { o.Store = reads })
	e.states("ep1", 0, up, up, up, up)
	if errs := e.pump(a.Handle); errs != nil {
		t.Fatal(errs)
	}
	if got := reads.n.Load(); got != 4 {
		t.Fatalf("4 up verdicts read the tracker %d times, want 4 (no drains)", got)
	}
	e.states("ep1", 4, down, down, down, up, up, up)
	if errs := e.pump(a.Handle); errs != nil {
		t.Fatal(errs)
	}
	if got := e.rcv.kinds(); !slices.Equal(got, []string{"open", "resolve"}) {
		t.Fatalf("alerts %v, want [open resolve]", got)
	}
	if got := reads.n.Load(); got <= 10 {
		t.Fatalf("10 verdicts with an open and a resolve owed read the tracker %d times, want drains beyond the 10 applies", got)
	}
	if ids, err := e.st.PendingOutboxes(e.ctx); err != nil || len(ids) != 0 {
		t.Fatalf("pending outboxes %v (%v), want none", ids, err)
	}
}

func TestSteadyUpsAreNotRewritten(t *testing.T) {
	e := newEnv(t)
	e.endpoint("ep1", nil, nil)
	a := e.alerter("a")
	n := DefaultOpenWindow
	e.states("ep1", 0, slices.Repeat([]msg.State{up}, n)...)
	if errs := e.pump(a.Handle); errs != nil {
		t.Fatal(errs)
	}
	full, err := e.st.GetTracker(e.ctx, "ep1")
	if err != nil {
		t.Fatal(err)
	}
	e.states("ep1", n, slices.Repeat([]msg.State{up}, 50)...)
	e.publish(verdict("ep1", win(n+10), up)) // a redelivery of a quiet window
	e.pump(a.Handle)
	// Last written at window n-1: written again at n+9, n+19, … n+49.
	if got, err := e.st.GetTracker(e.ctx, "ep1"); err != nil || got.Version != full.Version+5 || !got.LastWindow.Equal(win(n+49)) {
		t.Fatalf("tracker version %d, last window %s after 50 quiet ups (%v), want %d and %s: one write per %d quiet ups",
			got.Version, got.LastWindow, err, full.Version+5, win(n+49), quietWrites)
	}
	e.states("ep1", n+50, down, down, down, up, up, up)
	if errs := e.pump(a.Handle); errs != nil {
		t.Fatal(errs)
	}
	if got := e.rcv.kinds(); !slices.Equal(got, []string{"open", "resolve"}) {
		t.Fatalf("alerts %v, want [open resolve]", got)
	}
	incs := e.incidents("ep1")
	if len(incs) != 1 || !incs[0].FirstFailure.Equal(win(n+50)) || incs[0].ID != msg.IncidentID("ep1", win(n+51)) || incs[0].State != model.IncidentResolved {
		t.Fatalf("incidents %+v, want one opened at window %d, first failure %d, resolved", incs, n+51, n+50)
	}
	if r := incs[0].Transitions[len(incs[0].Transitions)-1].Reason; !strings.HasPrefix(r, fmt.Sprintf("%d consecutive up windows", DefaultResolveAfter)) {
		t.Fatalf("resolve reason %q, want the run of ups since the outage", r)
	}
}
