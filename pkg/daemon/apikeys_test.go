package daemon

import (
	"bytes"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mcpmon/mcpmon/pkg/auth"
	"github.com/mcpmon/mcpmon/pkg/clock"
	"github.com/mcpmon/mcpmon/pkg/config"
	"github.com/mcpmon/mcpmon/pkg/testpeers"
)

var keyPattern = regexp.MustCompile(`mcpmon_[a-z2-7]{52}`)

// bootstrapKey returns the one API key a first start's banner printed.
func bootstrapKey(t *testing.T, banner string) string {
	t.Helper()
	keys := keyPattern.FindAllString(banner, -1)
	if len(keys) != 1 || !strings.Contains(banner, "export MCPMON_TOKEN="+keys[0]) {
		t.Fatalf("want the banner to print one admin key as export MCPMON_TOKEN=…, got %d keys in:\n%s", len(keys), banner)
	}
	return keys[0]
}

func status(t *testing.T, c apiClient, method, path string) *http.Response {
	t.Helper()
	resp := c.do(t, method, path, nil)
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp
}

// TestFirstStartPrintsAdminKeyOnce: `mcpmon run` on an empty data dir prints
// an admin key once, stores no plaintext copy, and a restart prints none;
// /v1 needs the key and the ops endpoints do not.
func TestFirstStartPrintsAdminKeyOnce(t *testing.T) {
	o := embeddedOptions(t)
	var out bytes.Buffer
	d, err := Start(t.Context(), RoleAll, o, Deps{Stdout: &out})
	if err != nil {
		t.Fatal(err)
	}
	key := bootstrapKey(t, out.String())
	if !strings.Contains(out.String(), `-H "Authorization: Bearer $MCPMON_TOKEN"`) {
		t.Errorf("the banner's curl example sends no key:\n%s", out.String())
	}
	anon, authed := apiClient{addr: d.Addr()}, apiClient{addr: d.Addr(), key: key}
	resp := status(t, anon, http.MethodGet, "/v1/endpoints")
	if resp.StatusCode != http.StatusUnauthorized || !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer") {
		t.Fatalf("GET /v1/endpoints without a key = %d (WWW-Authenticate %q), want 401 Bearer", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
	}
	for _, path := range []string{"/healthz", "/readyz", "/metrics"} {
		if resp := status(t, anon, http.MethodGet, path); resp.StatusCode != http.StatusOK {
			t.Errorf("GET %s without a key = %d, want 200: ops endpoints stay open", path, resp.StatusCode)
		}
	}
	if resp := status(t, authed, http.MethodGet, "/v1/keys"); resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /v1/keys with the admin key = %d", resp.StatusCode)
	}
	d.Stop()
	if err := d.Wait(); err != nil {
		t.Fatal(err)
	}

	// Nothing under the data dir holds the key.
	err = filepath.WalkDir(o.DataDir, func(path string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err == nil && (bytes.Contains(b, []byte(key)) || bytes.Contains(b, []byte(key[len(auth.Prefix):]))) {
			t.Errorf("%s holds the API key in plaintext", path)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}

	out.Reset()
	d, err = Start(t.Context(), RoleAll, o, Deps{Stdout: &out})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { d.Stop(); _ = d.Wait() }()
	if keyPattern.MatchString(out.String()) || !strings.Contains(out.String(), "mcpmon keys create") {
		t.Fatalf("restart banner: want no key and a pointer to `mcpmon keys create`:\n%s", out.String())
	}
	if resp := status(t, apiClient{addr: d.Addr(), key: key}, http.MethodGet, "/v1/endpoints"); resp.StatusCode != http.StatusOK {
		t.Fatalf("the first start's key after a restart = %d, want 200", resp.StatusCode)
	}
}

// TestAuthNoneIsLoopbackOnlyAndSaysSo: --auth none is refused on a
// non-loopback listener, and where it runs the banner says the API is open
// and no key is created.
func TestAuthNoneIsLoopbackOnlyAndSaysSo(t *testing.T) {
	err := Main(t.Context(), RoleAll, []string{"--auth", "none", "--listen", "0.0.0.0:0", "--data-dir", t.TempDir()}, func(string) string { return "" }, io.Discard, io.Discard)
	if !IsUsage(err) || !strings.Contains(err.Error(), "loopback") {
		t.Fatalf("--auth none on 0.0.0.0: err = %v, want a usage error naming loopback", err)
	}
	o := embeddedOptions(t)
	o.Auth = config.AuthNone
	var out bytes.Buffer
	d, err := Start(t.Context(), RoleAll, o, Deps{Stdout: &out})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { d.Stop(); _ = d.Wait() }()
	if !strings.Contains(out.String(), "WARNING: --auth none") || keyPattern.MatchString(out.String()) {
		t.Fatalf("banner with --auth none: want the warning and no key:\n%s", out.String())
	}
	if resp := status(t, apiClient{addr: d.Addr()}, http.MethodGet, "/v1/endpoints"); resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /v1/endpoints with --auth none = %d", resp.StatusCode)
	}
	if any, err := auth.NewKeyring(d.Store(), auth.Options{}).Any(t.Context()); err != nil || any {
		t.Fatalf("--auth none created a key (%v, %v)", any, err)
	}
}

// runKeys runs `mcpmon keys` and returns stdout, stderr and the error.
func runKeys(t *testing.T, env map[string]string, args ...string) (string, string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	err := ManageKeys(t.Context(), args, func(k string) string { return env[k] }, &out, &errOut)
	return out.String(), errOut.String(), err
}

// TestKeysCommandOffline: create, list and revoke against a stopped data
// dir; the key works on the next start and is refused once revoked; a data
// dir in use is named as such.
func TestKeysCommandOffline(t *testing.T) {
	dir := t.TempDir()
	env := map[string]string{"MCPMON_DATA_DIR": dir}

	if _, _, err := runKeys(t, env, "list"); err == nil || !strings.Contains(err.Error(), "no store at") {
		t.Fatalf("list on an empty dir: err = %v, want it to say there is no store", err)
	}
	// A data dir without a store is most likely the wrong one (a default
	// ./data elsewhere): create refuses it, naming the path, unless --init
	// asks for a new store.
	storePath := filepath.Join(dir, "store.db")
	if _, _, err := runKeys(t, env, "create", "--name", "ci", "--scope", "write"); !IsUsage(err) || !strings.Contains(err.Error(), "no store at "+storePath) || !strings.Contains(err.Error(), "--data-dir") {
		t.Fatalf("create on an empty dir: err = %v, want a usage error naming %s and --data-dir", err, storePath)
	}
	if _, err := os.Stat(storePath); err == nil {
		t.Fatal("create without --init made a store")
	}
	if _, _, err := runKeys(t, env, "list", "--init"); !IsUsage(err) {
		t.Fatalf("list --init: err = %v, want a usage error", err)
	}
	stdout, stderr, err := runKeys(t, env, "create", "--init", "--name", "ci", "--scope", "write", "--expires", "720h")
	if err != nil {
		t.Fatal(err)
	}
	key := strings.TrimSpace(stdout)
	if !keyPattern.MatchString(key) || key != keyPattern.FindString(key) || !strings.Contains(stderr, "shown only now") {
		t.Fatalf("create printed %q (stderr %q): want the key alone on stdout", stdout, stderr)
	}
	if !strings.Contains(stderr, "store: the embedded store at "+storePath) {
		t.Fatalf("create: stderr %q, want the store it wrote to", stderr)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"create", "--name", "x"}, "--scope"},
		{[]string{"create", "--scope", "read"}, "--name"},
		{[]string{"create", "--name", "ci", "--scope", "read"}, "taken"},
		{[]string{"revoke"}, "one key ID or name"},
		{[]string{"revoke", "nope"}, "not found"},
		{[]string{"rotate"}, "keys create"},
	} {
		if _, _, err := runKeys(t, env, tc.args...); err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("keys %v: err = %v, want one line mentioning %q", tc.args, err, tc.want)
		}
	}

	// The daemon started on the data dir holds it; keys says so.
	o := embeddedOptions(t)
	o.DataDir = dir
	var banner bytes.Buffer
	d, err := Start(t.Context(), RoleAll, o, Deps{Stdout: &banner})
	if err != nil {
		t.Fatal(err)
	}
	if keyPattern.MatchString(banner.String()) {
		t.Fatalf("a store with a key made by `keys create` got a bootstrap key too:\n%s", banner.String())
	}
	c := apiClient{addr: d.Addr(), key: key}
	if resp := status(t, c, http.MethodGet, "/v1/endpoints"); resp.StatusCode != http.StatusOK {
		t.Fatalf("GET with the created write key = %d", resp.StatusCode)
	}
	if resp := status(t, c, http.MethodGet, "/v1/keys"); resp.StatusCode != http.StatusForbidden {
		t.Fatalf("GET /v1/keys with a write key = %d, want 403", resp.StatusCode)
	}
	if _, _, err := runKeys(t, env, "list"); err == nil || !strings.Contains(err.Error(), "locked by a running mcpmon") {
		t.Fatalf("keys list while mcpmon runs: err = %v, want it to say the data dir is locked", err)
	}
	d.Stop()
	if err := d.Wait(); err != nil {
		t.Fatal(err)
	}

	stdout, _, err = runKeys(t, env, "list")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(stdout, "ID") || !strings.Contains(stdout, " ci ") || !strings.Contains(stdout, "active") || strings.Contains(stdout, key) {
		t.Fatalf("list:\n%s", stdout)
	}
	for _, line := range strings.Split(stdout, "\n") {
		// ID NAME TENANT SCOPE STATUS CREATED LAST-USED EXPIRES: the clean
		// shutdown flushed the use above.
		if f := strings.Fields(line); len(f) == 8 && f[1] == "ci" && (f[6] == "never" || f[7] == "never") {
			t.Fatalf("list shows no last use or no expiry for ci:\n%s", stdout)
		}
	}
	if stdout, _, err = runKeys(t, env, "revoke", "ci"); err != nil || !strings.Contains(stdout, "revoked API key") {
		t.Fatalf("revoke ci: %q, %v", stdout, err)
	}
	if stdout, _, _ = runKeys(t, env, "list"); !strings.Contains(stdout, "revoked") {
		t.Fatalf("list after revoke:\n%s", stdout)
	}

	d, err = Start(t.Context(), RoleAll, o, Deps{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { d.Stop(); _ = d.Wait() }()
	if resp := status(t, apiClient{addr: d.Addr(), key: key}, http.MethodGet, "/v1/endpoints"); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("the revoked key = %d, want 401", resp.StatusCode)
	}
}

// TestRevokeReachesARunningServerWithinTheCacheTTL: on Redis, `mcpmon keys
// revoke` runs beside a live API; the API refuses the key once its cache
// entry ages out (the clock is the daemon's, advanced by the test).
func TestRevokeReachesARunningServerWithinTheCacheTTL(t *testing.T) {
	redisURL := testpeers.RedisURL(t)
	o := embeddedOptions(t)
	setupRedis(t, &o)
	o.RedisURL = redisURL
	env := map[string]string{"MCPMON_STORE": "redis", "MCPMON_REDIS_URL": o.RedisURL, "MCPMON_REDIS_PREFIX": o.RedisPrefix}
	clk := clock.NewFake(time.Now())
	var banner bytes.Buffer
	d, err := Start(t.Context(), RoleAll, o, Deps{Clock: clk, Stdout: &banner})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { d.Stop(); _ = d.Wait() }()
	admin := bootstrapKey(t, banner.String())

	stdout, stderr, err := runKeys(t, env, "create", "--name", "deploy", "--scope", "read")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stderr, "store: Redis at ") || !strings.Contains(stderr, o.RedisPrefix) {
		t.Fatalf("create on Redis: stderr %q, want the Redis and prefix it wrote to", stderr)
	}
	key := strings.TrimSpace(stdout)
	c := apiClient{addr: d.Addr(), key: key}
	if resp := status(t, c, http.MethodGet, "/v1/endpoints"); resp.StatusCode != http.StatusOK {
		t.Fatalf("the new key on the running API = %d", resp.StatusCode)
	}
	if stdout, _, err = runKeys(t, env, "list"); err != nil || !strings.Contains(stdout, "deploy") || !strings.Contains(stdout, "admin") {
		t.Fatalf("list beside a running API: %v\n%s", err, stdout)
	}
	if _, _, err := runKeys(t, env, "revoke", "deploy"); err != nil {
		t.Fatal(err)
	}
	clk.Advance(auth.DefaultCacheTTL - time.Second)
	if resp := status(t, c, http.MethodGet, "/v1/endpoints"); resp.StatusCode != http.StatusOK {
		t.Fatalf("within the TTL the cached key = %d; want 200 (the cache is what bounds store lookups)", resp.StatusCode)
	}
	clk.Advance(time.Second)
	if resp := status(t, c, http.MethodGet, "/v1/endpoints"); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("the revoked key %s after the cache TTL = %d, want 401", auth.DefaultCacheTTL, resp.StatusCode)
	}
	if resp := status(t, apiClient{addr: d.Addr(), key: admin}, http.MethodGet, "/v1/keys"); resp.StatusCode != http.StatusOK {
		t.Fatalf("the admin key = %d", resp.StatusCode)
	}
}

// TestREADMETryItSendsTheKey keeps the README's first steps working with
// keys on: it takes the printed key and sends it.
func TestREADMETryItSendsTheKey(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, tryIt, _ := strings.Cut(string(readme), "## Try it")
	tryIt, _, _ = strings.Cut(tryIt, "\n## ")
	for _, want := range []string{"export MCPMON_TOKEN=mcpmon_", `"Authorization: Bearer $MCPMON_TOKEN"`} {
		if !strings.Contains(tryIt, want) {
			t.Errorf("README's Try it lacks %s", want)
		}
	}
	for _, line := range strings.Split(tryIt, "\n") {
		public := strings.Contains(line, "/v1/openapi.json") || strings.Contains(line, "/docs") // documentation needs no key
		if strings.HasPrefix(line, "curl ") && !public && !strings.Contains(line, "Authorization") && !strings.Contains(line, `-H "$H"`) {
			t.Errorf("README's Try it calls the API without a key: %s", line)
		}
	}
}

// TestOfflineKeyCommandNamesTheStore: the banner's way to a lost admin key
// names the store mcpmon runs on. Without --data-dir the command opens
// ./data, a new empty store whose key works against nothing; the Redis
// URL, which may hold a password, is not repeated.
func TestOfflineKeyCommandNamesTheStore(t *testing.T) {
	o := config.Defaults()
	o.DataDir = "/srv/mcpmon data"
	if got := offlineKeyCommand(o); !strings.Contains(got, `--data-dir "/srv/mcpmon data"`) || !strings.Contains(got, "stop mcpmon") {
		t.Errorf("embedded: %q, want the data dir and to stop mcpmon first", got)
	}
	o.Store, o.RedisURL, o.RedisPrefix = config.StoreRedis, "redis://:hunter2@redis:6379/0", "team-a:"
	if got := offlineKeyCommand(o); strings.Contains(got, "hunter2") || !strings.Contains(got, "--store redis") || !strings.Contains(got, `--redis-prefix "team-a:"`) {
		t.Errorf("redis: %q, want --store redis and the prefix, never the URL", got)
	}
}
