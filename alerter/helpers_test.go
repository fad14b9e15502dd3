package alerter

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/mcpmon/mcpmon/pkg/alert"
	"github.com/mcpmon/mcpmon/pkg/clock"
	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/msg"
	"github.com/mcpmon/mcpmon/pkg/queue"
	"github.com/mcpmon/mcpmon/pkg/queue/embedded"
	"github.com/mcpmon/mcpmon/pkg/store"
	"github.com/mcpmon/mcpmon/pkg/store/bolt"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// receiver is a real local HTTP endpoint standing in for a sink's service.
// fail answers the next requests with a status before succeeding.
type receiver struct {
	srv *httptest.Server

	mu   sync.Mutex
	got  []alert.Notification
	hits int
	fail []int // statuses to answer with, in order, before succeeding
}

func newReceiver(t *testing.T) *receiver {
	r := &receiver{}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.hits++
		if len(r.fail) > 0 {
			code := r.fail[0]
			r.fail = r.fail[1:]
			if code == http.StatusTooManyRequests {
				w.Header().Set("Retry-After", "3")
			}
			w.WriteHeader(code)
			return
		}
		var n alert.Notification
		if err := json.NewDecoder(req.Body).Decode(&n); err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		r.got = append(r.got, n)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) failNext(codes ...int) {
	r.mu.Lock()
	r.fail = append(r.fail, codes...)
	r.mu.Unlock()
}

func (r *receiver) notifications() []alert.Notification {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]alert.Notification(nil), r.got...)
}

// kinds lists received notification kinds in order, reminders numbered.
func (r *receiver) kinds() []string {
	var ks []string
	for _, n := range r.notifications() {
		k := string(n.Kind)
		if n.Sequence > 0 {
			k += "-" + strconv.Itoa(n.Sequence)
		}
		ks = append(ks, k)
	}
	return ks
}

// httpSink is a minimal sink posting the notification as JSON; the real
// sinks live in alerter/sinks and are tested there.
type httpSink struct {
	name, url string
}

func (s httpSink) Name() string { return s.name }

func (s httpSink) Notify(ctx context.Context, n alert.Notification) error {
	body, _ := json.Marshal(n)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Idempotency-Key", n.Key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusTooManyRequests:
		secs, _ := strconv.Atoi(resp.Header.Get("Retry-After"))
		return &alert.RetryAfterError{After: time.Duration(secs) * time.Second, Err: fmt.Errorf("sink %s: status %d", s.name, resp.StatusCode)}
	case resp.StatusCode >= 500:
		return fmt.Errorf("sink %s: status %d", s.name, resp.StatusCode)
	case resp.StatusCode >= 400:
		return fmt.Errorf("sink %s: status %d: %w", s.name, resp.StatusCode, alert.ErrPermanent)
	}
	return nil
}

// env is one test's world: a fake clock, a real bolt store, a real embedded
// verdicts queue and a real HTTP receiver.
type env struct {
	t      *testing.T
	ctx    context.Context
	clk    *clock.Fake
	st     store.Store
	broker *embedded.Broker
	q      queue.Queue
	rcv    *receiver
	sink   alert.Sink
}

func newEnv(t *testing.T) *env {
	t.Helper()
	return newEnvWith(t, func(clk clock.Clock) store.Store {
		st, err := bolt.Open(filepath.Join(t.TempDir(), "store.db"), bolt.Options{Clock: clk, SweepInterval: -1})
		if err != nil {
			t.Fatal(err)
		}
		return st
	})
}

// newEnvWith builds the env on the store open returns (bolt or Redis).
func newEnvWith(t *testing.T, open func(clock.Clock) store.Store) *env {
	t.Helper()
	clk := clock.NewFake(t0)
	st := open(clk)
	t.Cleanup(func() { st.Close() })
	b, err := embedded.Open("", queue.StageConfigs(), embedded.Options{Clock: clk, PollInterval: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	rcv := newReceiver(t)
	e := &env{t: t, ctx: t.Context(), clk: clk, st: st, broker: b, q: b.Queue(msg.QueueVerdicts), rcv: rcv,
		sink: httpSink{name: "hook", url: rcv.srv.URL}}
	return e
}

func (e *env) endpoint(id string, rules *model.Rules, labels map[string]string) {
	e.t.Helper()
	if _, err := e.st.CreateEndpoint(e.ctx, model.Endpoint{ID: id, Name: "mcp " + id, URL: "https://user:pw@" + id + ".example/mcp?token=x", Schedule: "@every 1m", Timeout: 5 * time.Second, Rules: rules, Labels: labels}); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) alerter(owner string, mut ...func(*Options)) *Alerter {
	e.t.Helper()
	opts := Options{Store: e.st, Sinks: []alert.Sink{e.sink}, Clock: e.clk, Owner: owner}
	for _, m := range mut {
		m(&opts)
	}
	a, err := New(opts)
	if err != nil {
		e.t.Fatal(err)
	}
	a.sleep = func(ctx context.Context, d time.Duration) error { e.clk.Advance(d); return nil }
	if opts.GiveUpAfter == 0 {
		// No wait between drains: these tests are about what one drain
		// or sweep does; redelivery_test.go tests the backoff itself.
		a.redeliver = redelivery{giveUp: DefaultGiveUpAfter}
	}
	return a
}

func verdict(ep string, window time.Time, state msg.State) msg.Verdict {
	v := msg.Verdict{Schema: msg.SchemaVersion, EndpointID: ep, Window: window, WindowSecs: 60, State: state, Results: 1, EmittedAt: window.Add(70 * time.Second)}
	if state == msg.StateDown {
		v.Class, v.Reason = "refused", "connection refused"
	}
	return v
}

// publish sends verdicts to the verdicts queue as the aggregator does.
func (e *env) publish(vs ...msg.Verdict) {
	e.t.Helper()
	for _, v := range vs {
		res, err := e.q.Send(e.ctx, []queue.SendInput{{GroupID: v.GroupID(), DedupID: v.DedupID(), Body: v.Body()}})
		if err != nil || res[0].Err != nil {
			e.t.Fatalf("send %s: %v %v", v.DedupID(), err, res)
		}
	}
}

// pump receives and handles every visible message as queue.Consume does
// (delete on nil, leave on error) until none is visible, and returns the
// handler errors.
func (e *env) pump(h queue.Handler) []error {
	e.t.Helper()
	return e.pumpQ(e.q, h)
}

func (e *env) pumpQ(q queue.Queue, h queue.Handler) []error {
	e.t.Helper()
	var errs []error
	for {
		msgs, err := q.Receive(e.ctx, queue.ReceiveInput{Max: queue.MaxBatch})
		if err != nil {
			e.t.Fatal(err)
		}
		if len(msgs) == 0 {
			return errs
		}
		for i, m := range msgs {
			if err := h(e.ctx, m); err != nil {
				errs = append(errs, err)
				// As the consumer does: later messages of the group in this
				// batch wait for the failed one.
				for _, later := range msgs[i+1:] {
					if later.GroupID == m.GroupID {
						_ = q.ChangeVisibility(e.ctx, later.ReceiptHandle, 0)
					}
				}
				break
			}
			if err := q.Delete(e.ctx, m.ReceiptHandle); err != nil {
				e.t.Fatal(err)
			}
		}
	}
}

// redeliver lets in-flight messages' visibility run out.
func (e *env) redeliver() { e.clk.Advance(61 * time.Second) }

func (e *env) incidents(ep string) []model.Incident {
	e.t.Helper()
	incs, err := e.st.ListIncidents(e.ctx, store.IncidentFilter{EndpointID: ep})
	if err != nil {
		e.t.Fatal(err)
	}
	return incs
}

var _ Store = (*bolt.Store)(nil)
