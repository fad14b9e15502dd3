package subscribe

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mcpmon/mcpmon/pkg/alert"
	"github.com/mcpmon/mcpmon/pkg/clock"
	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/seal"
	"github.com/mcpmon/mcpmon/pkg/status"
	"github.com/mcpmon/mcpmon/pkg/store"
	"github.com/mcpmon/mcpmon/pkg/store/bolt"
)

// deployment is one store seen by successive processes, each with the
// keyring an operator gave it.
type deployment struct {
	t    *testing.T
	st   store.Store
	clk  *clock.Fake
	mail *fakeMailer
	page model.StatusPage
}

func newDeployment(t *testing.T) *deployment {
	t.Helper()
	clk := clock.NewFake(t0)
	st, err := bolt.Open(filepath.Join(t.TempDir(), "store.db"), bolt.Options{Clock: clk, SweepInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	d := &deployment{t: t, st: st, clk: clk, mail: &fakeMailer{}, page: model.StatusPage{ID: "pg1", Slug: "acme", Title: "Acme"}}
	doc, _ := json.Marshal(d.page)
	if err := st.PutObject(t.Context(), store.KindStatusPage, d.page.ID, doc); err != nil {
		t.Fatal(err)
	}
	return d
}

func keyring(t *testing.T, keys ...[]byte) *seal.Keyring {
	t.Helper()
	kr, err := seal.NewKeyring(keys...)
	if err != nil {
		t.Fatal(err)
	}
	return kr
}

// process starts the subscription service as the daemon builds it.
func (d *deployment) process(kr *seal.Keyring, log *slog.Logger) *Service {
	d.t.Helper()
	svc, err := New(Options{Store: d.st, Mailer: d.mail, BaseURL: "https://status.example.com", Keys: kr.Derive(KeyLabel), Sealer: kr,
		Clock: d.clk, Owner: "a", Logger: log})
	if err != nil {
		d.t.Fatal(err)
	}
	d.mail.drainInto(svc)
	return svc
}

func (d *deployment) subscribers() []model.Subscriber {
	d.t.Helper()
	for _, drain := range d.mail.drains {
		drain() // RunConfirmations carries the queued subscribes out
	}
	docs, err := d.st.ListObjectsOf(d.t.Context(), store.KindSubscriber, d.page.ID)
	if err != nil {
		d.t.Fatal(err)
	}
	var out []model.Subscriber
	for _, doc := range docs {
		s, _ := model.DecodeSubscriber(doc)
		out = append(out, s)
	}
	return out
}

// subscribeAndConfirm subscribes addr through svc and follows the link it
// is mailed.
func (d *deployment) subscribeAndConfirm(svc *Service, addr string) {
	d.t.Helper()
	n := len(d.mail.mails())
	if err := svc.Subscribe(d.t.Context(), d.page, addr); err != nil {
		d.t.Fatal(err)
	}
	m := d.mail.mails()[n]
	if err := svc.Confirm(d.t.Context(), d.page, tokenIn(d.t, m.Body, "confirm")); err != nil {
		d.t.Fatal(err)
	}
}

// notify sends one notice to sub through svc and returns the mail's
// unsubscribe token.
func (d *deployment) notify(svc *Service, sub model.Subscriber) (string, error) {
	d.t.Helper()
	n := len(d.mail.mails())
	err := svc.NotifySubscriber(d.t.Context(), model.SubscriberNotice{Key: "k-" + sub.ID, Page: d.page, Subscriber: sub,
		Endpoint: model.Endpoint{Name: "search"}, Event: model.IncidentEvent{Name: "opened", Kind: model.IncidentEventOpened, At: t0}})
	if err != nil {
		return "", err
	}
	m := d.mail.mails()[n]
	return tokenIn(d.t, m.Headers["List-Unsubscribe"], "unsubscribe"), nil
}

// TestSubscribingAgainAfterANewKeyFindsTheSubscriber: once the keyring
// has a new current key, subscribing a confirmed address again is still
// the same subscriber: no second record, no second confirmation mail.
func TestSubscribingAgainAfterANewKeyFindsTheSubscriber(t *testing.T) {
	d := newDeployment(t)
	k1, k2 := seal.NewKey(), seal.NewKey()
	d.subscribeAndConfirm(d.process(keyring(t, k1), nil), "jane@example.com")
	after := d.process(keyring(t, k2, k1), nil)
	if err := after.Subscribe(t.Context(), d.page, "jane@example.com"); err != nil {
		t.Fatal(err)
	}
	if subs, mails := d.subscribers(), d.mail.mails(); len(subs) != 1 || len(mails) != 1 {
		t.Fatalf("%d subscribers and %d mails after subscribing again under a new key; want the one confirmed subscriber and its one mail", len(subs), len(mails))
	}
}

// TestRotationKeepsSubscriptions: `secrets rotate` (a new key first, the
// old after it, Reseal) and then the old key's removal, as its output
// invites, leave every subscription working: the confirmed address is
// still one subscriber, it and a webhook subscriber are still sent their
// notices, and the unsubscribe links mailed before the rotation still
// unsubscribe. A subscriber named under a key retired before link keys
// were kept (made by an older version) is kept alike.
func TestRotationKeepsSubscriptions(t *testing.T) {
	d := newDeployment(t)
	k0, k1, k2 := seal.NewKey(), seal.NewKey(), seal.NewKey()
	kr1 := keyring(t, k1, k0)

	// An older version named this subscriber under k0, its current key
	// then, and sealed its address under it.
	legacyID := idUnder(keyring(t, k0).Derive(KeyLabel)[0], d.page.ID, "old@example.com")
	legacy := model.Subscriber{ID: legacyID, Page: d.page.ID, State: model.SubscriberConfirmed, CreatedAt: t0, ConfirmedAt: t0,
		Address: sealAddress(keyring(t, k0), legacyID, "old@example.com"), Masked: "o***@example.com"}
	doc, _ := json.Marshal(legacy)
	if err := d.st.PutObject(t.Context(), store.KindSubscriber, legacyID, doc); err != nil {
		t.Fatal(err)
	}

	before := d.process(kr1, nil)
	d.subscribeAndConfirm(before, "jane@example.com")
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { hits.Add(1) }))
	t.Cleanup(srv.Close)
	hook := SealWebhook(kr1, model.Subscriber{ID: "hook1", Page: d.page.ID, State: model.SubscriberConfirmed, CreatedAt: t0, ConfirmedAt: t0},
		srv.URL+"/hook?token=s3cret", "signing-secret")
	doc, _ = json.Marshal(hook)
	if err := d.st.PutObject(t.Context(), store.KindSubscriber, hook.ID, doc); err != nil {
		t.Fatal(err)
	}
	unsub := map[string]string{}
	for _, s := range d.subscribers() {
		if s.KindOrEmail() != model.SubscriberEmail {
			continue
		}
		tok, err := d.notify(before, s)
		if err != nil {
			t.Fatal(err)
		}
		unsub[s.Masked] = tok
	}

	// secrets rotate: k2 first, the others kept after it.
	kr2 := keyring(t, k2, k1, k0)
	res, err := Reseal(t.Context(), d.st, kr2, "rotate", kr1.Derive(KeyLabel)[0])
	if err != nil || res.Subscribers != 3 || len(res.Unopened) != 0 {
		t.Fatalf("reseal: %+v %v; want 3 subscribers re-sealed", res, err)
	}
	for _, s := range d.subscribers() {
		for _, v := range []string{s.Address, s.URL, s.Secret} {
			if id, _ := seal.SealedKeyID(v); v != "" && id != kr2.CurrentID() {
				t.Fatalf("subscriber %s holds %q, not sealed under the new key", s.ID, v)
			}
		}
	}

	// The older keys removed, as rotate's output says is safe.
	var logs bytes.Buffer
	after := d.process(keyring(t, k2), slog.New(slog.NewTextHandler(&logs, nil)))
	mails := len(d.mail.mails())
	for _, a := range []string{"jane@example.com", "old@example.com"} {
		if err := after.Subscribe(t.Context(), d.page, a); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(d.subscribers()); n != 3 || len(d.mail.mails()) != mails {
		t.Fatalf("subscribing again after the rotation: %d subscribers, %d new mails; want 3 and none", n, len(d.mail.mails())-mails)
	}
	for _, s := range d.subscribers() {
		if s.KindOrEmail() == model.SubscriberWebhook {
			err := NewWebhooks(WebhookOptions{Sealer: keyring(t, k2)}).NotifySubscriber(t.Context(), model.SubscriberNotice{Key: "k", Page: d.page,
				Subscriber: s, Event: model.IncidentEvent{Name: "opened", Kind: model.IncidentEventOpened, At: t0}})
			if err != nil || hits.Load() != 1 {
				t.Fatalf("webhook after the rotation: %v, %d hits", err, hits.Load())
			}
			continue
		}
		if _, err := d.notify(after, s); err != nil {
			t.Fatalf("notice to %s after the rotation: %v", s.Masked, err)
		}
	}
	if logs.Len() != 0 {
		t.Fatalf("logged after the rotation:\n%s", logs.String())
	}
	h := after.Handler(status.NewCache(status.Options{Store: d.st, Clock: d.clk}))
	for masked, tok := range unsub {
		if code, body := post(t, h, "/status/acme/unsubscribe?t="+url.QueryEscape(tok), "application/x-www-form-urlencoded", "List-Unsubscribe=One-Click"); code != http.StatusOK {
			t.Fatalf("%s's unsubscribe link from before the rotation: %d %s", masked, code, body)
		}
	}
	if subs := d.subscribers(); len(subs) != 1 || subs[0].ID != "hook1" {
		t.Fatalf("after both unsubscribed: %+v, want the webhook alone", subs)
	}
}

// TestUnopenedSubscriberIsWarnedOnce: a subscriber sealed under a key the
// keyring no longer holds is given up (permanent), and one WARN says so,
// naming the subscriber and not its address, however often it is owed.
func TestUnopenedSubscriberIsWarnedOnce(t *testing.T) {
	d := newDeployment(t)
	k0, k1 := seal.NewKey(), seal.NewKey()
	d.subscribeAndConfirm(d.process(keyring(t, k1), nil), "jane@example.com")
	// Its address sealed under a key since removed without a rotation.
	sub := d.subscribers()[0]
	sub.Address = sealAddress(keyring(t, k0), sub.ID, "jane@example.com")
	doc, _ := json.Marshal(sub)
	if err := d.st.PutObject(t.Context(), store.KindSubscriber, sub.ID, doc); err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	lost := d.process(keyring(t, k1), slog.New(slog.NewTextHandler(&logs, nil)))
	for range 3 {
		if _, err := d.notify(lost, sub); !errors.Is(err, alert.ErrPermanent) {
			t.Fatalf("notice to a subscriber that does not open: %v, want permanent", err)
		}
	}
	lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
	if len(lines) != 1 || !strings.Contains(lines[0], "level=WARN") || !strings.Contains(lines[0], sub.ID) || strings.Contains(logs.String(), "jane") {
		t.Fatalf("logged:\n%s\nwant one WARN naming %s and not the address", logs.String(), sub.ID)
	}
	res, err := Reseal(t.Context(), d.st, keyring(t, k1), "rotate", nil)
	if err != nil || len(res.Unopened) != 1 || res.Unopened[0] != sub.ID {
		t.Fatalf("reseal: %+v %v; want the subscriber reported as not opening", res, err)
	}
}

// writeBetween is the store with another replica's write landing between
// Reseal's read of a subscriber and its write, the moment no real peer
// can be made to hit.
type writeBetween struct {
	store.Store
	once func()
}

func (w *writeBetween) SwapObject(ctx context.Context, kind, id string, old, doc []byte) error {
	if f := w.once; f != nil {
		w.once = nil
		f()
	}
	return w.Store.SwapObject(ctx, kind, id, old, doc)
}

// TestResealKeepsAConfirmationMadeWhileItRuns: a subscriber confirmed by a
// replica after `secrets rotate` read it is not put back unconfirmed: the
// re-seal is a compare-and-set, and on a conflict it re-seals what the
// replica wrote.
func TestResealKeepsAConfirmationMadeWhileItRuns(t *testing.T) {
	d := newDeployment(t)
	k1 := seal.NewKey()
	kr1 := keyring(t, k1)
	svc := d.process(kr1, nil)
	if err := svc.Subscribe(t.Context(), d.page, "jane@example.com"); err != nil {
		t.Fatal(err)
	}
	link := tokenIn(t, d.mail.mails()[0].Body, "confirm")
	if subs := d.subscribers(); len(subs) != 1 || subs[0].State != model.SubscriberPending {
		t.Fatalf("subscribers %+v, want one pending", subs)
	}
	st := &writeBetween{Store: d.st, once: func() {
		if err := svc.Confirm(t.Context(), d.page, link); err != nil {
			t.Fatal(err)
		}
	}}
	kr2 := keyring(t, seal.NewKey(), k1)
	res, err := Reseal(t.Context(), st, kr2, "rotate", kr1.Derive(KeyLabel)[0])
	if err != nil || res.Subscribers != 1 {
		t.Fatalf("reseal: %+v %v, want one subscriber re-sealed", res, err)
	}
	subs := d.subscribers()
	if len(subs) != 1 || subs[0].State != model.SubscriberConfirmed {
		t.Fatalf("subscribers %+v, want the confirmation kept", subs)
	}
	if id, _ := seal.SealedKeyID(subs[0].Address); id != kr2.CurrentID() {
		t.Fatalf("address sealed under %q, want the new key %q", id, kr2.CurrentID())
	}
}

// TestConfirmDoesNotBringBackASubscriberDeletedMeanwhile: a subscriber
// unsubscribed (or pruned) between a confirmation's read and its write is
// not written back confirmed: the link answers as a stale one, and the
// subscriber stays gone.
func TestConfirmDoesNotBringBackASubscriberDeletedMeanwhile(t *testing.T) {
	d := newDeployment(t)
	kr := keyring(t, seal.NewKey())
	if err := d.process(kr, nil).Subscribe(t.Context(), d.page, "jane@example.com"); err != nil {
		t.Fatal(err)
	}
	link := tokenIn(t, d.mail.mails()[0].Body, "confirm")
	id := d.subscribers()[0].ID
	st := &writeBetween{Store: d.st, once: func() {
		if err := d.st.DeleteObject(t.Context(), store.KindSubscriber, id); err != nil {
			t.Fatal(err)
		}
	}}
	svc, err := New(Options{Store: st, Mailer: d.mail, BaseURL: "https://status.example.com", Keys: kr.Derive(KeyLabel), Sealer: kr,
		Clock: d.clk, Owner: "a"})
	if err != nil {
		t.Fatal(err)
	}
	if err := svc.Confirm(t.Context(), d.page, link); !errors.Is(err, ErrBadToken) {
		t.Fatalf("confirm of a subscriber deleted meanwhile: %v, want ErrBadToken", err)
	}
	if subs := d.subscribers(); len(subs) != 0 {
		t.Fatalf("subscribers %+v, want none: the confirmation brought a deleted one back", subs)
	}
}
