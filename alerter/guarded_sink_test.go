package alerter

import (
	"bytes"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/mcpmon/mcpmon/alerter/sinks"
	"github.com/mcpmon/mcpmon/alerter/sinks/webhook"
	"github.com/mcpmon/mcpmon/pkg/alert"
	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/msg"
	"github.com/mcpmon/mcpmon/pkg/netguard"
)

// TestSinkRefusedByGuardIsGivenUpOnce: a per-endpoint webhook whose
// receiver is on loopback, dialled through the SSRF guard, is refused
// before any connection. That is a permanent failure: each notification is
// tried once for that sink, recorded on the incident with the reason,
// counted as abandoned and logged once — not retried by every drain and
// sweep for ever — and the endpoint's other sink is unaffected.
func TestSinkRefusedByGuardIsGivenUpOnce(t *testing.T) {
	e := newEnv(t)
	e.endpoint("ep1", nil, nil)
	target := newReceiver(t) // on 127.0.0.1: what the guard refuses
	guarded, err := webhook.New(webhook.Options{Name: "internal", URL: target.srv.URL + "/hook",
		Client: sinks.DialingClient(netguard.Guard{}.DialContext), Clock: e.clk})
	if err != nil {
		t.Fatal(err)
	}
	var logs lockedLog
	a := e.alerter("a", func(o *Options) {
		o.Sinks = []alert.Sink{e.sink, guarded}
		o.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	})
	e.states("ep1", 0, down, down, up, up)
	for range 5 { // redeliveries and sweeps: a retried notification would show here
		e.pump(a.Handle)
		if err := a.Sweep(e.ctx); err != nil {
			t.Fatal(err)
		}
		e.redeliver()
	}

	if got := e.rcv.kinds(); !slices.Equal(got, []string{"open", "resolve"}) {
		t.Fatalf("healthy sink got %v, want [open resolve]", got)
	}
	if target.hits != 0 {
		t.Fatalf("the guarded sink reached its loopback receiver %d times", target.hits)
	}
	if ids, err := e.st.PendingOutboxes(e.ctx); err != nil || len(ids) != 0 {
		t.Fatalf("pending outboxes %v (%v), want none: nothing is left to retry", ids, err)
	}
	inc := msg.IncidentID("ep1", win(1))
	ds, err := e.st.Deliveries(e.ctx, inc)
	if err != nil {
		t.Fatal(err)
	}
	for _, kind := range []string{"open", "resolve"} {
		i := slices.IndexFunc(ds, func(d model.Delivery) bool { return d.Kind == kind && d.Sink == "internal" })
		if i < 0 {
			t.Fatalf("no %s record for the guarded sink in %+v", kind, ds)
		}
		d := ds[i]
		if d.Outcome != model.DeliveryGaveUp || d.Attempts != 1 || !strings.HasPrefix(d.LastError, "given up, not retried: ") ||
			!strings.Contains(d.LastError, "private or reserved address") || strings.Contains(d.LastError, target.srv.URL) {
			t.Errorf("%s record %+v: want gave_up once, with the guard's reason and no URL", kind, d)
		}
	}
	for _, kind := range []string{"open", "resolve"} {
		if got := testutil.ToFloat64(a.m.Alerts.WithLabelValues("internal", kind, OutcomeAbandoned)); got != 1 {
			t.Errorf("alerts_total{sink=internal,kind=%s,outcome=abandoned} = %v, want 1", kind, got)
		}
		if got := testutil.ToFloat64(a.m.Alerts.WithLabelValues("internal", kind, OutcomeFailed)); got != 0 {
			t.Errorf("alerts_total{sink=internal,kind=%s,outcome=failed} = %v, want 0", kind, got)
		}
	}
	if n := strings.Count(logs.String(), "level=WARN"); n != 2 {
		t.Errorf("%d warnings, want 2 (one per notification):\n%s", n, logs.String())
	}
}

// lockedLog collects log output from the fan-out's goroutines.
type lockedLog struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *lockedLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *lockedLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}
