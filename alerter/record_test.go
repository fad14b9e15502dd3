package alerter

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpmon/mcpmon/alerter/sinks/webhook"
	"github.com/mcpmon/mcpmon/pkg/alert"
	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/msg"
	"github.com/mcpmon/mcpmon/pkg/store"
)

// hookToken is the secret path segment and query value of the test webhook
// URL; the receiver echoes its request URL in its error bodies.
const hookToken = "T0KEN-8f3a9c2e71d4"

// flakyHook is a real webhook receiver on 127.0.0.1 answering the statuses
// in fail (echoing its URL, as a careless receiver does) before accepting.
type flakyHook struct {
	srv *httptest.Server

	mu   sync.Mutex
	fail []int
	ok   int
}

func newFlakyHook(t *testing.T, fail ...int) *flakyHook {
	h := &flakyHook{fail: fail}
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.mu.Lock()
		defer h.mu.Unlock()
		if len(h.fail) > 0 {
			code := h.fail[0]
			h.fail = h.fail[1:]
			w.WriteHeader(code)
			fmt.Fprintf(w, "no capacity for %s", r.URL.RequestURI())
			return
		}
		h.ok++
	}))
	t.Cleanup(h.srv.Close)
	return h
}

func (h *flakyHook) sink(t *testing.T, e *env) alert.Sink {
	s, err := webhook.New(webhook.Options{Name: "webhook", URL: h.srv.URL + "/hooks/" + hookToken + "?key=" + hookToken, Clock: e.clk})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestDeliveryRecordShowsRetriesOutcomeAndRedactedError(t *testing.T) {
	testDeliveryRecord(t, newEnv)
}

func testDeliveryRecord(t *testing.T, newEnv func(*testing.T) *env) {
	for _, c := range []struct {
		name         string
		fail         []int
		want         model.DeliveryOutcome
		attempts     int
		afterSweep   int // attempts once the sweep retried the outbox
		wantErrorHas string
		givenUp      bool // a permanent failure: the sweep does not retry it
	}{
		{"retried then delivered", []int{503}, model.DeliveryDelivered, 2, 2, "HTTP 503", false},
		{"failed past the retry budget", []int{503, 503, 503, 503}, model.DeliveryFailed, 4, 5, "HTTP 503", false},
		{"rejected", []int{400}, model.DeliveryGaveUp, 1, 1, "HTTP 400", true},
		{"first time", nil, model.DeliveryDelivered, 1, 1, "", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t)
			e.endpoint("ep1", nil, nil)
			hook := newFlakyHook(t, c.fail...)
			a := e.alerter("a", func(o *Options) { o.Sinks = []alert.Sink{hook.sink(t, e)} })
			start := e.clk.Now().UTC()
			e.states("ep1", 0, down, down)
			if errs := e.pump(a.Handle); errs != nil {
				t.Fatal(errs)
			}
			inc := msg.IncidentID("ep1", win(1))
			d := e.delivery(inc)
			if d.Kind != "open" || d.Sink != "webhook" || d.Outcome != c.want || d.Attempts != c.attempts {
				t.Fatalf("record %+v, want open to webhook %s after %d attempts", d, c.want, c.attempts)
			}
			// The fake clock moves only by the backoffs (full jitter: maybe 0).
			if !d.FirstAttemptAt.Equal(start) || !d.LastAttemptAt.Equal(e.clk.Now()) {
				t.Fatalf("attempts at %s..%s, want %s..%s (after the backoffs)", d.FirstAttemptAt, d.LastAttemptAt, start, e.clk.Now())
			}
			if delivered := c.want == model.DeliveryDelivered; delivered == d.DeliveredAt.IsZero() || (delivered && !d.DeliveredAt.Equal(d.LastAttemptAt)) {
				t.Fatalf("delivered at %s, last attempt %s, outcome %s", d.DeliveredAt, d.LastAttemptAt, d.Outcome)
			}
			if !strings.Contains(d.LastError, c.wantErrorHas) || strings.Contains(d.LastError, hookToken) || strings.Contains(d.LastError, hook.srv.URL) {
				t.Fatalf("last error %q: want it to name %q and never the webhook URL or its token", d.LastError, c.wantErrorHas)
			}

			// The sweep retries what failed: the record adds up.
			if err := a.Sweep(e.ctx); err != nil {
				t.Fatal(err)
			}
			if c.givenUp {
				if d := e.delivery(inc); d.Outcome != model.DeliveryGaveUp || d.Attempts != c.afterSweep || hook.ok != 0 || !strings.HasPrefix(d.LastError, "given up, not retried: ") {
					t.Fatalf("after the sweep: record %+v, %d accepted, want the permanent failure left as it was", d, hook.ok)
				}
				return
			}
			if d := e.delivery(inc); d.Outcome != model.DeliveryDelivered || d.Attempts != c.afterSweep || hook.ok != 1 {
				t.Fatalf("after the sweep: record %+v, %d accepted, want delivered after %d attempts, accepted once", d, hook.ok, c.afterSweep)
			}
		})
	}
}

func TestDeliveryRecordMutedByMaintenanceThenDelivered(t *testing.T) {
	e := newEnv(t)
	e.endpoint("ep1", nil, nil)
	a := e.alerter("a")
	e.maintenance(model.Maintenance{ID: "m1", EndpointIDs: []string{"ep1"}, Start: win(0), End: win(4)})
	e.step(a, "ep1", 0, down, down)
	inc := msg.IncidentID("ep1", win(1))
	if d := e.delivery(inc); d.Outcome != model.DeliveryMuted || d.Attempts != 0 {
		t.Fatalf("record during maintenance %+v, want muted, no attempts", d)
	}
	e.step(a, "ep1", 2, down, down, down)
	if d := e.delivery(inc); d.Outcome != model.DeliveryDelivered || d.Attempts != 1 || !slices.Equal(e.rcv.kinds(), []string{"open"}) {
		t.Fatalf("record after maintenance %+v (alerts %v), want delivered once", d, e.rcv.kinds())
	}
}

// TestDeliveryRecordNeverBlocksDelivery: a store that cannot write records
// changes nothing about what is sent.
func TestDeliveryRecordNeverBlocksDelivery(t *testing.T) {
	e := newEnv(t)
	e.endpoint("ep1", nil, nil)
	a := e.alerter("a", func(o *Options) { o.Store = noRecords{o.Store} })
	e.states("ep1", 0, down, down, up, up)
	if errs := e.pump(a.Handle); errs != nil {
		t.Fatal(errs)
	}
	if got := e.rcv.kinds(); !slices.Equal(got, []string{"open", "resolve"}) {
		t.Fatalf("alerts %v, want [open resolve]", got)
	}
	if err := a.Sweep(e.ctx); err != nil {
		t.Fatal(err)
	}
	if got := e.rcv.kinds(); len(got) != 2 {
		t.Fatalf("alerts after a sweep %v: a failed record must not resend", got)
	}
}

type noRecords struct{ Store }

func (noRecords) RecordDelivery(context.Context, string, model.Delivery) error {
	return errors.New("records unavailable")
}

func TestDeliveryRecordDecision(t *testing.T) {
	t1, t2 := t0.Add(time.Second), t0.Add(3*time.Second)
	sink := httpSink{name: "hook"}
	reminder := alert.Notification{Kind: alert.KindReminder, Sequence: 3, IncidentID: "i"}
	for _, c := range []struct {
		name string
		d    Delivery
		err  error
		want model.Delivery
		ok   bool
	}{
		{"sent", Delivery{Sink: sink, Notification: reminder, Outcome: OutcomeSent, Attempts: 2, FirstAttemptAt: t1, LastAttemptAt: t2, DeliveredAt: t2, LastErr: errors.New("HTTP 502")}, nil,
			model.Delivery{Kind: "reminder-3", Sink: "hook", Outcome: model.DeliveryDelivered, Attempts: 2, FirstAttemptAt: t1, LastAttemptAt: t2, DeliveredAt: t2, LastError: "HTTP 502"}, true},
		{"sent, mark failed", Delivery{Sink: sink, Notification: reminder, Attempts: 1, FirstAttemptAt: t1, LastAttemptAt: t1, DeliveredAt: t1}, errors.New("mark done: store down"),
			model.Delivery{Kind: "reminder-3", Sink: "hook", Outcome: model.DeliveryDelivered, Attempts: 1, FirstAttemptAt: t1, LastAttemptAt: t1, DeliveredAt: t1}, true},
		{"ledger done", Delivery{Sink: sink, Notification: reminder, Outcome: OutcomeDuplicate}, nil,
			model.Delivery{Kind: "reminder-3", Sink: "hook", Outcome: model.DeliverySkipped}, true},
		{"failed", Delivery{Sink: sink, Notification: reminder, Attempts: 4, FirstAttemptAt: t1, LastAttemptAt: t2, LastErr: errors.New("HTTP 503")}, ErrDelivery,
			model.Delivery{Kind: "reminder-3", Sink: "hook", Outcome: model.DeliveryFailed, Attempts: 4, FirstAttemptAt: t1, LastAttemptAt: t2, LastError: "HTTP 503"}, true},
		{"claim held elsewhere", Delivery{Sink: sink, Notification: reminder}, ErrClaimHeld, model.Delivery{}, false},
		{"store down before the claim", Delivery{Sink: sink, Notification: reminder}, store.ErrUnavailable, model.Delivery{}, false},
		{"crash after the send", Delivery{Sink: sink, Notification: reminder, Attempts: 1, DeliveredAt: t1}, errInjectedCrash, model.Delivery{}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, ok := deliveryRecord(&c.d, c.err)
			if ok != c.ok || (ok && got != c.want) {
				t.Fatalf("deliveryRecord = %+v, %v; want %+v, %v", got, ok, c.want, c.ok)
			}
		})
	}
}

// delivery is the incident's only delivery record.
func (e *env) delivery(incidentID string) model.Delivery {
	e.t.Helper()
	ds, err := e.st.Deliveries(e.ctx, incidentID)
	if err != nil {
		e.t.Fatal(err)
	}
	if len(ds) != 1 {
		e.t.Fatalf("incident %s has %d delivery records %+v, want 1", incidentID, len(ds), ds)
	}
	return ds[0]
}
