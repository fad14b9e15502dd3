package daemon

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	apiv1 "github.com/mcpmon/mcpmon/pkg/api/v1"
	"github.com/mcpmon/mcpmon/pkg/config"
	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/seal"
	"github.com/mcpmon/mcpmon/pkg/store"
)

// mailpit is the real SMTP server .ci/start-smtp.sh starts.
type mailpit struct{ addr, api, ca string }

func smtpPeer(t *testing.T) mailpit {
	t.Helper()
	p := mailpit{os.Getenv("MCPMON_TEST_SMTP_ADDR"), os.Getenv("MCPMON_TEST_SMTP_API"), os.Getenv("MCPMON_TEST_SMTP_CA")}
	if p.addr == "" || p.api == "" || p.ca == "" {
		if os.Getenv("MCPMON_REQUIRE_PEERS") == "1" {
			t.Fatal("MCPMON_TEST_SMTP_* not set (run .ci/start-smtp.sh)")
		}
		t.Skip("no mailpit: eval \"$(bash .ci/start-smtp.sh DIR)\"")
	}
	return p
}

type mpMessage struct {
	ID      string
	Subject string
}

// to lists what mailpit holds for address, oldest first.
func (p mailpit) to(t *testing.T, address string) []mpMessage {
	t.Helper()
	var res struct{ Messages []mpMessage }
	p.get(t, "/api/v1/search?query="+url.QueryEscape("to:"+address), &res)
	for i, j := 0, len(res.Messages)-1; i < j; i, j = i+1, j-1 {
		res.Messages[i], res.Messages[j] = res.Messages[j], res.Messages[i]
	}
	return res.Messages
}

func (p mailpit) get(t *testing.T, path string, v any) {
	t.Helper()
	resp, err := http.Get(p.api + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("mailpit %s: %d %s", path, resp.StatusCode, b)
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatal(err)
	}
}

// text and headers of one message.
func (p mailpit) read(t *testing.T, id string) (string, map[string][]string) {
	t.Helper()
	var m struct{ Text string }
	p.get(t, "/api/v1/message/"+id, &m)
	var h map[string][]string
	p.get(t, "/api/v1/message/"+id+"/headers", &h)
	return m.Text, h
}

const subsBase = "http://status.test"

var linkRE = regexp.MustCompile(regexp.QuoteMeta(subsBase) + `(/status/[^\s>]+)`)

// link finds the first link of the mail with the action and returns its
// path and query, to be requested from the running daemon.
func link(t *testing.T, text, action string) string {
	t.Helper()
	for _, m := range linkRE.FindAllStringSubmatch(text, -1) {
		if strings.Contains(m[1], "/"+action+"?") {
			return m[1]
		}
	}
	t.Fatalf("no %s link in:\n%s", action, text)
	return ""
}

func call(t *testing.T, method, u string, body url.Values) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, u, strings.NewReader(body.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestEmailSubscriptionEndToEnd: two addresses subscribe to a status page
// through mailpit (one twice: one answer, one mail), follow their
// confirmation links, and get exactly one mail each for the incident's
// opening, its update and its resolution, each with List-Unsubscribe and
// one-click headers and no other subscriber's address. One unsubscribes
// with the one-click POST; of the next incident only the other hears.
func TestEmailSubscriptionEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for two incidents (~30s)")
	}
	mp := smtpPeer(t)
	healthy := sdkHandler("subs-demo", "1.0.0")
	failing := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { http.Error(w, "down", http.StatusInternalServerError) })
	srv := newSwitchServer(t, healthy)
	d := startEmbedded(t, func(o *config.Options) {
		o.SubscribeSMTPAddr, o.SubscribeSMTPFrom, o.SubscribeBaseURL = mp.addr, "Status <status@mcpmon.example>", subsBase
		o.SubscribeSMTPTLS, o.SubscribeSMTPCAFile = "require-starttls", mp.ca
	})
	api := apiClient{addr: d.Addr()}
	epID := register(t, d.Addr(), map[string]any{"name": "Subs Demo", "url": srv.url, "schedule": "@every 1s", "timeout": "1s", "public": true, "slug": "subs-demo-ep"})
	resp := api.do(t, http.MethodPost, "/v1/status-pages", strings.NewReader(`{"slug":"subs-demo","title":"Subs Demo status","groups":[{"name":"All"}]}`))
	var page struct{ ID string }
	if err := json.NewDecoder(resp.Body).Decode(&page); err != nil || resp.StatusCode != http.StatusCreated {
		t.Fatalf("POST /v1/status-pages: %d %v", resp.StatusCode, err)
	}
	resp.Body.Close()
	run := time.Now().UnixNano()
	alice, bob := fmt.Sprintf("alice-%d@example.com", run), fmt.Sprintf("bob-%d@example.com", run)
	base := "http://" + d.Addr()
	// The page offers the form the subscriptions below post, as a visitor
	// would find it.
	if code, body := call(t, http.MethodGet, base+"/status/subs-demo", nil); code != http.StatusOK ||
		!strings.Contains(body, `method="post" action="/status/subs-demo/subscribe"`) || !strings.Contains(body, `name="email"`) {
		t.Fatalf("GET /status/subs-demo: %d, want the page with its subscription form:\n%s", code, body)
	}
	for _, a := range []string{alice, alice, bob} {
		code, body := call(t, http.MethodPost, base+"/status/subs-demo/subscribe", url.Values{"email": {a}})
		if code != http.StatusAccepted || strings.Contains(body, a) {
			t.Fatalf("subscribe: %d %s", code, body)
		}
	}
	unsub := map[string]string{}
	for _, a := range []string{alice, bob} {
		var msgs []mpMessage
		eventually(t, 10*time.Second, "a confirmation mail to "+a, func() bool { msgs = mp.to(t, a); return len(msgs) > 0 })
		if len(msgs) != 1 {
			t.Fatalf("%s got %d confirmation mails, want 1 (subscribing twice mails once)", a, len(msgs))
		}
		text, _ := mp.read(t, msgs[0].ID)
		if code, body := call(t, http.MethodPost, base+link(t, text, "confirm"), url.Values{}); code != http.StatusOK {
			t.Fatalf("confirm: %d %s", code, body)
		}
	}

	openIncident := func() string {
		var incID string
		eventually(t, 30*time.Second, "an open incident", func() bool {
			var out struct{ Incidents []apiv1.IncidentView }
			_ = json.Unmarshal([]byte(api.get(t, "/v1/incidents?state=open&endpoint="+epID)), &out)
			if len(out.Incidents) > 0 {
				incID = out.Incidents[0].ID
			}
			return incID != ""
		})
		return incID
	}
	waitMails := func(a string, n int) []mpMessage {
		var msgs []mpMessage
		eventually(t, 30*time.Second, fmt.Sprintf("%d mails to %s", n, a), func() bool { msgs = mp.to(t, a); return len(msgs) >= n })
		return msgs
	}

	srv.set(failing)
	incID := openIncident()
	waitMails(alice, 2)
	waitMails(bob, 2)
	resp = api.do(t, http.MethodPost, "/v1/incidents/"+incID+"/updates", strings.NewReader(`{"status":"identified","message":"A bad deploy; rolling back."}`))
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("post update: %d", resp.StatusCode)
	}
	waitMails(alice, 3)
	waitMails(bob, 3)
	srv.set(healthy)
	for _, a := range []string{alice, bob} {
		msgs := waitMails(a, 4)
		subjects := []string{}
		for _, m := range msgs[1:] {
			subjects = append(subjects, m.Subject)
			text, h := mp.read(t, m.ID)
			if len(h["List-Unsubscribe-Post"]) != 1 || h["List-Unsubscribe-Post"][0] != "List-Unsubscribe=One-Click" || len(h["List-Unsubscribe"]) != 1 {
				t.Fatalf("notice %q headers %v: want RFC 8058 List-Unsubscribe and List-Unsubscribe-Post", m.Subject, h)
			}
			other := bob
			if a == bob {
				other = alice
			}
			if strings.Contains(text, other) || strings.Contains(strings.Join(h["To"], ","), other) {
				t.Fatalf("a mail to %s names %s", a, other)
			}
			unsub[a] = link(t, text, "unsubscribe")
		}
		want := []string{"[Subs Demo status] Incident: Subs Demo", "[Subs Demo status] Update (identified): Subs Demo", "[Subs Demo status] Resolved: Subs Demo"}
		if strings.Join(subjects, "|") != strings.Join(want, "|") {
			t.Fatalf("%s got %q, want %q", a, subjects, want)
		}
	}
	eventually(t, 30*time.Second, "the incident resolved", func() bool {
		return !strings.Contains(api.get(t, "/v1/incidents?state=open&endpoint="+epID), incID)
	})

	// One-click unsubscribe (RFC 8058): GET only asks, POST unsubscribes.
	if code, body := call(t, http.MethodGet, base+unsub[alice], nil); code != http.StatusOK || !strings.Contains(body, "<form") {
		t.Fatalf("GET unsubscribe: %d %s", code, body)
	}
	if code, body := call(t, http.MethodPost, base+unsub[alice], url.Values{"List-Unsubscribe": {"One-Click"}}); code != http.StatusOK {
		t.Fatalf("POST unsubscribe: %d %s", code, body)
	}
	srv.set(failing)
	waitMails(bob, 5) // bob hears of the second incident, so a sweep has run
	if n := len(mp.to(t, alice)); n != 4 {
		t.Fatalf("after unsubscribing alice got %d mails, want still 4", n)
	}
	docs, err := d.st.ListObjects(t.Context(), store.KindSubscriber)
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range docs {
		if strings.Contains(string(doc), alice) || strings.Contains(string(doc), bob) {
			t.Fatalf("a subscriber's address is stored in plain: %s", doc)
		}
	}
	if len(docs) != 1 {
		t.Fatalf("%d subscribers stored, want bob's only", len(docs))
	}
	// The owner sees counts and masked addresses only.
	var owner apiv1.SubscribersView
	if err := json.Unmarshal([]byte(api.get(t, "/v1/status-pages/"+page.ID+"/subscribers")), &owner); err != nil {
		t.Fatal(err)
	}
	if owner.Confirmed != 1 || len(owner.Items) != 1 || owner.Items[0].Address != "b***@example.com" {
		t.Fatalf("owner view %+v: want bob alone, masked", owner)
	}
}

// TestRotateThenDroppingTheOldKeyKeepsSubscribers: a confirmed subscriber
// survives `mcpmon secrets rotate` followed by removing the old key from
// secrets.key, as rotate's output invites: subscribing the address again
// mails nothing and makes no second subscriber, and the record is sealed
// under the new key.
func TestRotateThenDroppingTheOldKeyKeepsSubscribers(t *testing.T) {
	mp := smtpPeer(t)
	o := fastOptions(t)
	o.Auth, o.ReplicaID = config.AuthNone, "rotate-test"
	o.SubscribeSMTPAddr, o.SubscribeSMTPFrom, o.SubscribeBaseURL = mp.addr, "Status <status@mcpmon.example>", subsBase
	o.SubscribeSMTPTLS, o.SubscribeSMTPCAFile = "require-starttls", mp.ca
	start := func() *Daemon {
		t.Helper()
		d, err := Start(t.Context(), RoleAll, o, Deps{Logger: testLogger(t)})
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	addr := fmt.Sprintf("rotated-%d@example.com", time.Now().UnixNano())
	subscribe := func(d *Daemon) {
		t.Helper()
		if code, body := call(t, http.MethodPost, "http://"+d.Addr()+"/status/rotated/subscribe", url.Values{"email": {addr}}); code != http.StatusAccepted {
			t.Fatalf("subscribe: %d %s", code, body)
		}
	}

	d := start()
	resp := apiClient{addr: d.Addr()}.do(t, http.MethodPost, "/v1/status-pages", strings.NewReader(`{"slug":"rotated","title":"Rotated","groups":[{"name":"All"}]}`))
	var page struct{ ID string }
	if err := json.NewDecoder(resp.Body).Decode(&page); err != nil || resp.StatusCode != http.StatusCreated {
		t.Fatalf("POST /v1/status-pages: %d %v", resp.StatusCode, err)
	}
	resp.Body.Close()
	subscribe(d)
	var msgs []mpMessage
	eventually(t, 10*time.Second, "a confirmation mail", func() bool { msgs = mp.to(t, addr); return len(msgs) > 0 })
	text, _ := mp.read(t, msgs[0].ID)
	if code, body := call(t, http.MethodPost, "http://"+d.Addr()+link(t, text, "confirm"), url.Values{}); code != http.StatusOK {
		t.Fatalf("confirm: %d %s", code, body)
	}
	d.Stop()
	_ = d.Wait()

	var out, errOut bytes.Buffer
	env := func(k string) string { return map[string]string{"MCPMON_DATA_DIR": o.DataDir}[k] }
	if err := RotateSecrets(t.Context(), nil, env, &out, &errOut); err != nil {
		t.Fatalf("secrets rotate: %v\n%s", err, errOut.String())
	}
	if !strings.Contains(out.String(), "1 status page subscribers") || !strings.Contains(out.String(), "no longer needed") {
		t.Fatalf("secrets rotate said:\n%s", out.String())
	}
	keyPath := filepath.Join(o.DataDir, SecretsKeyFileName)
	keys, err := seal.LoadKeyFile(keyPath)
	if err != nil || len(keys) != 2 {
		t.Fatalf("key file after rotate: %d keys, %v", len(keys), err)
	}
	if err := seal.WriteKeyFile(keyPath, keys[:1]); err != nil {
		t.Fatal(err)
	}

	d = start()
	defer func() { d.Stop(); _ = d.Wait() }()
	subscribe(d)
	if n := len(mp.to(t, addr)); n != 1 {
		t.Fatalf("%d mails after subscribing again with the old key removed, want still the 1 confirmation", n)
	}
	docs, err := d.st.ListObjectsOf(t.Context(), store.KindSubscriber, page.ID)
	if err != nil || len(docs) != 1 {
		t.Fatalf("%d subscribers (%v), want the one", len(docs), err)
	}
	for _, doc := range docs {
		sub, _ := model.DecodeSubscriber(doc)
		if id, _ := seal.SealedKeyID(sub.Address); sub.State != model.SubscriberConfirmed || id != seal.KeyID(keys[0]) {
			t.Fatalf("subscriber %+v: want confirmed, sealed under the new key", sub)
		}
	}
}
