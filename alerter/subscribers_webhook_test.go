package alerter

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mcpmon/mcpmon/alerter/notify"
	"github.com/mcpmon/mcpmon/alerter/sinks/webhook"
	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/store"
	"github.com/mcpmon/mcpmon/pkg/subscribe"
	"github.com/mcpmon/mcpmon/pkg/testpeers"
)

// webhookSubscriber puts a confirmed webhook subscriber of page posting
// to url, signed with secret.
func (e *env) webhookSubscriber(id, page, url, secret string) {
	e.t.Helper()
	sub := subscribe.SealWebhook(nil, model.Subscriber{ID: id, Page: page, State: model.SubscriberConfirmed,
		CreatedAt: t0.Add(-time.Hour), ConfirmedAt: t0.Add(-time.Minute)}, url, secret)
	doc, _ := json.Marshal(sub)
	if err := e.st.PutObject(e.ctx, store.KindSubscriber, id, doc); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) webhookNotifier() subscribe.Router {
	return subscribe.Router{Webhook: subscribe.NewWebhooks(subscribe.WebhookOptions{Clock: e.clk})}
}

// TestWebhookSubscriberGetsOnePostPerIncidentEvent: a page's webhook
// subscriber is POSTed each incident event (opened, the update, resolved)
// once, signed with its secret, keyed by the notice's ledger key, and
// naming nothing private (no endpoint URL, tenant or internal ID).
func TestWebhookSubscriberGetsOnePostPerIncidentEvent(t *testing.T) {
	e := newEnv(t)
	rcv := testpeers.NewReceiver(t, nil)
	e.publicEndpoint("ep1", "acme")
	e.page("p1", "acme")
	e.webhookSubscriber("w1", "p1", rcv.URL+"/hook", "shh")
	a := e.alerter("a", func(o *Options) { o.Subscribers = e.webhookNotifier() })

	e.states("ep1", 0, down, down)
	e.pump(a.Handle)
	inc := e.incidents("ep1")[0].ID
	e.sweepSubscribers(a, 3)
	e.clk.Advance(time.Minute)
	e.appendUpdate("ep1", "rolled back")
	e.sweepSubscribers(a, 3)
	e.states("ep1", 2, up, up)
	e.clk.Advance(time.Minute)
	e.pump(a.Handle)
	e.sweepSubscribers(a, 3)
	e.sweepSubscribers(e.alerter("b", func(o *Options) { o.Subscribers = e.webhookNotifier() }), 2)

	reqs := rcv.Requests()
	want := []string{"opened", "update-1", "resolved"}
	if len(reqs) != len(want) {
		t.Fatalf("%d POSTs, want %d (one per event)", len(reqs), len(want))
	}
	for i, r := range reqs {
		var p webhook.SubscriberPayload
		if err := json.Unmarshal(r.Body, &p); err != nil {
			t.Fatalf("POST %d: %v: %s", i, err, r.Body)
		}
		if p.Event != want[i] || p.Type != "subscription" || p.Page != "page-p1" || p.Endpoint.Name != "mcp ep1" || p.Endpoint.Slug != "slug-ep1" {
			t.Errorf("POST %d: %+v, want event %s of page-p1's endpoint", i, p, want[i])
		}
		if key := model.SubscriberNoticeKey("w1", inc, want[i]); r.Header.Get(webhook.HeaderIdempotency) != key || p.Key != key {
			t.Errorf("POST %d: key %q, want %q", i, r.Header.Get(webhook.HeaderIdempotency), key)
		}
		if err := webhook.Verify("shh", r.Header.Get(webhook.HeaderTimestamp), r.Body, r.Header.Get(webhook.HeaderSignature), e.clk.Now(), time.Hour); err != nil {
			t.Errorf("POST %d: signature: %v", i, err)
		}
		for _, private := range []string{"ep1.example", "acme", `"` + inc + `"`, `"ep1"`} {
			if strings.Contains(string(r.Body), private) {
				t.Errorf("POST %d names %s: %s", i, private, r.Body)
			}
		}
	}
	if u := jsonUpdate(t, reqs[1].Body); u == nil || u.Message != "rolled back" || u.Status != string(model.UpdateIdentified) || u.Seq != 1 {
		t.Errorf("update POST: %+v, want update 1 'rolled back'", u)
	}
}

func jsonUpdate(t *testing.T, body []byte) *webhook.Update {
	t.Helper()
	var p webhook.SubscriberPayload
	if err := json.Unmarshal(body, &p); err != nil {
		t.Fatal(err)
	}
	return p.Update
}

// TestWebhookSubscriberCrashAtEveryStep is TestSubscriberCrashAtEveryStep
// for a webhook subscriber and a real receiver: exactly one POST, except
// the one duplicate window between the send and its mark, where the
// repeat carries the same Idempotency-Key.
func TestWebhookSubscriberCrashAtEveryStep(t *testing.T) {
	for _, tt := range []struct {
		point         string
		before, sends int
	}{
		{"claimed", 0, 1},
		{"sent", 1, 2},
		{"marked", 1, 1},
	} {
		t.Run(tt.point, func(t *testing.T) {
			e := newEnv(t)
			rcv := testpeers.NewReceiver(t, nil)
			e.publicEndpoint("ep1", "acme")
			e.page("p1", "acme")
			e.webhookSubscriber("w1", "p1", rcv.URL+"/hook", "")
			dead := e.alerter("dead", func(o *Options) { o.Subscribers = e.webhookNotifier() })
			e.states("ep1", 0, down, down)
			e.pump(dead.Handle)
			dead.hook = func(p string) error {
				if p == tt.point {
					return fmt.Errorf("at %s: %w", p, notify.ErrCrash)
				}
				return nil
			}
			if err := dead.NotifySubscribers(e.ctx); !errors.Is(err, notify.ErrCrash) {
				t.Fatalf("crash at %s: err = %v", tt.point, err)
			}
			if got := len(rcv.Requests()); got != tt.before {
				t.Fatalf("before takeover: %d POSTs, want %d", got, tt.before)
			}
			e.clk.Advance(DefaultLease + time.Second)
			e.sweepSubscribers(e.alerter("live", func(o *Options) { o.Subscribers = e.webhookNotifier() }), 3)
			reqs := rcv.Requests()
			if len(reqs) != tt.sends || reqs[0].Header.Get(webhook.HeaderIdempotency) != reqs[len(reqs)-1].Header.Get(webhook.HeaderIdempotency) {
				t.Fatalf("crash at %s: %d POSTs, want %d of one key", tt.point, len(reqs), tt.sends)
			}
		})
	}
}
