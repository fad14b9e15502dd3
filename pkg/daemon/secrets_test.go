package daemon

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpmon/mcpmon/pkg/config"
	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/seal"
	"github.com/mcpmon/mcpmon/pkg/store/bolt"
)

// headerServer is an MCP server that remembers every request header value
// it was sent.
type headerServer struct {
	*httptest.Server
	mu   sync.Mutex
	seen []string // "Name: value"
}

func newHeaderServer(t *testing.T) *headerServer {
	t.Helper()
	srv := mcp.NewServer(&mcp.Implementation{Name: "secrets-fixture", Version: "1.0.0"}, nil)
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	hs := &headerServer{}
	hs.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hs.mu.Lock()
		for name, vs := range r.Header {
			for _, v := range vs {
				hs.seen = append(hs.seen, name+": "+v)
			}
		}
		hs.mu.Unlock()
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(hs.Close)
	return hs
}

func (s *headerServer) requests() (n int, all string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.seen), strings.Join(s.seen, "\n")
}

func secretsOptions(t *testing.T) config.Options {
	o := fastOptions(t)
	o.ReplicaID = "secrets-test"
	return o
}

func patch(t *testing.T, c apiClient, id, body string) (int, map[string]any) {
	t.Helper()
	resp := c.do(t, http.MethodPatch, "/v1/endpoints/"+id, strings.NewReader(body))
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var out map[string]any
	_ = json.Unmarshal(raw, &out)
	return resp.StatusCode, out
}

// TestPatchToAnotherOriginDoesNotSendTheOldCredentials: a PATCH that changes
// only `url` to another host:port must not keep the stored Authorization
// header, or the prober would send it there.
func TestPatchToAnotherOriginDoesNotSendTheOldCredentials(t *testing.T) {
	const secret = "sk-live-EXFIL-4242"
	a, b := newHeaderServer(t), newHeaderServer(t)
	var banner bytes.Buffer
	d, err := Start(t.Context(), RoleAll, secretsOptions(t), Deps{Logger: testLogger(t), Stdout: &banner})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Stop(); _ = d.Wait() })
	c := apiClient{addr: d.Addr(), key: bootstrapKey(t, banner.String())}

	id := c.register(t, map[string]any{"name": "paid", "url": a.URL + "/mcp?tenant=acme&api_key=qs-" + secret,
		"schedule": "@every 1s", "timeout": "1s", "headers": map[string]string{"Authorization": "Bearer " + secret}})
	eventually(t, 10*time.Second, "the first target to be probed with its credentials", func() bool {
		_, all := a.requests()
		return strings.Contains(all, "Authorization: Bearer "+secret)
	})

	// The GET form sent back with only the URL changed: its placeholders
	// must not pull the stored secrets over to the new origin.
	if code, body := patch(t, c, id, `{"url":"`+b.URL+`/mcp?api_key=<redacted>"}`); code != http.StatusBadRequest {
		t.Fatalf("PATCH to another origin with a redacted query secret: %d %v, want 400", code, body)
	}
	code, body := patch(t, c, id, `{"url":"`+b.URL+`/mcp","headers":{"X-Trace":"1"}}`)
	if code != http.StatusOK {
		t.Fatalf("PATCH url: %d %v", code, body)
	}
	if hs, _ := body["headers"].(map[string]any); hs["Authorization"] != nil || hs["X-Trace"] == nil {
		t.Fatalf("headers after the PATCH: %v, want Authorization dropped and X-Trace (sent with it) kept", hs)
	}
	if w := body["warnings"]; !strings.Contains(jsonString(w), "Authorization") {
		t.Fatalf("warnings %v: want the dropped Authorization header named", w)
	}
	eventually(t, 10*time.Second, "the new target to be probed a few times", func() bool {
		n, _ := b.requests()
		return n >= 6
	})
	if _, all := b.requests(); strings.Contains(all, secret) {
		t.Fatalf("the new origin received the old origin's secret:\n%s", all)
	}
	if strings.Contains(c.get(t, "/v1/endpoints/"+id), secret) {
		t.Fatal("GET shows the secret")
	}
}

func jsonString(v any) string { b, _ := json.Marshal(v); return string(b) }

// TestEmbeddedStoreSealsSecrets: a first start generates
// <data-dir>/secrets.key (0600); endpoint secrets written over REST are not
// in store.db; `mcpmon secrets rotate` adds a key and re-seals, and the
// next start reads everything.
func TestEmbeddedStoreSealsSecrets(t *testing.T) {
	const secret, legacySecret = "hdr-SEALED-7070", "hdr-LEGACY-6060"
	srv := newHeaderServer(t)
	o := secretsOptions(t)
	// A record from before sealing: plaintext in store.db.
	b, err := bolt.Open(filepath.Join(o.DataDir, "store.db"), bolt.Options{SweepInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.CreateEndpoint(t.Context(), model.Endpoint{ID: "legacy", Name: "legacy", URL: srv.URL + "/mcp", Schedule: "@every 1m",
		Timeout: time.Second, Headers: map[string]string{"Authorization": legacySecret}}); err != nil {
		t.Fatal(err)
	}
	b.Close()
	var banner bytes.Buffer
	d, err := Start(t.Context(), RoleAll, o, Deps{Logger: testLogger(t), Stdout: &banner})
	if err != nil {
		t.Fatal(err)
	}
	c := apiClient{addr: d.Addr(), key: bootstrapKey(t, banner.String())}
	keyPath := filepath.Join(o.DataDir, SecretsKeyFileName)
	if fi, err := os.Stat(keyPath); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("generated key file: %v, %v; want mode 0600", fi, err)
	}
	id := c.register(t, map[string]any{"name": "s", "url": srv.URL + "/mcp?token=qs-" + secret, "schedule": "@every 1m",
		"headers": map[string]string{"X-Api-Key": secret},
		"sinks":   []any{map[string]any{"name": "hook", "type": "webhook", "url": "https://hooks.example/sink-" + secret}}})
	d.Stop()
	_ = d.Wait()

	grep := func(when string, secrets ...string) {
		t.Helper()
		raw, err := os.ReadFile(filepath.Join(o.DataDir, "store.db"))
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range secrets {
			if bytes.Contains(raw, []byte(s)) {
				t.Fatalf("%s: store.db holds %q in plaintext", when, s)
			}
		}
		if !bytes.Contains(raw, []byte(id)) {
			t.Fatalf("%s: store.db does not hold the endpoint: the grep proves nothing", when)
		}
	}
	grep("after writing", secret)

	var out, errOut bytes.Buffer
	env := func(k string) string { return map[string]string{"MCPMON_DATA_DIR": o.DataDir}[k] }
	if err := RotateSecrets(t.Context(), nil, env, &out, &errOut); err != nil {
		t.Fatalf("secrets rotate: %v\n%s", err, errOut.String())
	}
	if !strings.Contains(out.String(), "re-sealed 2 endpoints") {
		t.Fatalf("secrets rotate said:\n%s", out.String())
	}
	keys, err := seal.LoadKeyFile(keyPath)
	if err != nil || len(keys) != 2 {
		t.Fatalf("key file after rotate: %d keys, %v", len(keys), err)
	}
	// Compacted: not even the freed pages hold the plaintext the start-up
	// sealing replaced.
	grep("after rotate", secret, legacySecret)

	d, err = Start(t.Context(), RoleAll, o, Deps{Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { d.Stop(); _ = d.Wait() }()
	ep, err := d.Store().GetEndpoint(context.Background(), id)
	if err != nil || ep.Headers["X-Api-Key"] != secret || !strings.Contains(ep.URL, secret) || !strings.Contains(string(ep.Sinks), secret) {
		t.Fatalf("after rotate and restart: %+v, %v", ep, err)
	}
	if ep, err := d.Store().GetEndpoint(context.Background(), "legacy"); err != nil || ep.Headers["Authorization"] != legacySecret {
		t.Fatalf("the record from before sealing after rotate and restart: %+v, %v", ep, err)
	}
}

// TestRedisNeedsASharedSecretsKey: replicas on Redis refuse to start
// without a key (each would otherwise invent its own), with one line naming
// the setting.
func TestRedisNeedsASharedSecretsKey(t *testing.T) {
	env := func(k string) string {
		return map[string]string{"MCPMON_STORE": "redis", "MCPMON_REDIS_URL": "redis://127.0.0.1:1/0", "MCPMON_QUEUE": "sqs", "MCPMON_LISTEN": "127.0.0.1:0"}[k]
	}
	err := Main(t.Context(), RoleAPI, nil, env, io.Discard, io.Discard)
	if err == nil || !IsUsage(err) || !strings.Contains(err.Error(), "--secrets-key-file") || !strings.Contains(err.Error(), config.EnvSecretsKey) || strings.Contains(err.Error(), "\n") {
		t.Fatalf("Main with Redis and no key = %v, want a one-line usage error naming --secrets-key-file and %s", err, config.EnvSecretsKey)
	}
}
