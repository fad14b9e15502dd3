package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mcpmon/mcpmon/pkg/alert"
	"github.com/mcpmon/mcpmon/pkg/clock"
	"github.com/mcpmon/mcpmon/pkg/testpeers"
)

var (
	t0       = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	opened   = time.Date(2026, 3, 4, 5, 0, 0, 0, time.UTC)
	resolved = time.Date(2026, 3, 4, 5, 30, 0, 0, time.UTC)
)

const (
	pathToken  = "T0K3N-IN-PATH-9f8e7d"
	queryToken = "QUERYSECRET-1a2b3c"
	hmacSecret = "hmac-secret-5d4c3b2a"
)

func openNotification() alert.Notification {
	return alert.Notification{
		Key:          "alert-ep1-ep1-20260304T050000Z:open:hook",
		Kind:         alert.KindOpen,
		EndpointID:   "ep1",
		EndpointName: "billing MCP",
		EndpointURL:  "https://mcp.example.com/mcp",
		Labels:       map[string]string{"team": "payments"},
		IncidentID:   "ep1-20260304T050000Z",
		State:        "open",
		Class:        "timeout",
		Reason:       "initialize timed out after 10s",
		FirstFailure: opened.Add(-time.Minute),
		OpenedAt:     opened,
	}
}

func resolveNotification() alert.Notification {
	n := openNotification()
	n.Key = "alert-ep1-ep1-20260304T050000Z:resolve:hook"
	n.Kind = alert.KindResolve
	n.State = "resolved"
	r := resolved
	n.ResolvedAt = &r
	return n
}

// newReceiver is a local webhook endpoint that records deliveries and
// answers 200 until the test sets another answer.
func newReceiver(t *testing.T) *testpeers.Receiver {
	r := testpeers.NewReceiver(t, nil)
	r.Answer(http.StatusOK, nil, "")
	return r
}

// hookURL is the receiver's URL with a secret in the path and the query.
func hookURL(r *testpeers.Receiver) string {
	return r.URL + "/hooks/" + pathToken + "?token=" + queryToken
}

func newSink(t *testing.T, url string, logs *bytes.Buffer) *Sink {
	t.Helper()
	logger := slog.New(slog.DiscardHandler)
	if logs != nil {
		logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	s, err := New(Options{Name: "hook", URL: url, Secret: hmacSecret, Clock: clock.NewFake(t0), Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func assertNoSecrets(t *testing.T, what, s string) {
	t.Helper()
	for _, secret := range []string{pathToken, queryToken, hmacSecret} {
		if strings.Contains(s, secret) {
			t.Errorf("%s leaks a secret %q: %s", what, secret, s)
		}
	}
}

// TestPayloadFields checks the documented body field by field, plus the
// headers a receiver relies on.
func TestPayloadFields(t *testing.T) {
	rcv := newReceiver(t)
	var logs bytes.Buffer
	s := newSink(t, hookURL(rcv), &logs)
	ctx := context.Background()
	if err := s.Notify(ctx, openNotification()); err != nil {
		t.Fatalf("Notify(open): %v", err)
	}
	if err := s.Notify(ctx, resolveNotification()); err != nil {
		t.Fatalf("Notify(resolve): %v", err)
	}
	got := rcv.Requests()
	if len(got) != 2 {
		t.Fatalf("got %d deliveries, want 2", len(got))
	}

	wantOpen := map[string]any{
		"version":    float64(1),
		"key":        "alert-ep1-ep1-20260304T050000Z:open:hook",
		"kind":       "open",
		"state":      "open",
		"incidentId": "ep1-20260304T050000Z",
		"endpoint": map[string]any{
			"id":     "ep1",
			"name":   "billing MCP",
			"url":    "https://mcp.example.com/mcp",
			"labels": map[string]any{"team": "payments"},
		},
		"class":        "timeout",
		"reason":       "initialize timed out after 10s",
		"firstFailure": "2026-03-04T04:59:00Z",
		"openedAt":     "2026-03-04T05:00:00Z",
	}
	wantResolve := map[string]any{}
	for k, v := range wantOpen {
		wantResolve[k] = v
	}
	wantResolve["key"] = "alert-ep1-ep1-20260304T050000Z:resolve:hook"
	wantResolve["kind"] = "resolve"
	wantResolve["state"] = "resolved"
	wantResolve["resolvedAt"] = "2026-03-04T05:30:00Z"

	for i, want := range []map[string]any{wantOpen, wantResolve} {
		d := got[i]
		var body map[string]any
		if err := json.Unmarshal(d.Body, &body); err != nil {
			t.Fatalf("delivery %d: body is not JSON: %v", i, err)
		}
		compareFields(t, "", body, want)
		if d.Method != http.MethodPost {
			t.Errorf("method = %s, want POST", d.Method)
		}
		if d.Path != "/hooks/"+pathToken || d.RawQuery != "token="+queryToken {
			t.Errorf("delivered to %s?%s, want the configured URL", d.Path, d.RawQuery)
		}
		if ct := d.Header.Get("Content-Type"); ct != "application/json" {
			t.Errorf("Content-Type = %q", ct)
		}
		if k := d.Header.Get(HeaderIdempotency); k != want["key"] {
			t.Errorf("Idempotency-Key = %q, want %q", k, want["key"])
		}
		if e := d.Header.Get(HeaderEvent); e != want["kind"] {
			t.Errorf("%s = %q, want %q", HeaderEvent, e, want["kind"])
		}
		ts := d.Header.Get(HeaderTimestamp)
		if ts != "1772600767" { // t0 in Unix seconds
			t.Errorf("%s = %q, want %d", HeaderTimestamp, ts, t0.Unix())
		}
		sig := d.Header.Get(HeaderSignature)
		if err := Verify(hmacSecret, ts, d.Body, sig, t0.Add(time.Minute), DefaultTolerance); err != nil {
			t.Errorf("receiver-side Verify of delivery %d: %v", i, err)
		}
		if err := Verify("other-secret", ts, d.Body, sig, t0, DefaultTolerance); !errors.Is(err, ErrBadSignature) {
			t.Errorf("Verify with the wrong secret = %v, want ErrBadSignature", err)
		}
	}
	assertNoSecrets(t, "debug logs", logs.String())
	if !strings.Contains(logs.String(), "webhook alert delivered") {
		t.Errorf("expected a debug log per delivery, got %q", logs.String())
	}
}

// compareFields checks got against want key by key, reporting missing,
// unexpected and differing fields with their JSON path.
func compareFields(t *testing.T, prefix string, got, want map[string]any) {
	t.Helper()
	for k, w := range want {
		g, ok := got[k]
		if !ok {
			t.Errorf("field %s%s missing", prefix, k)
			continue
		}
		if wm, ok := w.(map[string]any); ok {
			gm, ok := g.(map[string]any)
			if !ok {
				t.Errorf("field %s%s = %v, want an object", prefix, k, g)
				continue
			}
			compareFields(t, prefix+k+".", gm, wm)
			continue
		}
		if g != w {
			t.Errorf("field %s%s = %#v, want %#v", prefix, k, g, w)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("unexpected field %s%s = %v", prefix, k, got[k])
		}
	}
}

func TestBodyIsDeterministic(t *testing.T) {
	rcv := newReceiver(t)
	fc := clock.NewFake(t0)
	s, err := New(Options{Name: "hook", URL: hookURL(rcv), Secret: hmacSecret, Clock: fc})
	if err != nil {
		t.Fatal(err)
	}
	n := openNotification()
	for range 2 {
		if err := s.Notify(context.Background(), n); err != nil {
			t.Fatal(err)
		}
		fc.Advance(90 * time.Second)
	}
	got := rcv.Requests()
	if !bytes.Equal(got[0].Body, got[1].Body) {
		t.Errorf("a redelivery changed the body:\n%s\n%s", got[0].Body, got[1].Body)
	}
	if got[0].Header.Get(HeaderIdempotency) != got[1].Header.Get(HeaderIdempotency) {
		t.Error("a redelivery changed the Idempotency-Key")
	}
	if got[0].Header.Get(HeaderTimestamp) == got[1].Header.Get(HeaderTimestamp) {
		t.Error("the timestamp header should be the attempt's time")
	}
}

func TestNoSignatureWithoutSecret(t *testing.T) {
	rcv := newReceiver(t)
	s, err := New(Options{Name: "hook", URL: rcv.URL})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Notify(context.Background(), openNotification()); err != nil {
		t.Fatal(err)
	}
	if sig := rcv.Requests()[0].Header.Get(HeaderSignature); sig != "" {
		t.Errorf("unsigned sink sent %s: %q", HeaderSignature, sig)
	}
}

func TestStatusClassification(t *testing.T) {
	httpDate := t0.Add(42 * time.Second).Format(http.TimeFormat)
	for _, tc := range []struct {
		status     int
		retryAfter string
		body       string
		want       string // ok | permanent | retry | after
		after      time.Duration
	}{
		{status: 200, want: "ok"},
		{status: 202, want: "ok"},
		{status: 204, want: "ok"},
		{status: 302, want: "permanent"},
		{status: 400, want: "permanent", body: "bad secret " + hmacSecret + " in " + pathToken},
		{status: 401, want: "permanent"},
		{status: 404, want: "permanent"},
		{status: 410, want: "permanent"},
		{status: 408, want: "retry"},
		{status: 500, want: "retry"},
		{status: 502, want: "retry"},
		{status: 503, want: "retry"},
		{status: 429, retryAfter: "7", want: "after", after: 7 * time.Second},
		{status: 429, retryAfter: httpDate, want: "after", after: 42 * time.Second},
		{status: 429, want: "after", after: 30 * time.Second},
		{status: 429, retryAfter: "999999", want: "after", after: time.Hour},
	} {
		t.Run(http.StatusText(tc.status)+tc.retryAfter, func(t *testing.T) {
			rcv := newReceiver(t)
			header := http.Header{}
			if tc.status == 302 {
				header.Set("Location", "http://127.0.0.1:1/elsewhere")
			}
			if tc.retryAfter != "" {
				header.Set("Retry-After", tc.retryAfter)
			}
			rcv.Answer(tc.status, header, tc.body)
			var logs bytes.Buffer
			err := newSink(t, hookURL(rcv), &logs).Notify(context.Background(), openNotification())
			var ra *alert.RetryAfterError
			switch tc.want {
			case "ok":
				if err != nil {
					t.Fatalf("HTTP %d: %v, want delivered", tc.status, err)
				}
				return
			case "permanent":
				if !errors.Is(err, alert.ErrPermanent) {
					t.Fatalf("HTTP %d: %v, want ErrPermanent", tc.status, err)
				}
			case "retry":
				if err == nil || errors.Is(err, alert.ErrPermanent) || errors.As(err, &ra) {
					t.Fatalf("HTTP %d: %v, want a plain retryable error", tc.status, err)
				}
			case "after":
				if !errors.As(err, &ra) || ra.After != tc.after {
					t.Fatalf("HTTP %d: %v, want RetryAfterError after %s", tc.status, err, tc.after)
				}
			}
			if !strings.Contains(err.Error(), `"hook"`) {
				t.Errorf("error does not name the sink: %v", err)
			}
			assertNoSecrets(t, "error", err.Error())
			assertNoSecrets(t, "logs", logs.String())
			if len(rcv.Requests()) != 1 {
				t.Errorf("got %d requests, want exactly 1 (no redirect following, no hidden retry)", len(rcv.Requests()))
			}
		})
	}
}

func TestNetworkErrorsAreRetryableAndScrubbed(t *testing.T) {
	ln, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close() // nothing listens here now: connection refused
	url := "http://" + addr + "/hooks/" + pathToken + "?token=" + queryToken
	err = newSink(t, url, nil).Notify(context.Background(), openNotification())
	if err == nil || errors.Is(err, alert.ErrPermanent) {
		t.Fatalf("refused connection: %v, want a retryable error", err)
	}
	assertNoSecrets(t, "error", err.Error())
	var opErr *net.OpError
	if !errors.As(err, &opErr) {
		t.Errorf("cause not kept for errors.As: %v", err)
	}
}

func TestTimeout(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select { // hang until the client gives up or the test ends
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer srv.Close()
	defer close(release)
	s, err := New(Options{Name: "hook", URL: srv.URL + "/hooks/" + pathToken, Timeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	err = s.Notify(context.Background(), openNotification())
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("hung receiver: %v, want a timeout error", err)
	}
	if errors.Is(err, alert.ErrPermanent) {
		t.Errorf("timeout must be retryable: %v", err)
	}
	assertNoSecrets(t, "error", err.Error())
}

func TestClientTimeoutIsCapped(t *testing.T) {
	s, err := New(Options{Name: "hook", URL: "http://127.0.0.1:1/x", Client: &http.Client{}, Timeout: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if s.client.Timeout != 3*time.Second {
		t.Errorf("client timeout = %s, want 3s (a shared client without timeout must not hang a sink)", s.client.Timeout)
	}
}

func TestVerify(t *testing.T) {
	body := []byte(`{"version":1}`)
	ts := t0.Unix()
	good := Sign(hmacSecret, ts, body)
	tsStr := "1772600767"
	for _, tc := range []struct {
		name string
		ts   string
		body []byte
		sig  string
		now  time.Time
		want error
	}{
		{"valid", tsStr, body, good, t0, nil},
		{"valid at edge of tolerance", tsStr, body, good, t0.Add(DefaultTolerance), nil},
		{"rotation: second signature matches", tsStr, body, "v1=00ff," + good, t0, nil},
		{"tampered body", tsStr, []byte(`{"version":2}`), good, t0, ErrBadSignature},
		{"replayed later", tsStr, body, good, t0.Add(DefaultTolerance + time.Second), ErrStaleTimestamp},
		{"from the future", tsStr, body, good, t0.Add(-DefaultTolerance - time.Second), ErrStaleTimestamp},
		{"timestamp changed", "1772600768", body, good, t0, ErrBadSignature},
		{"missing signature", tsStr, body, "", t0, ErrNoSignature},
		{"missing timestamp", "", body, good, t0, ErrNoSignature},
		{"malformed timestamp", "yesterday", body, good, t0, ErrBadTimestamp},
		{"unknown scheme", tsStr, body, strings.Replace(good, "v1=", "v0=", 1), t0, ErrBadSignature},
		{"not hex", tsStr, body, "v1=zz", t0, ErrBadSignature},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Verify(hmacSecret, tc.ts, tc.body, tc.sig, tc.now, DefaultTolerance)
			if tc.want == nil && err != nil || tc.want != nil && !errors.Is(err, tc.want) {
				t.Fatalf("Verify = %v, want %v", err, tc.want)
			}
		})
	}
}

func TestNewValidates(t *testing.T) {
	if _, err := New(Options{URL: "http://127.0.0.1/"}); !errors.Is(err, ErrConfig) {
		t.Errorf("missing name: %v", err)
	}
	if _, err := New(Options{Name: "hook"}); !errors.Is(err, ErrConfig) {
		t.Errorf("missing url: %v", err)
	}
}

// Example_receiver shows how a receiver verifies a signed mcpmon delivery.
func Example_receiver() {
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		err := Verify("my-secret", r.Header.Get(HeaderTimestamp), body, r.Header.Get(HeaderSignature), time.Now(), DefaultTolerance)
		if err != nil {
			http.Error(w, "bad signature", http.StatusUnauthorized)
			return
		}
		var p Payload
		_ = json.Unmarshal(body, &p)
		// Deduplicate on r.Header.Get(HeaderIdempotency), then act on p.
		w.WriteHeader(http.StatusNoContent)
	})
	_ = handler
}
