package subscribe

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/time/rate"

	"github.com/mcpmon/mcpmon/alerter/sinks/email"
	"github.com/mcpmon/mcpmon/pkg/clock"
	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/seal"
	"github.com/mcpmon/mcpmon/pkg/status"
	"github.com/mcpmon/mcpmon/pkg/store"
	"github.com/mcpmon/mcpmon/pkg/store/bolt"
)

var t0 = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

type fakeMailer struct {
	mu   sync.Mutex
	sent []email.Mail
	fail error
	// drains send what the services mailing through it have queued
	// (Service.drainConfirmations), as RunConfirmations would: mails()
	// reads after them.
	drains []func()
}

// drainInto makes mails() send what svc has queued first.
func (m *fakeMailer) drainInto(svc *Service) {
	m.drains = append(m.drains, func() { svc.drainConfirmations(context.Background()) })
}

func (m *fakeMailer) Send(_ context.Context, mail email.Mail) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fail != nil {
		return m.fail
	}
	m.sent = append(m.sent, mail)
	return nil
}

func (m *fakeMailer) mails() []email.Mail {
	for _, drain := range m.drains {
		drain()
	}
	return m.sentNow()
}

// sentNow is what was sent, without sending what is queued.
func (m *fakeMailer) sentNow() []email.Mail {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]email.Mail(nil), m.sent...)
}

type fixture struct {
	st    store.Store
	clk   *clock.Fake
	mail  *fakeMailer
	svc   *Service
	page  model.StatusPage
	pages *status.Cache
}

func newFixture(t *testing.T, max int) *fixture {
	t.Helper()
	clk := clock.NewFake(t0)
	st, err := bolt.Open(filepath.Join(t.TempDir(), "store.db"), bolt.Options{Clock: clk, SweepInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	kr, err := seal.NewKeyring(seal.NewKey())
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{st: st, clk: clk, mail: &fakeMailer{}, page: model.StatusPage{ID: "pg1", Slug: "acme", Title: "Acme"},
		pages: status.NewCache(status.Options{Store: st, Clock: clk})}
	doc, _ := json.Marshal(f.page)
	if err := st.PutObject(t.Context(), store.KindStatusPage, f.page.ID, doc); err != nil {
		t.Fatal(err)
	}
	f.svc, err = New(Options{Store: st, Mailer: f.mail, BaseURL: "https://status.example.com", Keys: kr.Derive(KeyLabel), Sealer: kr,
		MaxPerPage: max, Clock: clk, Owner: "a"})
	if err != nil {
		t.Fatal(err)
	}
	f.mail.drainInto(f.svc)
	return f
}

var tokenRE = regexp.MustCompile(`/status/acme/(confirm|unsubscribe)\?t=([^\s>]+)`)

func tokenIn(t *testing.T, text, action string) string {
	t.Helper()
	for _, m := range tokenRE.FindAllStringSubmatch(text, -1) {
		if m[1] == action {
			v, _ := url.QueryUnescape(m[2])
			return v
		}
	}
	t.Fatalf("no %s link in %q", action, text)
	return ""
}

// TestSubscribeDecision: the double opt-in rule as a table.
func TestSubscribeDecision(t *testing.T) {
	pending := model.Subscriber{State: model.SubscriberPending, MailedAt: t0, ConfirmBy: t0.Add(model.ConfirmTTL)}
	confirmed := model.Subscriber{State: model.SubscriberConfirmed, ConfirmedAt: t0}
	for _, c := range []struct {
		name        string
		found       bool
		cur         model.Subscriber
		at          time.Time
		write, mail bool
	}{
		{"new address", false, model.Subscriber{}, t0, true, true},
		{"pending, mailed a minute ago", true, pending, t0.Add(time.Minute), false, false},
		{"pending, mailed an hour ago", true, pending, t0.Add(time.Hour), true, true},
		{"pending past its link", true, pending, t0.Add(model.ConfirmTTL), true, true},
		{"confirmed", true, confirmed, t0.Add(48 * time.Hour), false, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := decide(c.found, c.cur, "s1", "pg", c.at)
			if d.write != c.write || d.mail != c.mail {
				t.Fatalf("write %v mail %v, want %v %v", d.write, d.mail, c.write, c.mail)
			}
			if d.mail && (d.next.State != model.SubscriberPending || !d.next.ConfirmBy.Equal(c.at.Add(model.ConfirmTTL))) {
				t.Fatalf("next %+v: want pending until %s", d.next, c.at.Add(model.ConfirmTTL))
			}
		})
	}
}

// TestTokensRefuseForgeriesAndOtherUses: a link checks only for its own
// page, purpose and subscriber, under a key of the keyring, before expiry.
func TestTokensRefuseForgeriesAndOtherUses(t *testing.T) {
	old, cur := signer{keys: [][]byte{[]byte("old-key")}}, signer{keys: [][]byte{[]byte("new-key"), []byte("old-key")}}
	exp := t0.Add(time.Hour)
	tok := cur.token(purposeConfirm, "pg", "s1", exp)
	if id, err := cur.check(tok, purposeConfirm, "pg", t0); err != nil || id != "s1" {
		t.Fatalf("own token: %q %v", id, err)
	}
	if _, err := cur.check(old.token(purposeConfirm, "pg", "s1", exp), purposeConfirm, "pg", t0); err != nil {
		t.Fatalf("a token of the older key still in the keyring: %v", err)
	}
	forged := strings.Replace(tok, "s1.", "s2.", 1)
	for name, c := range map[string]struct{ tok, purpose, page string }{
		"other purpose":   {tok, purposeUnsubscribe, "pg"},
		"other page":      {tok, purposeConfirm, "pg2"},
		"other id":        {forged, purposeConfirm, "pg"},
		"unknown key":     {signer{keys: [][]byte{[]byte("x")}}.token(purposeConfirm, "pg", "s1", exp), purposeConfirm, "pg"},
		"truncated":       {tok[:len(tok)-3], purposeConfirm, "pg"},
		"empty":           {"", purposeConfirm, "pg"},
		"oversized":       {strings.Repeat("a", maxToken+1), purposeConfirm, "pg"},
		"extended expiry": {strings.Replace(tok, ".", "9.", 1), purposeConfirm, "pg"},
	} {
		if _, err := cur.check(c.tok, c.purpose, c.page, t0); !errors.Is(err, ErrBadToken) {
			t.Errorf("%s: err %v, want ErrBadToken", name, err)
		}
	}
	if _, err := cur.check(tok, purposeConfirm, "pg", exp); !errors.Is(err, ErrBadToken) {
		t.Fatalf("at expiry: %v, want ErrBadToken", err)
	}
}

func post(t *testing.T, h http.Handler, path, contentType, body string) (int, string) {
	t.Helper()
	r := httptest.NewRequest(http.MethodPost, path, strings.NewReader(body))
	r.Header.Set("Content-Type", contentType)
	r.RemoteAddr = "192.0.2.1:1234"
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	b, _ := io.ReadAll(w.Result().Body)
	return w.Code, string(b)
}

// TestFollowingTheConfirmLinkChangesNothing: a GET of the confirmation
// link, which a mail scanner or link preview makes without the address's
// owner, leaves the subscriber pending and answers a page whose button
// posts to the same link; only that POST confirms.
func TestFollowingTheConfirmLinkChangesNothing(t *testing.T) {
	f := newFixture(t, 0)
	h := f.svc.Handler(f.pages)
	if code, body := post(t, h, "/status/acme/subscribe", "application/json", `{"email":"victim@example.com"}`); code != http.StatusAccepted {
		t.Fatalf("subscribe: %d %s", code, body)
	}
	link := "/status/acme/confirm?t=" + url.QueryEscape(tokenIn(t, f.mail.mails()[0].Body, "confirm"))
	state := func() model.SubscriberState {
		t.Helper()
		docs, err := f.st.ListObjectsOf(t.Context(), store.KindSubscriber, "pg1")
		if err != nil || len(docs) != 1 {
			t.Fatalf("subscribers of the page: %d, %v", len(docs), err)
		}
		for _, doc := range docs {
			s, _ := model.DecodeSubscriber(doc)
			return s.State
		}
		return ""
	}
	for _, method := range []string{http.MethodGet, http.MethodHead} {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(method, link, nil))
		if w.Code != http.StatusOK {
			t.Fatalf("%s of the confirmation link: %d", method, w.Code)
		}
		if got := state(); got != model.SubscriberPending {
			t.Fatalf("after a %s of the confirmation link the subscriber is %s, want %s", method, got, model.SubscriberPending)
		}
		if method == http.MethodGet {
			body := w.Body.String()
			action := "?" + strings.SplitN(link, "?", 2)[1]
			if !strings.Contains(body, `<form method="post" action="`+strings.ReplaceAll(action, "&", "&amp;")+`"`) || !strings.Contains(body, ">Confirm</button>") {
				t.Fatalf("GET of the confirmation link: want a form posting to the link, got\n%s", body)
			}
		}
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(http.MethodPost, link, strings.NewReader("")))
	if w.Code != http.StatusOK || state() != model.SubscriberConfirmed {
		t.Fatalf("POST of the confirmation link: %d, subscriber %s; want 200 and %s", w.Code, state(), model.SubscriberConfirmed)
	}
}

// countingStore counts listings of every status page in the deployment.
type countingStore struct {
	store.Store
	pageLists atomic.Int64
}

func (c *countingStore) ListObjects(ctx context.Context, kind string) (map[string][]byte, error) {
	if kind == store.KindStatusPage {
		c.pageLists.Add(1)
	}
	return c.Store.ListObjects(ctx, kind)
}

// TestRoutesListThePagesOncePerTTL: the subscription routes, which anyone
// may call without a key or a rate, find their page in the public pages'
// index, read once a TTL, not in a listing of every tenant's pages per
// request: at 10,000 pages of the largest size a request cost 3.2 s of CPU
// and 640 MB.
func TestRoutesListThePagesOncePerTTL(t *testing.T) {
	f := newFixture(t, 0)
	cs := &countingStore{Store: f.st}
	h := f.svc.Handler(status.NewCache(status.Options{Store: cs, Clock: f.clk}))
	for i := range 50 {
		for _, path := range []string{"/status/acme/confirm?t=x", "/status/acme/unsubscribe?t=x", "/status/nope/unsubscribe?t=x"} {
			w := httptest.NewRecorder()
			h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, path, nil))
			if want := map[bool]int{true: http.StatusNotFound, false: http.StatusOK}[strings.Contains(path, "nope")]; w.Code != want {
				t.Fatalf("request %d, GET %s: %d, want %d", i, path, w.Code, want)
			}
		}
	}
	if n := cs.pageLists.Load(); n != 1 {
		t.Fatalf("150 requests listed the status pages %d times, want once", n)
	}
	f.clk.Advance(status.DefaultTTL)
	if code, _ := post(t, h, "/status/acme/unsubscribe?t=x", "application/x-www-form-urlencoded", ""); code != http.StatusBadRequest {
		t.Fatalf("POST with a bad token: %d, want 400", code)
	}
	if n := cs.pageLists.Load(); n != 2 {
		t.Fatalf("a request after the TTL: %d listings in all, want 2", n)
	}
}

func postFrom(t *testing.T, h http.Handler, client, path, body string) int {
	t.Helper()
	r := httptest.NewRequest(http.MethodPost, path, strings.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	r.RemoteAddr = client
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w.Code
}

// TestOneAddressIsMailedWithinItsRate: subscribing one stranger's address
// to every page of the deployment, each from another client, mails it 5
// confirmations at once and one an hour after that; every subscribe gets
// the same 202. Before, each page mailed it once an hour, for ever.
func TestOneAddressIsMailedWithinItsRate(t *testing.T) {
	f := newFixture(t, 0)
	for i := range 30 {
		doc, _ := json.Marshal(model.StatusPage{ID: fmt.Sprintf("p%d", i), Slug: fmt.Sprintf("page%d", i), Title: "Page"})
		if err := f.st.PutObject(t.Context(), store.KindStatusPage, fmt.Sprintf("p%d", i), doc); err != nil {
			t.Fatal(err)
		}
	}
	h := f.svc.Handler(f.pages)
	round := func(from int) {
		t.Helper()
		for i := range 30 {
			client := fmt.Sprintf("198.51.100.%d:1000", from+i)
			if code := postFrom(t, h, client, fmt.Sprintf("/status/page%d/subscribe", i), `{"email":"victim@example.com"}`); code != http.StatusAccepted {
				t.Fatalf("subscribe to page%d: %d, want 202", i, code)
			}
		}
	}
	round(0)
	if n := len(f.mail.mails()); n != 5 {
		t.Fatalf("subscribed to 30 pages: %d confirmation mails, want 5", n)
	}
	f.clk.Advance(time.Hour)
	round(100)
	if n := len(f.mail.mails()); n != 6 {
		t.Fatalf("an hour later, subscribed to 30 pages again: %d confirmation mails in all, want 6", n)
	}
	if code := postFrom(t, h, "198.51.100.250:1000", "/status/page0/subscribe", `{"email":"someone.else@example.com"}`); code != http.StatusAccepted || len(f.mail.mails()) != 7 {
		t.Fatalf("another address: %d, %d mails in all; want 202 and a mail", code, len(f.mail.mails()))
	}
}

// TestClientsAreCountedByIPv6Slash64: the addresses of one IPv6 /64 share
// one client bucket (10 at once), an IPv4-mapped address counts as its
// IPv4 one, and another /64 has a bucket of its own.
func TestClientsAreCountedByIPv6Slash64(t *testing.T) {
	f := newFixture(t, 0)
	h := f.svc.Handler(f.pages)
	for i := range 10 {
		if code := postFrom(t, h, fmt.Sprintf("[2001:db8:1:2::%x]:1000", i+1), "/status/acme/subscribe", fmt.Sprintf(`{"email":"a%d@example.com"}`, i)); code != http.StatusAccepted {
			t.Fatalf("subscribe %d from the /64: %d, want 202", i+1, code)
		}
	}
	if code := postFrom(t, h, "[2001:db8:1:2:ffff:ffff:ffff:ffff]:1000", "/status/acme/subscribe", `{"email":"b@example.com"}`); code != http.StatusTooManyRequests {
		t.Fatalf("an 11th subscribe from another address of the /64: %d, want 429", code)
	}
	if code := postFrom(t, h, "[2001:db8:1:3::1]:1000", "/status/acme/subscribe", `{"email":"c@example.com"}`); code != http.StatusAccepted {
		t.Fatalf("a subscribe from another /64: %d, want 202", code)
	}
	for i := range 10 {
		postFrom(t, h, "192.0.2.9:1000", "/status/acme/subscribe", fmt.Sprintf(`{"email":"d%d@example.com"}`, i))
	}
	if code := postFrom(t, h, "[::ffff:192.0.2.9]:1000", "/status/acme/subscribe", `{"email":"e@example.com"}`); code != http.StatusTooManyRequests {
		t.Fatalf("the IPv4-mapped form of a spent IPv4 client: %d, want 429", code)
	}
}

// TestFullLimiterKeepsSpentBuckets: when maxTracked buckets are kept, a
// new one drops those that are full again (as good as new) and keeps the
// spent ones, so a flood of fresh clients does not refill a spent client.
func TestFullLimiterKeepsSpentBuckets(t *testing.T) {
	m := map[string]*rate.Limiter{}
	for i := range maxTracked {
		bucket(m, fmt.Sprint(i), perClient, perClientBurst, t0)
	}
	spent := m["0"]
	if !spent.AllowN(t0, perClientBurst) {
		t.Fatal("a new bucket was not full")
	}
	bucket(m, "new", perClient, perClientBurst, t0)
	if len(m) != 2 || m["0"] != spent {
		t.Fatalf("after one more client: %d buckets kept, the spent one kept: %v; want 2 and true", len(m), m["0"] == spent)
	}
}

// TestSubscribeAnswersBeforeTheMail: a subscribe is answered before the
// address is looked up, its record written or its confirmation mail sent
// (RunConfirmations does those), so the answer takes as long for an
// address that is mailed as for one already pending or confirmed; a
// subscribe that did them first told anyone which addresses had
// subscribed (about 25 ms against 2 ms with a relay on loopback). A mail
// the relay fails leaves the address to be mailed by its next subscribe at
// once.
func TestSubscribeAnswersBeforeTheMail(t *testing.T) {
	f := newFixture(t, 0)
	h := f.svc.Handler(f.pages)
	if code, _ := post(t, h, "/status/acme/subscribe", "application/json", `{"email":"new@example.com"}`); code != http.StatusAccepted {
		t.Fatalf("subscribe: %d", code)
	}
	stored := func() int {
		t.Helper()
		n, err := f.st.CountObjectsOf(t.Context(), store.KindSubscriber, f.page.ID)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n, m := stored(), len(f.mail.sentNow()); n != 0 || m != 0 {
		t.Fatalf("before the subscribe was answered: %d records written, %d mails sent; want none", n, m)
	}
	if m, n := len(f.mail.mails()), stored(); n != 1 || m != 1 {
		t.Fatalf("after it: %d records, %d mails; want 1 and 1", n, m)
	}

	f.mail.fail = errors.New("relay down")
	if code, _ := post(t, h, "/status/acme/subscribe", "application/json", `{"email":"other@example.com"}`); code != http.StatusAccepted {
		t.Fatalf("subscribe with the relay down: %d, want 202", code)
	}
	f.mail.mails()
	f.mail.fail = nil
	if code, _ := post(t, h, "/status/acme/subscribe", "application/json", `{"email":"other@example.com"}`); code != http.StatusAccepted {
		t.Fatalf("subscribe again: %d", code)
	}
	if got := f.mail.mails(); len(got) != 2 || got[1].To != "other@example.com" {
		t.Fatalf("after the relay failed, a subscribe of the same address at once: %d mails in all, want 2 (the second to it)", len(got))
	}
}

// TestSubscribeAnswersAlikeAndMailsOnce: new, pending and confirmed
// addresses get the same answer; one confirmation mail per address per
// hour; the link confirms; the address is sealed at rest and appears in
// no answer.
func TestSubscribeAnswersAlikeAndMailsOnce(t *testing.T) {
	f := newFixture(t, 0)
	h := f.svc.Handler(f.pages)
	const addr = "Jane.Doe@Example.COM"
	var answers []string
	subscribe := func() {
		code, body := post(t, h, "/status/acme/subscribe", "application/json", `{"email":"`+addr+`"}`)
		if code != http.StatusAccepted || strings.Contains(strings.ToLower(body), "jane") {
			t.Fatalf("subscribe: %d %s", code, body)
		}
		answers = append(answers, body)
	}
	subscribe() // new
	subscribe() // pending
	if n := len(f.mail.mails()); n != 1 {
		t.Fatalf("%d confirmation mails, want 1", n)
	}
	m := f.mail.mails()[0]
	if m.To != "Jane.Doe@example.com" {
		t.Fatalf("mailed %q, want the address with its domain lower-cased", m.To)
	}
	r := httptest.NewRequest(http.MethodPost, "/status/acme/confirm?t="+url.QueryEscape(tokenIn(t, m.Body, "confirm")), nil)
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if w.Code != http.StatusOK {
		t.Fatalf("confirm: %d", w.Code)
	}
	f.clk.Advance(2 * time.Hour)
	subscribe() // confirmed
	if answers[0] != answers[1] || answers[1] != answers[2] {
		t.Fatalf("answers differ: %q", answers)
	}
	if n := len(f.mail.mails()); n != 1 {
		t.Fatalf("%d mails after subscribing a confirmed address, want still 1", n)
	}
	docs, err := f.st.ListObjectsOf(t.Context(), store.KindSubscriber, "pg1")
	if err != nil || len(docs) != 1 {
		t.Fatalf("subscribers of the page: %d, %v", len(docs), err)
	}
	for _, doc := range docs {
		s, _ := model.DecodeSubscriber(doc)
		if s.State != model.SubscriberConfirmed || !seal.IsSealed(s.Address) || strings.Contains(strings.ToLower(string(doc)), "jane") {
			t.Fatalf("stored %s: want confirmed with a sealed address", doc)
		}
	}
}

// TestSubscribeBounds: a page's cap (409 for every address alike), the
// per-client rate (429), a bad address and an oversized body (400), an
// unknown page (404).
func TestSubscribeBounds(t *testing.T) {
	f := newFixture(t, 2)
	h := f.svc.Handler(f.pages)
	form := "application/x-www-form-urlencoded"
	for _, a := range []string{"a@example.com", "b@example.com"} {
		if code, body := post(t, h, "/status/acme/subscribe", form, "email="+url.QueryEscape(a)); code != http.StatusAccepted {
			t.Fatalf("subscribe %s: %d %s", a, code, body)
		}
	}
	f.mail.mails() // RunConfirmations carries them out
	for _, a := range []string{"c@example.com", "a@example.com"} {
		if code, _ := post(t, h, "/status/acme/subscribe", form, "email="+a); code != http.StatusConflict {
			t.Fatalf("past the cap, %s: %d, want 409 for known and new alike", a, code)
		}
	}
	for name, c := range map[string]struct {
		path, body string
		code       int
	}{
		"not an address": {"/status/acme/subscribe", "email=" + url.QueryEscape("Jane <j@example.com>"), http.StatusBadRequest},
		"oversized body": {"/status/acme/subscribe", "email=" + strings.Repeat("a", MaxBody), http.StatusBadRequest},
		"unknown page":   {"/status/nope/subscribe", "email=x@example.com", http.StatusNotFound},
	} {
		if code, _ := post(t, h, c.path, form, c.body); code != c.code {
			t.Errorf("%s: %d, want %d", name, code, c.code)
		}
	}
	var limited bool
	for range perClientBurst + 1 {
		if code, _ := post(t, h, "/status/acme/subscribe", form, "email=z@example.com"); code == http.StatusTooManyRequests {
			limited = true
		}
	}
	if !limited {
		t.Fatal("a client past its burst was not limited")
	}
}

// TestUnsubscribeIsOneClick: the notice carries List-Unsubscribe and the
// RFC 8058 header; GET of the link changes nothing, POST deletes.
func TestUnsubscribeIsOneClick(t *testing.T) {
	f := newFixture(t, 0)
	h := f.svc.Handler(f.pages)
	post(t, h, "/status/acme/subscribe", "application/json", `{"email":"j@example.com"}`)
	confirm := tokenIn(t, f.mail.mails()[0].Body, "confirm")
	if err := f.svc.Confirm(t.Context(), f.page, confirm); err != nil {
		t.Fatal(err)
	}
	docs, _ := f.st.ListObjectsOf(t.Context(), store.KindSubscriber, "pg1")
	var sub model.Subscriber
	for _, doc := range docs {
		sub, _ = model.DecodeSubscriber(doc)
	}
	n := model.SubscriberNotice{Key: "k", Page: f.page, Subscriber: sub, Endpoint: model.Endpoint{Name: "search"},
		Event: model.IncidentEvent{Name: "opened", Kind: model.IncidentEventOpened, At: t0}}
	if err := f.svc.NotifySubscriber(t.Context(), n); err != nil {
		t.Fatal(err)
	}
	notice := f.mail.mails()[1]
	if notice.To != "j@example.com" || notice.Headers["List-Unsubscribe-Post"] != "List-Unsubscribe=One-Click" || !strings.HasPrefix(notice.Headers["List-Unsubscribe"], "<https://status.example.com/status/acme/unsubscribe?t=") {
		t.Fatalf("notice %+v: want the one-click headers", notice)
	}
	link := "/status/acme/unsubscribe?t=" + url.QueryEscape(tokenIn(t, notice.Body, "unsubscribe"))
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, link, nil))
	if n, _ := f.st.CountObjectsOf(t.Context(), store.KindSubscriber, "pg1"); w.Code != http.StatusOK || n != 1 {
		t.Fatalf("GET unsubscribe: %d, %d subscribers; want 200 and no change", w.Code, n)
	}
	if code, _ := post(t, h, link, "application/x-www-form-urlencoded", "List-Unsubscribe=One-Click"); code != http.StatusOK {
		t.Fatalf("POST unsubscribe: %d", code)
	}
	if n, _ := f.st.CountObjectsOf(t.Context(), store.KindSubscriber, "pg1"); n != 0 {
		t.Fatalf("%d subscribers after unsubscribing, want 0", n)
	}
}

// TestPruneDropsUnconfirmed: a pending subscriber is dropped once its
// link has expired; its link no longer confirms.
func TestPruneDropsUnconfirmed(t *testing.T) {
	f := newFixture(t, 0)
	post(t, f.svc.Handler(f.pages), "/status/acme/subscribe", "application/json", `{"email":"j@example.com"}`)
	tok := tokenIn(t, f.mail.mails()[0].Body, "confirm")
	if p, err := Prune(t.Context(), f.st, f.clk.Now()); p != (Pruned{}) || err != nil {
		t.Fatalf("prune before expiry: %+v %v", p, err)
	}
	f.clk.Advance(model.ConfirmTTL)
	if err := f.svc.Confirm(t.Context(), f.page, tok); !errors.Is(err, ErrBadToken) {
		t.Fatalf("confirm after expiry: %v", err)
	}
	if p, err := Prune(t.Context(), f.st, f.clk.Now()); p != (Pruned{Expired: 1}) || err != nil {
		t.Fatalf("prune after expiry: %+v %v", p, err)
	}
}

// TestPruneDeletesSubscribersOfDeletedPages: a subscriber, e-mail or
// webhook, confirmed or not, whose page no longer exists is deleted;
// those of a live page stay.
func TestPruneDeletesSubscribersOfDeletedPages(t *testing.T) {
	f := newFixture(t, 0)
	put := func(sub model.Subscriber) {
		t.Helper()
		doc, _ := json.Marshal(sub)
		if err := f.st.PutObject(t.Context(), store.KindSubscriber, sub.ID, doc); err != nil {
			t.Fatal(err)
		}
	}
	confirmed := model.Subscriber{State: model.SubscriberConfirmed, CreatedAt: t0, ConfirmedAt: t0, Address: "sealed:v1:x:y"}
	for _, c := range []struct{ id, page string }{{"live-mail", "pg1"}, {"gone-mail", "pg-deleted"}} {
		sub := confirmed
		sub.ID, sub.Page = c.id, c.page
		put(sub)
	}
	put(SealWebhook(nil, model.Subscriber{ID: "gone-hook", Page: "pg-deleted", State: model.SubscriberConfirmed, CreatedAt: t0, ConfirmedAt: t0}, "https://hooks.example.com/h", ""))
	put(model.Subscriber{ID: "gone-pending", Page: "pg-deleted", State: model.SubscriberPending, CreatedAt: t0, ConfirmBy: t0.Add(model.ConfirmTTL)})

	p, err := Prune(t.Context(), f.st, f.clk.Now())
	if err != nil || p != (Pruned{Orphaned: 3}) {
		t.Fatalf("prune: %+v %v, want 3 orphans", p, err)
	}
	docs, err := f.st.ListObjects(t.Context(), store.KindSubscriber)
	if err != nil || len(docs) != 1 || docs["live-mail"] == nil {
		t.Fatalf("left %d subscribers (%v): want live-mail alone", len(docs), err)
	}
}

// TestLinkKeysAreMadeOnce: replicas share one list of link keys, made
// once, sealed at rest when there is a keyring, its first key the seed.
func TestLinkKeysAreMadeOnce(t *testing.T) {
	f := newFixture(t, 0)
	kr, _ := seal.NewKeyring(seal.NewKey())
	seed := kr.Derive(KeyLabel)[0]
	a, err := LinkKeys(t.Context(), f.st, kr, "a", seed)
	if err != nil || len(a) != 1 || !bytes.Equal(a[0], seed) {
		t.Fatalf("first replica: %x %v; want the seed alone", a, err)
	}
	b, err := LinkKeys(t.Context(), f.st, kr, "b", []byte("another seed"))
	if err != nil || len(b) != 1 || !bytes.Equal(b[0], seed) {
		t.Fatalf("second replica: %x %v; want the first's list", b, err)
	}
	doc, _ := f.st.GetObject(t.Context(), store.KindSubscribeKey, storedKeyID)
	if !strings.Contains(string(doc), seal.Prefix) || strings.Contains(string(doc), base64.StdEncoding.EncodeToString(seed)) {
		t.Fatalf("stored %s: want the key sealed", doc)
	}
}

// TestNoticesSayWhenTheIncidentBegan: the opened and resolved mails name
// the same beginning as the status page (the first failure), not the
// opened mail the first failure and the resolved one the time it was
// paged; a record without a first failure began with its opening window.
func TestNoticesSayWhenTheIncidentBegan(t *testing.T) {
	first, opened := t0, t0.Add(28*time.Second)
	resolved := opened.Add(10 * time.Minute)
	inc := model.Incident{FirstFailure: first, OpenedWindow: first, OpenedAt: opened, ResolvedAt: &resolved}
	for _, kind := range []string{model.IncidentEventOpened, model.IncidentEventResolved} {
		n := model.SubscriberNotice{Endpoint: model.Endpoint{Name: "search"}, Incident: inc,
			Event: model.IncidentEvent{Name: kind, Kind: kind, At: resolved}}
		_, body := noticeText(n, "https://status.example.com", "https://u.example.com")
		if !strings.Contains(body, ts(first)) || strings.Contains(body, ts(opened)) {
			t.Errorf("%s mail:\n%s\nwant the first failure %s, not the opening %s", kind, body, ts(first), ts(opened))
		}
	}
	old := model.Incident{OpenedWindow: first, OpenedAt: opened}
	if got := old.Began(); !got.Equal(first) {
		t.Errorf("Began of a record without a first failure = %v, want its opening window %v", got, first)
	}
}
