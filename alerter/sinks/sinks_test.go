package sinks

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpmon/mcpmon/alerter/sinks/email"
	"github.com/mcpmon/mcpmon/alerter/sinks/opsgenie"
	"github.com/mcpmon/mcpmon/alerter/sinks/pagerduty"
	"github.com/mcpmon/mcpmon/alerter/sinks/slack"
	"github.com/mcpmon/mcpmon/alerter/sinks/webhook"
	"github.com/mcpmon/mcpmon/pkg/alert"
)

// Secrets planted in configurations; none may ever show up in an error,
// a log line, String(), %#v or Redacted().
var secrets = []string{
	"WEBHOOKPATHTOKEN77", "QUERYTOKEN88", "hmac-s3cret-99", "SLACKTOKEN1234567",
	"pdroutingkey00000000000000000001", "og-api-key-1234-5678", "smtp-pa55-w0rd",
}

const fileJSON = `{"sinks": [
  {"name": "hook", "type": "webhook", "url": "https://hooks.example.com/in/WEBHOOKPATHTOKEN77?token=QUERYTOKEN88", "secret": "hmac-s3cret-99", "timeout": "5s"},
  {"name": "ops-slack", "type": "slack", "url": "https://hooks.slack.com/services/T0/B0/SLACKTOKEN1234567"},
  {"name": "pd", "type": "pagerduty", "routingKey": "pdroutingkey00000000000000000001", "url": "https://events.eu.pagerduty.com/v2/enqueue", "severity": "error"},
  {"name": "og", "type": "opsgenie", "apiKey": "og-api-key-1234-5678", "url": "https://api.eu.opsgenie.com", "priority": "P1", "tags": ["prod"]},
  {"name": "mail", "type": "email", "smtpAddr": "smtp.example.com:587", "smtpUsername": "mcpmon", "smtpPassword": "smtp-pa55-w0rd",
   "smtpTLS": "require-starttls", "from": "mcpmon <alerts@example.com>", "to": ["oncall@example.com"]}
]}`

func assertNoSecrets(t *testing.T, what, s string) {
	t.Helper()
	for _, sec := range secrets {
		if strings.Contains(s, sec) {
			t.Errorf("%s leaks secret %q:\n%s", what, sec, s)
		}
	}
}

func TestLoadFileAndBuild(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sinks.json")
	if err := os.WriteFile(path, []byte(fileJSON), 0o600); err != nil {
		t.Fatal(err)
	}
	cfgs, err := LoadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if cfgs[0].Timeout != 5*time.Second || cfgs[0].EffectiveTimeout() != 5*time.Second {
		t.Errorf("timeout = %s, want 5s", cfgs[0].Timeout)
	}
	if cfgs[1].EffectiveTimeout() != DefaultHTTPTimeout || cfgs[4].EffectiveTimeout() != DefaultSMTPTimeout {
		t.Error("default timeouts not applied")
	}
	var logs bytes.Buffer
	built, err := Build(cfgs, nil, slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		name string
		typ  any
	}{{"hook", &webhook.Sink{}}, {"ops-slack", &slack.Sink{}}, {"pd", &pagerduty.Sink{}}, {"og", &opsgenie.Sink{}}, {"mail", &email.Sink{}}}
	if len(built) != len(want) {
		t.Fatalf("built %d sinks, want %d", len(built), len(want))
	}
	for i, w := range want {
		if built[i].Name() != w.name {
			t.Errorf("sink %d name = %q, want %q", i, built[i].Name(), w.name)
		}
		if fmt.Sprintf("%T", built[i]) != fmt.Sprintf("%T", w.typ) {
			t.Errorf("sink %q is %T, want %T", w.name, built[i], w.typ)
		}
	}
	assertNoSecrets(t, "logs", logs.String())
}

func TestBareArrayAccepted(t *testing.T) {
	cfgs, err := Parse([]byte(`[{"name":"hook","type":"webhook","url":"http://127.0.0.1:9/x"}]`))
	if err != nil || len(cfgs) != 1 {
		t.Fatalf("Parse(array) = %v, %v", cfgs, err)
	}
}

func TestValidationErrors(t *testing.T) {
	for _, tc := range []struct {
		name  string
		json  string
		field string // the error must name this field
	}{
		{"bad name", `{"name":"Ops Slack","type":"slack","url":"https://hooks.slack.com/services/T0/B0/SLACKTOKEN1234567"}`, "name"},
		{"colon in name", `{"name":"a:b","type":"slack","url":"https://hooks.slack.com/services/T0/B0/SLACKTOKEN1234567"}`, "name"},
		{"unknown type", `{"name":"x","type":"teams"}`, "type"},
		{"webhook without url", `{"name":"x","type":"webhook","secret":"hmac-s3cret-99"}`, "url"},
		{"webhook url not http", `{"name":"x","type":"webhook","url":"ftp://h/WEBHOOKPATHTOKEN77"}`, "url"},
		{"webhook url no host", `{"name":"x","type":"webhook","url":"https:///WEBHOOKPATHTOKEN77"}`, "url"},
		{"slack with secret", `{"name":"x","type":"slack","url":"https://h/SLACKTOKEN1234567","secret":"hmac-s3cret-99"}`, "secret"},
		{"webhook with routing key", `{"name":"x","type":"webhook","url":"https://h/x","routingKey":"pdroutingkey00000000000000000001"}`, "routingKey"},
		{"pagerduty without key", `{"name":"x","type":"pagerduty"}`, "routingKey"},
		{"pagerduty bad severity", `{"name":"x","type":"pagerduty","routingKey":"pdroutingkey00000000000000000001","severity":"fatal"}`, "severity"},
		{"pagerduty bad url", `{"name":"x","type":"pagerduty","routingKey":"pdroutingkey00000000000000000001","url":"events.pagerduty.com"}`, "url"},
		{"opsgenie without key", `{"name":"x","type":"opsgenie"}`, "apiKey"},
		{"opsgenie bad priority", `{"name":"x","type":"opsgenie","apiKey":"og-api-key-1234-5678","priority":"high"}`, "priority"},
		{"email without addr", `{"name":"x","type":"email","from":"a@b.example","to":["c@d.example"]}`, "smtpAddr"},
		{"email addr without port", `{"name":"x","type":"email","smtpAddr":"smtp.example.com","from":"a@b.example","to":["c@d.example"]}`, "smtpAddr"},
		{"email password w/o user", `{"name":"x","type":"email","smtpAddr":"h:25","smtpPassword":"smtp-pa55-w0rd","from":"a@b.example","to":["c@d.example"]}`, "smtpPassword"},
		{"email bad tls", `{"name":"x","type":"email","smtpAddr":"h:25","smtpTLS":"ssl","from":"a@b.example","to":["c@d.example"]}`, "smtpTLS"},
		{"email bad from", `{"name":"x","type":"email","smtpAddr":"h:25","from":"nobody","to":["c@d.example"]}`, "from"},
		{"email no to", `{"name":"x","type":"email","smtpAddr":"h:25","from":"a@b.example"}`, "to"},
		{"email with url", `{"name":"x","type":"email","smtpAddr":"h:25","from":"a@b.example","to":["c@d.example"],"url":"https://h/WEBHOOKPATHTOKEN77"}`, "url"},
		{"timeout too long", `{"name":"x","type":"webhook","url":"https://h/x","timeout":"1h"}`, "timeout"},
		{"timeout malformed", `{"name":"x","type":"webhook","url":"https://h/x","timeout":"soon"}`, "timeout"},
		{"unknown field", `{"name":"x","type":"pagerduty","routing_key":"pdroutingkey00000000000000000001"}`, "routing_key"},
		{"wrong JSON type for a secret", `{"name":"x","type":"webhook","url":"https://h/x","secret":["hmac-s3cret-99"]}`, "secret"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(`{"sinks":[` + tc.json + `]}`))
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("Parse = %v, want ErrInvalid", err)
			}
			if !strings.Contains(err.Error(), tc.field) {
				t.Errorf("error does not name field %q: %v", tc.field, err)
			}
			assertNoSecrets(t, "error", err.Error())
		})
	}
}

func TestAllProblemsReportedAtOnce(t *testing.T) {
	_, err := Parse([]byte(`{"sinks":[{"name":"x","type":"email","smtpAddr":"nope"},{"name":"x","type":"webhook","url":"https://h/y"}]}`))
	for _, want := range []string{"smtpAddr", "from", "to", "used twice"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v does not mention %q", err, want)
		}
	}
}

func TestRedactedAndPrinting(t *testing.T) {
	cfgs, err := Parse([]byte(fileJSON))
	if err != nil {
		t.Fatal(err)
	}
	wantURL := []string{
		"https://hooks.example.com/<redacted>?<redacted>",
		"https://hooks.slack.com/<redacted>",
		"https://events.eu.pagerduty.com/v2/enqueue",
		"https://api.eu.opsgenie.com",
		"",
	}
	for i, c := range cfgs {
		r := c.Redacted()
		if r.URL != wantURL[i] {
			t.Errorf("%s: redacted URL = %q, want %q", c.Name, r.URL, wantURL[i])
		}
		for _, p := range []string{r.Secret, r.RoutingKey, r.APIKey, r.SMTPPassword} {
			if p != "" && p != Redacted {
				t.Errorf("%s: secret field not redacted: %q", c.Name, p)
			}
		}
		if r.Name != c.Name || r.Type != c.Type || r.SMTPUsername != c.SMTPUsername || r.Priority != c.Priority {
			t.Errorf("%s: Redacted changed non-secret fields: %+v", c.Name, r)
		}
		var logs bytes.Buffer
		slog.New(slog.NewJSONHandler(&logs, nil)).Info("sink", "cfg", c)
		for what, s := range map[string]string{
			"String": c.String(), "%v": fmt.Sprintf("%v", c), "%+v": fmt.Sprintf("%+v", c), "%#v": fmt.Sprintf("%#v", c),
			"slog": logs.String(), "Redacted JSON": mustJSON(t, r),
		} {
			assertNoSecrets(t, c.Name+" "+what, s)
		}
	}
	// The original keeps its secrets (the sink needs them).
	if cfgs[0].Secret != "hmac-s3cret-99" {
		t.Error("Redacted modified the original")
	}
	if got := RedactURL("https://user:pw@h.example/a?b=c"); got != "https://h.example/<redacted>?<redacted>" {
		t.Errorf("RedactURL = %q", got)
	}
}

func mustJSON(t *testing.T, v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestJSONRoundTrip(t *testing.T) {
	cfgs, err := Parse([]byte(fileJSON))
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(File{Sinks: cfgs})
	if err != nil {
		t.Fatal(err)
	}
	again, err := Parse(b)
	if err != nil {
		t.Fatalf("re-parse of marshalled config: %v", err)
	}
	if fmt.Sprint(again) != fmt.Sprint(cfgs) || again[0].Timeout != 5*time.Second || again[0].Secret != "hmac-s3cret-99" {
		t.Errorf("round trip changed the config")
	}
}

func TestFromFlags(t *testing.T) {
	if got := FromFlags("", "x"); got != nil {
		t.Errorf("no URL: %v, want no sink", got)
	}
	got := FromFlags("https://h/WEBHOOKPATHTOKEN77", "hmac-s3cret-99")
	if len(got) != 1 || got[0].Name != "webhook" || got[0].Type != TypeWebhook || got[0].Secret != "hmac-s3cret-99" {
		t.Fatalf("FromFlags = %+v", got)
	}
	if err := got[0].Validate(); err != nil {
		t.Error(err)
	}
}

func TestParseEndpointSinks(t *testing.T) {
	for _, raw := range []string{"", "null", " null "} {
		if got, err := ParseEndpointSinks(json.RawMessage(raw)); got != nil || err != nil {
			t.Errorf("%q: %v, %v; want none", raw, got, err)
		}
	}
	got, err := ParseEndpointSinks(json.RawMessage(`[{"name":"team-pd","type":"pagerduty","routingKey":"pdroutingkey00000000000000000001"}]`))
	if err != nil || len(got) != 1 || got[0].RoutingKey != "pdroutingkey00000000000000000001" {
		t.Fatalf("valid endpoint sinks: %v, %v", got, err)
	}
	tooMany := "[" + strings.TrimSuffix(strings.Repeat(`{"name":"a","type":"webhook","url":"https://h/x"},`, MaxEndpointSinks+1), ",") + "]"
	for name, raw := range map[string]string{
		"object":     `{"name":"x"}`,
		"malformed":  `[{"name":`,
		"duplicate":  `[{"name":"a","type":"webhook","url":"https://h/x"},{"name":"a","type":"webhook","url":"https://h/y"}]`,
		"ca file":    `[{"name":"m","type":"email","smtpAddr":"h:25","from":"a@b.example","to":["c@d.example"],"smtpCAFile":"/etc/shadow"}]`,
		"too many":   tooMany,
		"bad secret": `[{"name":"s","type":"slack","url":"not a url SLACKTOKEN1234567"}]`,
	} {
		_, err := ParseEndpointSinks(json.RawMessage(raw))
		if !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
			continue
		}
		assertNoSecrets(t, name+" error", err.Error())
	}
}

func TestBuiltSinksDeliverAndTimeOut(t *testing.T) {
	var got struct {
		body []byte
		sig  string
		ts   string
	}
	ok := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got.body, _ = io.ReadAll(r.Body)
		got.sig, got.ts = r.Header.Get(webhook.HeaderSignature), r.Header.Get(webhook.HeaderTimestamp)
		w.WriteHeader(http.StatusNoContent)
	}))
	defer ok.Close()
	release := make(chan struct{})
	hung := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer hung.Close()
	defer close(release)

	cfgs := append(FromFlags(ok.URL+"/in/WEBHOOKPATHTOKEN77", "hmac-s3cret-99"),
		Config{Name: "slow", Type: TypeSlack, URL: hung.URL + "/services/SLACKTOKEN1234567", Timeout: time.Second})
	// A shared client without a timeout must not make any sink hang.
	built, err := Build(cfgs, &http.Client{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	n := alert.Notification{Key: "alert-ep-inc:open:webhook", Kind: alert.KindOpen, EndpointID: "ep", IncidentID: "inc", State: "open"}
	if err := built[0].Notify(context.Background(), n); err != nil {
		t.Fatalf("webhook from flags: %v", err)
	}
	if err := webhook.Verify("hmac-s3cret-99", got.ts, got.body, got.sig, time.Now(), webhook.DefaultTolerance); err != nil {
		t.Errorf("delivery from a built sink does not verify: %v", err)
	}
	start := time.Now()
	err = built[1].Notify(context.Background(), n)
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("hung receiver: %v, want a timeout", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("timeout took %s, want about 1s", d)
	}
	assertNoSecrets(t, "error", err.Error())
}

func TestBuildRejectsBadCAFile(t *testing.T) {
	dir := t.TempDir()
	junk := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(junk, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{junk, filepath.Join(dir, "missing.pem")} {
		_, err := Build([]Config{{Name: "m", Type: TypeEmail, SMTPAddr: "h:25", From: "a@b.example", To: []string{"c@d.example"},
			SMTPUsername: "u", SMTPPassword: "smtp-pa55-w0rd", SMTPCAFile: path}}, nil, nil)
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "smtpCAFile") {
			t.Errorf("CA file %s: %v, want an smtpCAFile error", filepath.Base(path), err)
		}
		if err != nil {
			assertNoSecrets(t, "error", err.Error())
		}
	}
}

// TestBuildOneWithDialContext: every connection of a sink built with a
// DialContext goes through it, HTTP and SMTP alike; a refusal is the error
// and nothing reaches the receiver.
func TestBuildOneWithDialContext(t *testing.T) {
	var hits int
	rcv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { hits++ }))
	defer rcv.Close()
	refused := errors.New("refused by guard")
	var dialed []string
	refuse := func(_ context.Context, network, addr string) (net.Conn, error) {
		dialed = append(dialed, addr)
		return nil, refused
	}
	n := alert.Notification{Key: "k", Kind: alert.KindOpen, EndpointID: "ep1", IncidentID: "ep1-1"}
	for _, c := range []Config{
		{Name: "hook", Type: TypeWebhook, URL: rcv.URL},
		{Name: "mail", Type: TypeEmail, SMTPAddr: rcv.Listener.Addr().String(), From: "a@b.example", To: []string{"c@d.example"}},
	} {
		s, err := BuildOneWith(c, BuildOptions{DialContext: refuse})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Notify(t.Context(), n); !errors.Is(err, refused) {
			t.Errorf("%s: Notify = %v, want the dialer's refusal", c.Type, err)
		}
	}
	if hits != 0 || len(dialed) != 2 || dialed[0] != rcv.Listener.Addr().String() {
		t.Fatalf("receiver hits %d, dialed %v: want 0 hits and both sinks through the dialer", hits, dialed)
	}
	// A dialer that lets the address through delivers.
	s, err := BuildOneWith(Config{Name: "hook", Type: TypeWebhook, URL: rcv.URL}, BuildOptions{DialContext: (&net.Dialer{}).DialContext})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Notify(t.Context(), n); err != nil || hits != 1 {
		t.Fatalf("Notify = %v, hits %d, want delivered once", err, hits)
	}
}
