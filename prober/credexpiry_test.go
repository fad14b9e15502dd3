package prober

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/mcpmon/mcpmon/pkg/clock"
	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/msg"
)

// jwtWith builds an unsigned-looking JWT (the watchdog never verifies) with
// the given claims.
func jwtWith(claims map[string]any) string {
	enc := base64.RawURLEncoding
	h, _ := json.Marshal(map[string]string{"alg": "RS256", "typ": "JWT"})
	c, _ := json.Marshal(claims)
	return enc.EncodeToString(h) + "." + enc.EncodeToString(c) + "." + enc.EncodeToString([]byte("signature-bytes"))
}

// TestCredentialEvent is the pure decision: no event while the expiry is
// further than the window, a warning inside it, critical once expired, and
// a fingerprint that is stable for one token and new for its successor.
func TestCredentialEvent(t *testing.T) {
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	c := jwtClaims{exp: now.Add(48 * time.Hour), iss: "https://auth.example", sub: "probe"}
	for _, tc := range []struct {
		name    string
		exp     time.Duration
		warn    time.Duration
		want    string // "", "warning" or "critical"
		expired bool
	}{
		{"far off", 100 * time.Hour, 72 * time.Hour, "", false},
		{"at the window's edge", 72 * time.Hour, 72 * time.Hour, "", false},
		{"inside the window", 71 * time.Hour, 72 * time.Hour, "warning", false},
		{"per-endpoint window", 5 * time.Hour, 4 * time.Hour, "", false},
		{"expired", -time.Minute, 72 * time.Hour, "critical", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := c
			c.exp = now.Add(tc.exp)
			ev := credentialEvent("Authorization", c, now, tc.warn)
			if (ev == nil) != (tc.want == "") {
				t.Fatalf("event %+v, want severity %q", ev, tc.want)
			}
			if ev == nil {
				return
			}
			d := ev.Details.(CredentialExpiry)
			if ev.Kind != model.EventCredentialExpiry || ev.Severity != tc.want || d.Expired != tc.expired || !d.ExpiresAt.Equal(c.exp) {
				t.Fatalf("event %+v", ev)
			}
			if d.Fingerprint != c.fingerprint() || len(d.Fingerprint) != 32 {
				t.Fatalf("fingerprint %q", d.Fingerprint)
			}
		})
	}
	other := c
	other.exp = c.exp.Add(24 * time.Hour)
	if c.fingerprint() == other.fingerprint() {
		t.Fatal("a renewed token has the old token's fingerprint")
	}
}

func TestBearerJWT(t *testing.T) {
	exp := time.Date(2027, 1, 2, 3, 4, 5, 0, time.UTC)
	tok := jwtWith(map[string]any{"exp": exp.Unix(), "iss": "i", "sub": "s"})
	for _, tc := range []struct {
		name    string
		headers map[string]string
		ok      bool
	}{
		{"bearer JWT", map[string]string{"Authorization": "Bearer " + tok}, true},
		{"lower-case header and scheme", map[string]string{"authorization": "bearer " + tok}, true},
		{"opaque token", map[string]string{"Authorization": "Bearer sk-live-123"}, false},
		{"basic", map[string]string{"Authorization": "Basic " + tok}, false},
		{"no exp", map[string]string{"Authorization": "Bearer " + jwtWith(map[string]any{"sub": "s"})}, false},
		{"string exp", map[string]string{"Authorization": "Bearer " + jwtWith(map[string]any{"exp": "tomorrow"})}, false},
		{"other header", map[string]string{"X-Token": "Bearer " + tok}, false},
		{"payload not base64", map[string]string{"Authorization": "Bearer a.!!!.c"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, c, ok := bearerJWT(tc.headers)
			if ok != tc.ok {
				t.Fatalf("ok %v, want %v", ok, tc.ok)
			}
			if ok && (!c.exp.Equal(exp) || c.iss != "i" || c.sub != "s") {
				t.Fatalf("claims %+v", c)
			}
		})
	}
}

// TestCredentialExpiryWatchdog probes a real server with a JWT bearer
// header near its expiry: the metric carries exp, the result a
// credential_expiry event, and neither the result nor the log the token.
func TestCredentialExpiryWatchdog(t *testing.T) {
	srv := streamable(t, sdkServer(), mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true})
	now := time.Now().UTC().Truncate(time.Second)
	clk := clock.NewFake(now)
	reg := prometheus.NewPedanticRegistry()
	var logs strings.Builder
	p := testProber(t, func(o *Options) { o.Clock = clk; o.Metrics = NewMetrics(reg); o.Logger = testLogger(&logs) })

	exp := now.Add(48 * time.Hour)
	tok := jwtWith(map[string]any{"exp": exp.Unix(), "iss": "https://auth.example", "sub": "mcpmon-probe"})
	ep := endpoint(srv.URL)
	ep.Headers = map[string]string{"Authorization": "Bearer " + tok}

	res := p.Probe(t.Context(), ep, cmd())
	if res.Class != ClassOK {
		t.Fatalf("class %s %q", res.Class, res.Error)
	}
	if got := seriesValue(t, p.opts.Metrics, "mcpmon_probe_credential_expiry_timestamp_seconds", "endpoint", "ep1"); got != float64(exp.Unix()) {
		t.Fatalf("credential expiry metric %v, want %d", got, exp.Unix())
	}
	ev := findEvent(res.Events, model.EventCredentialExpiry)
	if ev == nil || ev.Severity != "warning" {
		t.Fatalf("events %+v, want a credential_expiry warning", res.Events)
	}
	fp := ev.Details.(CredentialExpiry).Fingerprint

	// The next probe reports the same expiry under the same fingerprint.
	clk.Advance(time.Hour)
	if ev := findEvent(p.Probe(t.Context(), ep, cmd()).Events, model.EventCredentialExpiry); ev == nil || ev.Details.(CredentialExpiry).Fingerprint != fp {
		t.Fatalf("second probe's event %+v, want fingerprint %s", ev, fp)
	}
	// An endpoint that warns later says nothing yet.
	ep.CredentialWarning = 24 * time.Hour
	if ev := findEvent(p.Probe(t.Context(), ep, cmd()).Events, model.EventCredentialExpiry); ev != nil {
		t.Fatalf("event %+v inside a 24h window 47h before expiry", ev)
	}
	// Expired: critical, and the probe still runs (the server decides).
	clk.Advance(48 * time.Hour)
	res = p.Probe(t.Context(), ep, cmd())
	if ev := findEvent(res.Events, model.EventCredentialExpiry); ev == nil || ev.Severity != "critical" || !ev.Details.(CredentialExpiry).Expired {
		t.Fatalf("events %+v, want a critical credential_expiry", res.Events)
	}

	b, _ := json.Marshal(res)
	for _, part := range strings.Split(tok, ".") {
		if strings.Contains(string(b), part) || strings.Contains(logs.String(), part) {
			t.Fatalf("a part of the token is in the result or the log")
		}
	}
	// The header replaced by an opaque token: the series goes.
	ep.Headers = map[string]string{"Authorization": "Bearer opaque-token-1234"}
	p.Probe(t.Context(), ep, cmd())
	if n := testutil.CollectAndCount(reg, "mcpmon_probe_credential_expiry_timestamp_seconds"); n != 0 {
		t.Fatalf("%d credential expiry series left for a non-JWT credential", n)
	}
}

func findEvent(evs []msg.Event, kind string) *msg.Event {
	for i := range evs {
		if evs[i].Kind == kind {
			return &evs[i]
		}
	}
	return nil
}
