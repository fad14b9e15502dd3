package daemon

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpmon/mcpmon/pkg/api/apispec"
	"github.com/mcpmon/mcpmon/pkg/auth"
	"github.com/mcpmon/mcpmon/pkg/clock"
	"github.com/mcpmon/mcpmon/pkg/config"
	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/store"
)

// The API's front door against hostile clients: foreign Host names, open
// metrics, squatted slugs, other tenants' sinks, 401s that say too much,
// key sprays, and secrets on the command line.

// startKeyed starts `mcpmon run` with API keys on a fake clock and returns
// it with the bootstrap admin key (tenant default) and the clock.
func startKeyed(t *testing.T, mut func(*config.Options)) (*Daemon, string, *clock.Fake, *lockedBuffer) {
	t.Helper()
	o := embeddedOptions(t)
	o.AllowPrivateTargets = true
	if mut != nil {
		mut(&o)
	}
	clk := clock.NewFake(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	logs, out := &lockedBuffer{}, &lockedBuffer{}
	d, err := Start(t.Context(), RoleAll, o, Deps{Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})), Stdout: out, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Stop(); _ = d.Wait() })
	key := ""
	if o.BootstrapKey && o.BootstrapKeyFile == "" {
		key = bootstrapKey(t, out.String())
	}
	return d, key, clk, out
}

// tenantKey makes a key of tenant with scope straight in the daemon's store.
func tenantKey(t *testing.T, d *Daemon, clk clock.Clock, tenant string, scope auth.Scope, expires time.Time) (string, auth.Key) {
	t.Helper()
	kr := auth.NewKeyring(d.Store(), auth.Options{Clock: clk})
	secret, k, err := kr.Create(t.Context(), auth.NewKey{Name: tenant + "-" + string(scope) + "-" + auth.Generate()[8:14], Tenant: tenant, Scope: scope, Expires: expires})
	if err != nil {
		t.Fatal(err)
	}
	return secret, k
}

// call sends one request and returns its status and body; every exchange
// is checked against openapi.yaml.
func (c apiClient) call(t *testing.T, method, path string, body any) (int, http.Header, []byte) {
	t.Helper()
	var r io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		r = bytes.NewReader(b)
	}
	resp := c.do(t, method, path, r)
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, raw
}

// TestOpenAPIAnswersOnlyLoopbackNames: under --auth none without
// --api-hosts the API answers only the loopback names on its port, so a
// web page that rebinds its own name to 127.0.0.1 cannot plant an endpoint.
func TestOpenAPIAnswersOnlyLoopbackNames(t *testing.T) {
	d, _, _ := startHardened(t, nil)
	_, port, _ := net.SplitHostPort(d.Addr())
	body := `{"name":"planted","url":"https://mcp.example.com/mcp","schedule":"@every 30s","sinks":[{"name":"x","type":"webhook","url":"https://attacker.example/hook"}]}`
	send := func(method, host string, body io.Reader) int {
		req, _ := http.NewRequestWithContext(t.Context(), method, "http://"+d.Addr()+"/v1/endpoints", body)
		req.Host = host
		req.Header.Set("Content-Type", "application/json")
		resp, err := apispec.Client(t).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, host := range []string{"attacker.example:" + port, "attacker.example", "localhost.attacker.example:" + port, "127.0.0.1.nip.io:" + port} {
		for _, method := range []string{http.MethodGet, http.MethodPost} {
			if code := send(method, host, strings.NewReader(body)); code != http.StatusMisdirectedRequest {
				t.Errorf("%s with Host %q = %d, want 421", method, host, code)
			}
		}
	}
	for _, host := range []string{"127.0.0.1:" + port, "localhost:" + port, "[::1]:" + port} {
		if code := send(http.MethodGet, host, nil); code != http.StatusOK {
			t.Errorf("GET with Host %q = %d, want 200", host, code)
		}
	}
	eps, err := d.Store().ListEndpoints(t.Context())
	if err != nil || len(eps) != 0 {
		t.Fatalf("endpoints after requests under foreign Host names: %d, %v", len(eps), err)
	}
}

// TestMetricsListenerAndToken: with --metrics-listen the API's listener
// serves no /metrics, and with --metrics-token-file a scrape needs the
// bearer token.
func TestMetricsListenerAndToken(t *testing.T) {
	tokenFile := filepath.Join(t.TempDir(), "metrics.token")
	if err := os.WriteFile(tokenFile, []byte("s3cret-scrape-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	token, err := config.ReadSecretFile(tokenFile)
	if err != nil {
		t.Fatal(err)
	}
	d, _, _, out := startKeyed(t, func(o *config.Options) {
		o.MetricsListen, o.MetricsTokenFile, o.MetricsToken = "127.0.0.1:0", tokenFile, model.Secret(token)
	})
	if d.MetricsAddr() == "" || !strings.Contains(out.String(), "metrics on http://"+d.MetricsAddr()+"/metrics") {
		t.Fatalf("banner does not name the metrics listener %q:\n%s", d.MetricsAddr(), out)
	}
	scrape := func(addr, auth string) (int, string) {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, "http://"+addr+"/metrics", nil)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, tc := range []struct {
		name, addr, auth string
		want             int
	}{
		{"API listener", d.Addr(), "Bearer " + token, http.StatusNotFound},
		{"no token", d.MetricsAddr(), "", http.StatusUnauthorized},
		{"wrong token", d.MetricsAddr(), "Bearer s3cret-scrape-tokeX", http.StatusUnauthorized},
		{"token prefix", d.MetricsAddr(), "Bearer s3cret", http.StatusUnauthorized},
		{"basic", d.MetricsAddr(), "Basic " + token, http.StatusUnauthorized},
		{"token", d.MetricsAddr(), "Bearer " + token, http.StatusOK},
	} {
		code, body := scrape(tc.addr, tc.auth)
		if code != tc.want {
			t.Errorf("%s: GET /metrics = %d, want %d", tc.name, code, tc.want)
		}
		if code == http.StatusOK && !strings.Contains(body, "mcpmon_build_info") {
			t.Errorf("%s: scrape lacks mcpmon_build_info", tc.name)
		}
		if strings.Contains(body, token) {
			t.Errorf("%s: the answer quotes the token", tc.name)
		}
	}
	// The probes Kubernetes sends stay open on both listeners.
	for _, addr := range []string{d.Addr(), d.MetricsAddr()} {
		resp, err := http.Get("http://" + addr + "/healthz")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("GET %s/healthz = %d, want 200", addr, resp.StatusCode)
		}
	}
}

// TestPrivateSlugReservesNothing: a private endpoint's slug does not stop
// another tenant from publishing it; making the private one public then
// is the conflict.
func TestPrivateSlugReservesNothing(t *testing.T) {
	d, _, clk, _ := startKeyed(t, nil)
	keyA, _ := tenantKey(t, d, clk, "acme", auth.ScopeWrite, time.Time{})
	keyB, _ := tenantKey(t, d, clk, "globex", auth.ScopeWrite, time.Time{})
	a, b := apiClient{addr: d.Addr(), key: keyA}, apiClient{addr: d.Addr(), key: keyB}
	ep := func(public bool) map[string]any {
		return map[string]any{"name": "status", "url": "http://127.0.0.1:1/mcp", "schedule": "@every 1h", "slug": "launch-status", "public": public}
	}
	idA := a.register(t, ep(false))
	if code, _, body := b.call(t, http.MethodPost, "/v1/endpoints", ep(true)); code != http.StatusCreated {
		t.Fatalf("tenant B publishing a slug A holds privately = %d %s, want 201", code, body)
	}
	code, _, body := a.call(t, http.MethodPatch, "/v1/endpoints/"+idA, map[string]any{"public": true})
	if code != http.StatusConflict || !strings.Contains(string(body), "#/slug") {
		t.Fatalf("making A's endpoint public on a published slug = %d %s, want 409 naming #/slug", code, body)
	}
}

// TestTenantSeesOnlyItsOwnSinkDeliveries: another tenant's read key sees
// the deliveries to its endpoint's own sinks and only a count of those to
// the operator's global sinks (no names, no receivers, no errors); the
// operator sees them all.
func TestTenantSeesOnlyItsOwnSinkDeliveries(t *testing.T) {
	d, _, clk, _ := startKeyed(t, func(o *config.Options) { o.WebhookURL = model.SecretURL("https://hooks.internal.example/ops") })
	writeB, _ := tenantKey(t, d, clk, "globex", auth.ScopeWrite, time.Time{})
	readB, _ := tenantKey(t, d, clk, "globex", auth.ScopeRead, time.Time{})
	b := apiClient{addr: d.Addr(), key: writeB}
	id := b.register(t, map[string]any{"name": "b", "url": "http://127.0.0.1:1/mcp", "schedule": "@every 1h",
		"sinks": []map[string]any{{"name": "globex-hook", "type": "webhook", "url": "http://127.0.0.1:1/hook"}}})
	now := clk.Now()
	inc := model.Incident{ID: "inc-b", EndpointID: id, Tenant: "globex", State: model.IncidentOpen, OpenedWindow: now, OpenedAt: now, FirstFailure: now}
	if err := d.Store().SaveTracker(t.Context(), model.Tracker{EndpointID: id, OpenIncidentID: inc.ID}, inc); err != nil {
		t.Fatal(err)
	}
	for _, dl := range []model.Delivery{
		{Kind: "open", Sink: "globex-hook", Outcome: model.DeliveryDelivered, Attempts: 1},
		{Kind: "open", Sink: "webhook", Outcome: model.DeliveryFailed, Attempts: 3, LastError: "smtp relay mail.internal.example:25 refused"},
		{Kind: "open", Sink: "ops-email", Outcome: model.DeliveryFailed, Attempts: 1, LastError: "relay mail.internal.example"},
	} {
		if err := d.Store().RecordDelivery(t.Context(), inc.ID, dl); err != nil {
			t.Fatal(err)
		}
	}
	var got struct {
		Notifications         []model.Delivery `json:"notifications"`
		OperatorNotifications int              `json:"operatorNotifications"`
	}
	code, _, body := apiClient{addr: d.Addr(), key: readB}.call(t, http.MethodGet, "/v1/incidents/"+inc.ID, nil)
	if code != http.StatusOK || json.Unmarshal(body, &got) != nil {
		t.Fatalf("GET incident as tenant B = %d %s", code, body)
	}
	if len(got.Notifications) != 1 || got.Notifications[0].Sink != "globex-hook" || got.OperatorNotifications != 2 {
		t.Errorf("tenant B sees %+v and %d operator notifications, want only globex-hook and a count of 2", got.Notifications, got.OperatorNotifications)
	}
	for _, leak := range []string{"webhook\"", "ops-email", "internal.example"} {
		if strings.Contains(string(body), leak) {
			t.Errorf("tenant B's view names %q: %s", leak, body)
		}
	}
}

// TestRefusedKeysShareOneAnswer: a revoked, an expired and an unknown key
// get the same 401, byte for byte apart from the request ID.
func TestRefusedKeysShareOneAnswer(t *testing.T) {
	d, _, clk, _ := startKeyed(t, nil)
	expiring, _ := tenantKey(t, d, clk, "acme", auth.ScopeRead, clk.Now().Add(time.Minute))
	revoked, k := tenantKey(t, d, clk, "acme", auth.ScopeRead, time.Time{})
	if _, err := auth.NewKeyring(d.Store(), auth.Options{Clock: clk}).Revoke(t.Context(), "acme", k.ID); err != nil {
		t.Fatal(err)
	}
	clk.Advance(2 * time.Minute)
	var answers []string
	for _, key := range []string{expiring, revoked, auth.Generate()} {
		code, h, body := apiClient{addr: d.Addr(), key: key}.call(t, http.MethodGet, "/v1/endpoints", nil)
		if code != http.StatusUnauthorized {
			t.Fatalf("GET with a refused key = %d %s", code, body)
		}
		var p map[string]any
		_ = json.Unmarshal(body, &p)
		delete(p, "requestId")
		delete(p, "instance")
		b, _ := json.Marshal(p)
		answers = append(answers, h.Get("WWW-Authenticate")+" "+string(b))
	}
	if answers[0] != answers[1] || answers[1] != answers[2] {
		t.Errorf("the 401s differ:\nexpired: %s\nrevoked: %s\nunknown: %s", answers[0], answers[1], answers[2])
	}
	for _, word := range []string{"expired", "revoked"} {
		if strings.Contains(answers[0], word) {
			t.Errorf("the 401 says %q: %s", word, answers[0])
		}
	}
}

// TestKeySprayIsLimitedPerAddress: an address that keeps presenting bad
// keys is answered 429 with Retry-After once over its budget — before its
// key is looked at, so even a good key waits — while the refusals leave a
// bounded trail in the operator's audit log: one entry per address per
// minute, the next one counting the rest.
func TestKeySprayIsLimitedPerAddress(t *testing.T) {
	d, admin, clk, _ := startKeyed(t, nil)
	spray := func(n int) (codes map[int]int, retry string) {
		codes = map[int]int{}
		for range n {
			code, h, _ := apiClient{addr: d.Addr(), key: auth.Generate()}.call(t, http.MethodGet, "/v1/endpoints", nil)
			codes[code]++
			if code == http.StatusTooManyRequests {
				retry = h.Get("Retry-After")
			}
		}
		return codes, retry
	}
	codes, retry := spray(auth.DefaultFailureBurst + 10)
	if codes[http.StatusUnauthorized] != auth.DefaultFailureBurst || codes[http.StatusTooManyRequests] != 10 || retry == "" {
		t.Fatalf("answers to %d random keys: %v (Retry-After %q), want %d × 401 then 429 with Retry-After", auth.DefaultFailureBurst+10, codes, retry, auth.DefaultFailureBurst)
	}
	good := apiClient{addr: d.Addr(), key: admin}
	if code, _, _ := good.call(t, http.MethodGet, "/v1/endpoints", nil); code != http.StatusTooManyRequests {
		t.Errorf("a good key from the over-budget address = %d, want 429 (the key is not looked at)", code)
	}
	clk.Advance(2 * time.Minute) // refills the budget and opens a new audit minute
	if code, _, body := good.call(t, http.MethodGet, "/v1/audit", nil); code != http.StatusOK {
		t.Fatalf("GET /v1/audit after the wait = %d %s", code, body)
	} else {
		var list struct {
			Entries []store.AuditEntry `json:"entries"`
		}
		_ = json.Unmarshal(body, &list)
		refusals := 0
		for _, e := range list.Entries {
			if e.Action == "refuse" {
				refusals++
				if e.Status != http.StatusUnauthorized || e.ObjectID != "127.0.0.1" || !strings.Contains(e.Summary, "unknown key") {
					t.Errorf("refusal entry %+v, want 401 from 127.0.0.1 naming the reason", e)
				}
			}
		}
		if refusals != 1 {
			t.Errorf("%d refusal entries after %d refusals in one minute, want 1: %+v", refusals, auth.DefaultFailureBurst+11, list.Entries)
		}
	}
	codes, _ = spray(1)
	if codes[http.StatusUnauthorized] != 1 {
		t.Fatalf("a bad key after the budget refilled = %v, want 401", codes)
	}
	_, _, body := good.call(t, http.MethodGet, "/v1/audit", nil)
	if !strings.Contains(string(body), "more refused from this address since the last entry") {
		t.Errorf("the next minute's refusal entry does not count the suppressed ones: %s", body)
	}
}

// TestScopeRefusalIsAudited: a read key's write attempt (403) lands in its
// own tenant's audit log, with the key as actor.
func TestScopeRefusalIsAudited(t *testing.T) {
	d, _, clk, _ := startKeyed(t, nil)
	readA, k := tenantKey(t, d, clk, "acme", auth.ScopeRead, time.Time{})
	adminA, _ := tenantKey(t, d, clk, "acme", auth.ScopeAdmin, time.Time{})
	if code, _, _ := (apiClient{addr: d.Addr(), key: readA}).call(t, http.MethodPost, "/v1/endpoints", map[string]any{"name": "x"}); code != http.StatusForbidden {
		t.Fatalf("POST with a read key = %d, want 403", code)
	}
	_, _, body := apiClient{addr: d.Addr(), key: adminA}.call(t, http.MethodGet, "/v1/audit", nil)
	var list struct {
		Entries []store.AuditEntry `json:"entries"`
	}
	_ = json.Unmarshal(body, &list)
	if len(list.Entries) != 1 || list.Entries[0].Status != http.StatusForbidden || list.Entries[0].Actor.KeyID != k.ID {
		t.Fatalf("acme's audit log = %+v, want one 403 refusal by key %s", list.Entries, k.ID)
	}
}

// TestBootstrapKeyStaysOffTheTerminal: --bootstrap-key-file gets the first
// admin key (mode 0600) and the banner prints none; --bootstrap-key=false
// makes none at all.
func TestBootstrapKeyStaysOffTheTerminal(t *testing.T) {
	path := filepath.Join(t.TempDir(), "admin.key")
	d, _, _, out := startKeyed(t, func(o *config.Options) { o.BootstrapKeyFile = path })
	if keyPattern.MatchString(out.String()) || !strings.Contains(out.String(), path) {
		t.Fatalf("banner with --bootstrap-key-file: want no key and the file named:\n%s", out)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v, mode %v; want 0600", err, fi)
	}
	b, _ := os.ReadFile(path)
	key := strings.TrimSpace(string(b))
	if code, _, _ := (apiClient{addr: d.Addr(), key: key}).call(t, http.MethodGet, "/v1/keys", nil); code != http.StatusOK {
		t.Fatalf("the key from the file = %d, want 200", code)
	}
	matches, _ := filepath.Glob(filepath.Join(filepath.Dir(path), ".admin.key.*"))
	if len(matches) != 0 {
		t.Errorf("temporary key files left behind: %v", matches)
	}

	d, _, _, out = startKeyed(t, func(o *config.Options) { o.BootstrapKey = false })
	if keyPattern.MatchString(out.String()) || !strings.Contains(out.String(), "--bootstrap-key=false") {
		t.Fatalf("banner with --bootstrap-key=false: want no key and a pointer to `keys create`:\n%s", out)
	}
	if any, err := auth.NewKeyring(d.Store(), auth.Options{}).Any(t.Context()); err != nil || any {
		t.Fatalf("--bootstrap-key=false created a key (%v, %v)", any, err)
	}
}

// TestWebhookSecretsFromFiles: `mcpmon run --webhook-url-file F
// --webhook-secret-file G` reads them, nothing warns, and the values never
// reach the command line; the plain flags still work, with a warning.
func TestWebhookSecretsFromFiles(t *testing.T) {
	dir := t.TempDir()
	urlFile, secretFile := filepath.Join(dir, "url"), filepath.Join(dir, "secret")
	_ = os.WriteFile(urlFile, []byte("https://hooks.example.com/T0/B0/XXXX\n"), 0o600)
	_ = os.WriteFile(secretFile, []byte("hmac-secret\n"), 0o600)
	o, err := config.Parse("mcpmon run", []string{"--webhook-url-file", urlFile, "--webhook-secret-file", secretFile}, func(string) string { return "" }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if o.WebhookURL != "https://hooks.example.com/T0/B0/XXXX" || o.WebhookSecret != "hmac-secret" || len(o.Warnings) != 0 {
		t.Fatalf("from files: url %q secret %q warnings %v", o.WebhookURL, o.WebhookSecret, o.Warnings)
	}
	o, err = config.Parse("mcpmon run", []string{"--webhook-url", "https://hooks.example.com/T0/B0/XXXX", "--data-dir", dir}, func(string) string { return "" }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	o.Listen = "127.0.0.1:0"
	logs := &lockedBuffer{}
	d, err := Start(t.Context(), RoleAll, o, Deps{Logger: slog.New(slog.NewTextHandler(logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	d.Stop()
	_ = d.Wait()
	if !strings.Contains(logs.String(), "--webhook-url on the command line shows in ps") || strings.Contains(logs.String(), "XXXX") {
		t.Errorf("start log: want the ps warning and never the URL:\n%s", logs)
	}
}
