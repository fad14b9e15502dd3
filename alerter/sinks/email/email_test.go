package email

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime/quotedprintable"
	"net"
	"net/http"
	"net/mail"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/mcpmon/mcpmon/pkg/alert"
	"github.com/mcpmon/mcpmon/pkg/clock"
)

// Environment written by .ci/start-smtp.sh (a real mailpit SMTP server).
const (
	envSMTPAddr = "MCPMON_TEST_SMTP_ADDR"
	envSMTPAPI  = "MCPMON_TEST_SMTP_API"
	envSMTPCA   = "MCPMON_TEST_SMTP_CA"
	envRequire  = "MCPMON_REQUIRE_PEERS"
)

const password = "sm7p-Pa55word-do-not-leak"

var sent = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)

type smtpPeer struct {
	addr string
	api  string
	ca   *x509.CertPool
}

// peer returns the mailpit that `make test` started, or skips (fails under
// MCPMON_REQUIRE_PEERS=1) when there is none.
func peer(t *testing.T) smtpPeer {
	t.Helper()
	p := smtpPeer{addr: os.Getenv(envSMTPAddr), api: os.Getenv(envSMTPAPI)}
	if p.addr == "" || p.api == "" || os.Getenv(envSMTPCA) == "" {
		if os.Getenv(envRequire) == "1" {
			t.Fatalf("%s/%s/%s not set but %s=1: `make test` should have run .ci/start-smtp.sh", envSMTPAddr, envSMTPAPI, envSMTPCA, envRequire)
		}
		t.Skipf("%s not set: run `eval \"$(.ci/start-smtp.sh DIR)\"` (or `make test`) for a real SMTP server", envSMTPAddr)
	}
	pem, err := os.ReadFile(os.Getenv(envSMTPCA))
	if err != nil {
		t.Fatal(err)
	}
	p.ca = x509.NewCertPool()
	if !p.ca.AppendCertsFromPEM(pem) {
		t.Fatalf("%s holds no certificate", os.Getenv(envSMTPCA))
	}
	return p
}

// uniqueKey keeps runs against the same mailpit apart.
func uniqueKey(t *testing.T, kind alert.Kind) string {
	return fmt.Sprintf("alert-ep1-%s-%d:%s:mail", strings.ReplaceAll(t.Name(), "/", "_"), time.Now().UnixNano(), kind)
}

func notification(kind alert.Kind) alert.Notification {
	n := alert.Notification{
		Kind:         kind,
		EndpointID:   "ep1",
		EndpointName: "billing MCP ✓",
		EndpointURL:  "https://mcp.example.com/mcp",
		Labels:       map[string]string{"team": "payments"},
		IncidentID:   "ep1-20260304T050000Z",
		State:        "open",
		Class:        "timeout",
		Reason:       "initialize timed out after 10s",
		FirstFailure: time.Date(2026, 3, 4, 4, 59, 0, 0, time.UTC),
		OpenedAt:     time.Date(2026, 3, 4, 5, 0, 0, 0, time.UTC),
	}
	if kind == alert.KindResolve {
		n.State = "resolved"
		r := n.OpenedAt.Add(45 * time.Minute)
		n.ResolvedAt = &r
	}
	return n
}

func (p smtpPeer) sink(t *testing.T, mut func(*Options)) (*Sink, *bytes.Buffer) {
	t.Helper()
	var logs bytes.Buffer
	o := Options{
		Name: "mail", Addr: p.addr, Username: "mcpmon-user", Password: password, TLS: TLSRequire,
		RootCAs: p.ca, From: "mcpmon alerts <alerts@mcpmon.example>", To: []string{"oncall@example.com", "Team Lead <lead@example.com>"},
		Timeout: 10 * time.Second, Clock: clock.NewFake(sent),
		Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	}
	if mut != nil {
		mut(&o)
	}
	s, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	return s, &logs
}

type mpAddress struct{ Name, Address string }

type mpSummary struct {
	ID        string
	MessageID string
	From      mpAddress
	To        []mpAddress
	Subject   string
	Username  string
}

func (p smtpPeer) get(t *testing.T, path string, v any) {
	t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, p.api+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("mailpit %s: %d %s", path, resp.StatusCode, b)
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatalf("mailpit %s: %v", path, err)
	}
}

// byMessageID returns what mailpit received with that Message-ID. SMTP DATA
// is acknowledged only after mailpit stored the message, so no waiting.
func (p smtpPeer) byMessageID(t *testing.T, id string) []mpSummary {
	t.Helper()
	var res struct{ Messages []mpSummary }
	p.get(t, "/api/v1/search?query="+url.QueryEscape("message-id:"+id), &res)
	var out []mpSummary
	for _, m := range res.Messages {
		if m.MessageID == id {
			out = append(out, m)
		}
	}
	return out
}

func TestDeliveredThroughRealSMTPServer(t *testing.T) {
	p := peer(t)
	s, logs := p.sink(t, nil)
	open, resolve := notification(alert.KindOpen), notification(alert.KindResolve)
	open.Key, resolve.Key = uniqueKey(t, alert.KindOpen), uniqueKey(t, alert.KindResolve)
	open.IncidentID = open.Key[:30] // a per-run incident so threads do not mix
	resolve.IncidentID = open.IncidentID
	ctx := context.Background()
	for _, n := range []alert.Notification{open, resolve} {
		if err := s.Notify(ctx, n); err != nil {
			t.Fatalf("Notify(%s): %v", n.Kind, err)
		}
	}
	thread := IncidentThreadID(open.IncidentID, "mcpmon.example")
	for _, tc := range []struct {
		n           alert.Notification
		subject     string
		text        []string
		inReplyTo   string
		messageIDIn string
	}{
		{open, "[mcpmon] DOWN: billing MCP ✓ (timeout)", []string{
			"MCP endpoint billing MCP ✓ (https://mcp.example.com/mcp) is DOWN.",
			"Reason:        timeout: initialize timed out after 10s",
			"Incident:      " + open.IncidentID,
			"First failure: 2026-03-04T04:59:00Z",
			"Opened:        2026-03-04T05:00:00Z",
			"Labels:        team=payments",
		}, "", ""},
		{resolve, "[mcpmon] RESOLVED: billing MCP ✓", []string{
			"MCP endpoint billing MCP ✓ (https://mcp.example.com/mcp) is UP again.",
			"Resolved:      2026-03-04T05:45:00Z",
			"Duration:      45m0s",
		}, "<" + thread + ">", ""},
	} {
		id := MessageID(tc.n.Key, "mcpmon.example")
		got := p.byMessageID(t, id)
		if len(got) != 1 {
			t.Fatalf("%s: mailpit holds %d messages with Message-ID %s, want 1", tc.n.Kind, len(got), id)
		}
		m := got[0]
		if m.Subject != tc.subject {
			t.Errorf("%s: Subject = %q, want %q", tc.n.Kind, m.Subject, tc.subject)
		}
		if m.From != (mpAddress{"mcpmon alerts", "alerts@mcpmon.example"}) {
			t.Errorf("%s: From = %+v", tc.n.Kind, m.From)
		}
		if len(m.To) != 2 || m.To[0].Address != "oncall@example.com" || m.To[1] != (mpAddress{"Team Lead", "lead@example.com"}) {
			t.Errorf("%s: To = %+v", tc.n.Kind, m.To)
		}
		if m.Username != "mcpmon-user" {
			t.Errorf("%s: SMTP AUTH user = %q, want mcpmon-user (was the session authenticated?)", tc.n.Kind, m.Username)
		}
		var full struct{ Text string }
		p.get(t, "/api/v1/message/"+m.ID, &full)
		for _, line := range tc.text {
			if !strings.Contains(full.Text, line) {
				t.Errorf("%s: body lacks %q:\n%s", tc.n.Kind, line, full.Text)
			}
		}
		var hdr map[string][]string
		p.get(t, "/api/v1/message/"+m.ID+"/headers", &hdr)
		want := map[string]string{
			"Date":                      "Wed, 04 Mar 2026 05:06:07 +0000",
			"Message-Id":                "<" + id + ">",
			"Mime-Version":              "1.0",
			"Content-Type":              "text/plain; charset=utf-8",
			"Content-Transfer-Encoding": "quoted-printable",
			"Auto-Submitted":            "auto-generated",
			"References":                "<" + thread + ">",
			"X-Mcpmon-Event":            string(tc.n.Kind),
			"X-Mcpmon-Incident":         tc.n.IncidentID,
			"X-Mcpmon-Key":              tc.n.Key,
		}
		if tc.inReplyTo != "" {
			want["In-Reply-To"] = tc.inReplyTo
		}
		canon := map[string][]string{}
		for k, v := range hdr {
			canon[strings.ToLower(k)] = v
		}
		for k, v := range want {
			if got := canon[strings.ToLower(k)]; len(got) != 1 || got[0] != v {
				t.Errorf("%s: header %s = %q, want %q", tc.n.Kind, k, got, v)
			}
		}
		if tc.inReplyTo == "" && len(canon["in-reply-to"]) > 0 {
			t.Errorf("%s: the opening mail must not be a reply", tc.n.Kind)
		}
	}
	if strings.Contains(logs.String(), password) {
		t.Errorf("logs leak the SMTP password: %s", logs)
	}
	if !strings.Contains(logs.String(), "email alert sent") {
		t.Errorf("no debug log for a sent mail: %s", logs)
	}
}

func TestResendKeepsMessageID(t *testing.T) {
	p := peer(t)
	s, _ := p.sink(t, nil)
	n := notification(alert.KindOpen)
	n.Key = uniqueKey(t, alert.KindOpen)
	for range 2 { // a crash between send and ledger mark resends
		if err := s.Notify(context.Background(), n); err != nil {
			t.Fatal(err)
		}
	}
	if got := p.byMessageID(t, MessageID(n.Key, "mcpmon.example")); len(got) != 2 {
		t.Fatalf("want both copies under the same Message-ID, got %d", len(got))
	}
}

func TestUntrustedCertificateIsPermanent(t *testing.T) {
	p := peer(t)
	s, logs := p.sink(t, func(o *Options) { o.RootCAs = x509.NewCertPool() })
	n := notification(alert.KindOpen)
	n.Key = uniqueKey(t, alert.KindOpen)
	err := s.Notify(context.Background(), n)
	if !errors.Is(err, alert.ErrPermanent) || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("untrusted server certificate: %v, want a permanent certificate error", err)
	}
	if strings.Contains(err.Error()+logs.String(), password) {
		t.Errorf("password leaked: %v", err)
	}
	if got := p.byMessageID(t, MessageID(n.Key, "mcpmon.example")); len(got) != 0 {
		t.Errorf("a message went out over an unverified connection")
	}
}

func TestServerRejectionIsPermanent(t *testing.T) {
	p := peer(t)
	// mailpit requires STARTTLS: a client that never upgrades gets a 5xx.
	s, _ := p.sink(t, func(o *Options) { o.TLS = TLSNone; o.Username, o.Password = "", "" })
	err := s.Notify(context.Background(), notification(alert.KindOpen))
	if !errors.Is(err, alert.ErrPermanent) {
		t.Fatalf("5xx from the server: %v, want ErrPermanent", err)
	}
}

func TestCredentialsWithoutTLSFailWithoutLeaking(t *testing.T) {
	p := peer(t)
	// TLS off against a relay that requires STARTTLS: the session is refused
	// (a configuration error, permanent) and the error carries no password.
	// Beyond loopback, net/smtp's PLAIN would refuse to send it in clear.
	s, _ := p.sink(t, func(o *Options) { o.TLS = TLSNone })
	err := s.Notify(context.Background(), notification(alert.KindOpen))
	if !errors.Is(err, alert.ErrPermanent) || strings.Contains(err.Error(), password) {
		t.Fatalf("got %v, want a permanent error without the password", err)
	}
}

func TestUnreachableServerIsRetryable(t *testing.T) {
	ln, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	s, err := New(Options{Name: "mail", Addr: addr, From: "a@b.example", To: []string{"c@d.example"}, Username: "u", Password: password})
	if err != nil {
		t.Fatal(err)
	}
	err = s.Notify(context.Background(), notification(alert.KindOpen))
	if err == nil || errors.Is(err, alert.ErrPermanent) || strings.Contains(err.Error(), password) {
		t.Fatalf("refused connection: %v, want a retryable error without secrets", err)
	}
	var opErr *net.OpError
	if !errors.As(err, &opErr) {
		t.Errorf("cause lost: %v", err)
	}
}

func TestHungServerTimesOut(t *testing.T) {
	ln, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = ln.Close() }()
	go func() { // accepts and never greets
		c, err := ln.Accept()
		if err == nil {
			defer func() { _ = c.Close() }()
			_, _ = io.Copy(io.Discard, c)
		}
	}()
	s, err := New(Options{Name: "mail", Addr: ln.Addr().String(), From: "a@b.example", To: []string{"c@d.example"}, Timeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	err = s.Notify(context.Background(), notification(alert.KindOpen))
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() || errors.Is(err, alert.ErrPermanent) {
		t.Fatalf("silent server: %v, want a retryable timeout", err)
	}
}

func TestMessageFormat(t *testing.T) {
	s, err := New(Options{Name: "mail", Addr: "127.0.0.1:25", From: "alerts@mcpmon.example", To: []string{"a@example.com"}, Clock: clock.NewFake(sent)})
	if err != nil {
		t.Fatal(err)
	}
	n := notification(alert.KindOpen)
	n.Key = "k1"
	n.EndpointName = "evil\r\nBcc: victim@example.com"
	n.Reason = strings.Repeat("long reason ", 200)
	raw := s.Message(n)
	for i, line := range bytes.Split(raw, []byte("\r\n")) {
		if len(line) > 998 {
			t.Errorf("line %d is %d bytes, RFC 5322 allows 998", i, len(line))
		}
	}
	m, err := mail.ReadMessage(bytes.NewReader(raw))
	if err != nil {
		t.Fatalf("not an RFC 5322 message: %v", err)
	}
	if m.Header.Get("Bcc") != "" {
		t.Error("endpoint name injected a Bcc header")
	}
	if got := m.Header.Get("Subject"); got != "[mcpmon] DOWN: evil Bcc: victim@example.com (timeout)" {
		t.Errorf("Subject = %q", got)
	}
	if m.Header.Get("Message-Id") != "<"+MessageID("k1", "mcpmon.example")+">" {
		t.Errorf("Message-ID = %q", m.Header.Get("Message-Id"))
	}
	if d, err := m.Header.Date(); err != nil || !d.Equal(sent) {
		t.Errorf("Date = %v (%v), want %v", d, err, sent)
	}
	body, err := io.ReadAll(quotedprintable.NewReader(m.Body))
	if err != nil || !strings.Contains(string(body), strings.TrimSpace(strings.Repeat("long reason ", 200))) {
		t.Errorf("quoted-printable body does not round-trip: %v", err)
	}
	if a, b := MessageID("k1", "x"), MessageID("k1", "x"); a != b || a == MessageID("k2", "x") {
		t.Error("MessageID must be a stable function of the key")
	}
}

func TestNewValidates(t *testing.T) {
	base := Options{Name: "mail", Addr: "smtp.example.com:587", From: "a@b.example", To: []string{"c@d.example"}}
	for name, mut := range map[string]func(*Options){
		"no name":           func(o *Options) { o.Name = "" },
		"bad addr":          func(o *Options) { o.Addr = "smtp.example.com" },
		"bad tls":           func(o *Options) { o.TLS = "ssl" },
		"password w/o user": func(o *Options) { o.Password = password },
		"bad from":          func(o *Options) { o.From = "not an address" },
		"no recipients":     func(o *Options) { o.To = nil },
		"bad recipient":     func(o *Options) { o.To = []string{"x"} },
	} {
		o := base
		mut(&o)
		_, err := New(o)
		if !errors.Is(err, ErrConfig) {
			t.Errorf("%s: %v, want ErrConfig", name, err)
		}
		if err != nil && strings.Contains(err.Error(), password) {
			t.Errorf("%s: error leaks the password", name)
		}
	}
}

func TestOpportunisticSTARTTLSIsTheDefault(t *testing.T) {
	p := peer(t)
	// mailpit requires STARTTLS, so a delivery in the default mode proves
	// the sink upgraded when the server offered it.
	s, _ := p.sink(t, func(o *Options) { o.TLS = "" })
	n := notification(alert.KindOpen)
	n.Key = uniqueKey(t, alert.KindOpen)
	if err := s.Notify(context.Background(), n); err != nil {
		t.Fatalf("default TLS mode: %v", err)
	}
	if got := p.byMessageID(t, MessageID(n.Key, "mcpmon.example")); len(got) != 1 {
		t.Fatalf("got %d messages, want 1", len(got))
	}
}

// TestDialContextIsUsed: the session is opened through Options.DialContext
// (an SSRF guard), and its refusal is the error, with nothing reaching the
// server.
func TestDialContextIsUsed(t *testing.T) {
	ln, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan struct{}, 1)
	go func() {
		if c, err := ln.Accept(); err == nil {
			accepted <- struct{}{}
			c.Close()
		}
	}()
	// A permanent refusal stays permanent (and identifiable) through the
	// sink's scrubbed error.
	refused := fmt.Errorf("%w: refused by guard", alert.ErrPermanent)
	var dialed string
	s, err := New(Options{Name: "mail", Addr: ln.Addr().String(), From: "a@b.example", To: []string{"c@d.example"},
		DialContext: func(_ context.Context, network, addr string) (net.Conn, error) {
			dialed = network + " " + addr
			return nil, refused
		}})
	if err != nil {
		t.Fatal(err)
	}
	err = s.Notify(context.Background(), notification(alert.KindOpen))
	if !errors.Is(err, refused) || !errors.Is(err, alert.ErrPermanent) || dialed != "tcp "+ln.Addr().String() {
		t.Fatalf("Notify = %v (dialed %q), want the dialer's refusal for tcp %s", err, dialed, ln.Addr())
	}
	ln.Close()
	select {
	case <-accepted:
		t.Fatal("the server got a connection the dialer refused")
	default:
	}
}

// TestFloodingRelayIsCutOff: a relay (a tenant's, for a per-endpoint
// sink) that answers with one endless line, or endless continuation
// lines, is read for at most maxRelayBytes and the session fails at once,
// retryable, saying so; net/smtp buffers a reply line without limit, so
// such a relay filled the alerter's memory until the sink's timeout (at
// loopback speed, gigabytes in 30 s). The server below sends 64 MiB and
// then holds the connection: unbounded, the read lasts till the timeout.
func TestFloodingRelayIsCutOff(t *testing.T) {
	for name, greeting := range map[string]string{
		"one endless line":        "220 ",
		"endless continued lines": "220-x\r\n",
		"after a good greeting":   "220 ok\r\n250-x\r\n",
	} {
		t.Run(name, func(t *testing.T) {
			ln, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = ln.Close() }()
			go func() {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				defer func() { _ = c.Close() }()
				go func() { _, _ = io.Copy(io.Discard, c) }()
				chunk := []byte(greeting)
				fill := bytes.Repeat([]byte("x"), 64<<10)
				if strings.HasSuffix(greeting, "\r\n") {
					fill = bytes.Repeat([]byte("250-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\r\n"), 1<<10)
				}
				if _, err := c.Write(chunk); err != nil {
					return
				}
				for range 1024 { // 64 MiB
					if _, err := c.Write(fill); err != nil {
						return
					}
				}
				_, _ = c.Read(make([]byte, 1)) // hold the connection open
			}()
			s, err := New(Options{Name: "mail", Addr: ln.Addr().String(), From: "a@b.example", To: []string{"c@d.example"}, Timeout: 5 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			err = s.Notify(context.Background(), notification(alert.KindOpen))
			if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("more than %d KiB", maxRelayBytes>>10)) || errors.Is(err, alert.ErrPermanent) || errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("flooding relay: %v, want a retryable error naming the cap before the timeout", err)
			}
			if len(err.Error()) > 512 {
				t.Fatalf("error is %d bytes", len(err.Error()))
			}
		})
	}
}
