package alerter

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/mcpmon/mcpmon/pkg/alert"
	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/msg"
	"github.com/mcpmon/mcpmon/pkg/queue"
	"github.com/mcpmon/mcpmon/pkg/store"
)

// holdingReceiver is a real local HTTP endpoint that holds the first request
// it gets until released, then records it and answers 200: a sink service
// that already has the POST when the alerter is told to shut down.
type holdingReceiver struct {
	srv      *httptest.Server
	arrived  chan struct{} // closed when the held request's body is read
	release  chan struct{} // closed by the test to answer the held request
	answered chan struct{} // closed once the held request is recorded and answered

	mu  sync.Mutex
	got []alert.Notification
}

func newHoldingReceiver(t *testing.T) *holdingReceiver {
	r := &holdingReceiver{arrived: make(chan struct{}), release: make(chan struct{}), answered: make(chan struct{})}
	var first sync.Once
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		var n alert.Notification
		if err := json.NewDecoder(req.Body).Decode(&n); err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		r.mu.Lock()
		r.got = append(r.got, n)
		r.mu.Unlock()
		held := false
		first.Do(func() { held = true })
		if !held {
			return
		}
		close(r.arrived)
		<-r.release
		w.WriteHeader(http.StatusOK)
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
		close(r.answered)
	}))
	t.Cleanup(r.srv.Close)
	// The held request must not outlive a failing test (srv.Close waits).
	t.Cleanup(func() {
		select {
		case <-r.release:
		default:
			close(r.release)
		}
	})
	return r
}

func (r *holdingReceiver) notifications() []alert.Notification {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]alert.Notification(nil), r.got...)
}

// TestShutdownDuringSendDeliversOnce: the handler's ctx is cancelled (a clean
// shutdown) while the sink's receiver already holds the POST. The call must
// run to completion and the ledger key be marked done, so the redelivered
// verdict sends nothing: exactly one alert.
func TestShutdownDuringSendDeliversOnce(t *testing.T) { testShutdownDuringSend(t, newEnv(t)) }

func TestShutdownDuringSendDeliversOnceRedis(t *testing.T) {
	testShutdownDuringSend(t, newRedisEnv(t))
}

func testShutdownDuringSend(t *testing.T, e *env) {
	rcv := newHoldingReceiver(t)
	e.endpoint("ep1", nil, nil)
	a := e.alerter("a", func(o *Options) { o.Sinks = []alert.Sink{httpSink{name: "hook", url: rcv.srv.URL}} })
	e.states("ep1", 0, down, down)
	msgs, err := e.q.Receive(e.ctx, queue.ReceiveInput{Max: queue.MaxBatch})
	if err != nil || len(msgs) != 2 {
		t.Fatalf("received %d verdicts (%v), want 2", len(msgs), err)
	}

	hctx, shutdown := context.WithCancel(e.ctx)
	defer shutdown()
	type handled struct {
		m   queue.Message
		err error
	}
	done := make(chan handled, 1)
	go func() {
		// As the consumer does: in order, stop at the first failure.
		for _, m := range msgs {
			if err := a.Handle(hctx, m); err != nil {
				done <- handled{m, err}
				return
			}
		}
		done <- handled{}
	}()

	select {
	case <-rcv.arrived:
	case h := <-done:
		t.Fatalf("handler finished (%v) before the open notification reached the receiver", h.err)
	}
	shutdown()
	close(rcv.release)
	h := <-done
	<-rcv.answered
	// The handler may fail after the send (its later store writes see the
	// cancelled ctx); the message then stays for redelivery, which is the
	// point of the rest of the test.
	t.Logf("handler after shutdown: %v", h.err)

	key := msg.LedgerKey("ep1", msg.IncidentID("ep1", win(1)), string(alert.KindOpen), "hook")
	if got := rcv.notifications(); len(got) != 1 || got[0].Key != key {
		t.Fatalf("receiver got %d notifications %+v, want the open %s once", len(got), got, key)
	}
	st, err := e.st.Claim(e.ctx, key, "someone-else", 0)
	if err != nil {
		t.Fatal(err)
	}
	if st != store.ClaimDone {
		t.Errorf("ledger key %s is %v after a send the receiver answered 200, want done", key, st)
		// Undo the probe's claim so the redelivery below shows the effect.
		if err := e.st.Release(e.ctx, key, "someone-else"); err != nil {
			t.Fatal(err)
		}
	}

	// The verdict handled again (a redelivery after restart) sends nothing.
	again := msgs[len(msgs)-1]
	if h.err != nil {
		again = h.m
	}
	a2 := e.alerter("b", func(o *Options) { o.Sinks = []alert.Sink{httpSink{name: "hook", url: rcv.srv.URL}} })
	if err := a2.Handle(e.ctx, again); err != nil {
		t.Fatalf("redelivered verdict: %v", err)
	}
	if got := rcv.notifications(); len(got) != 1 {
		t.Fatalf("receiver got %d notifications after the redelivery, want 1", len(got))
	}
	if incs := e.incidents("ep1"); len(incs) != 1 || incs[0].State != model.IncidentOpen {
		t.Fatalf("incidents %+v, want one open", incs)
	}
}
