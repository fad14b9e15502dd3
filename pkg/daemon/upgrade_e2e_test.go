package daemon

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	goredis "github.com/redis/go-redis/v9"

	"github.com/mcpmon/mcpmon/pkg/config"
	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/msg"
	"github.com/mcpmon/mcpmon/pkg/seal"
	"github.com/mcpmon/mcpmon/pkg/testpeers"
	"github.com/mcpmon/mcpmon/pkg/testpeers/e2e"
)

// The upgrade test: a data dir an older mcpmon wrote (testdata/upgrade:
// <rev>.tar.gz and its manifest <rev>.json, written by
// TestWriteUpgradeFixture; <rev>-redis with the AOF of the Redis it used)
// is opened by this build, which must carry on
// where the older one stopped: the same API key, endpoints, sealed header
// secrets, the open incident (not paged again, resolved once) and the
// uptime the older build had counted, from a file it left when killed. The embedded store's layout changed
// several times since (#25); each move has a unit test on a hand-built
// old layout, and this is the test on a file an old build really wrote.
// Each fixture is also opened as if the older build had stopped 8 and 91
// days before (upgradeAges: this build on a clock moved ahead, and the
// fixture's Redis keys that would have expired meanwhile deleted), so a
// long downtime is tested today and an ageing fixture changes nothing: the
// checks hold up to the daily rollups' 400 days (model.DailyBuckets), and
// at 401 the uptime check fails.

// upgradeFixture is a fixture's manifest.
type upgradeFixture struct {
	Rev string `json:"rev"` // the build that wrote it
	// Store is "redis" for `mcpmon run --store redis` (the archive holds
	// data/, the embedded queue's directory with secrets.key, and redis/,
	// the redis-server's AOF); "" for the embedded store (the archive is
	// the data dir).
	Store   string    `json:"store,omitempty"`
	Written time.Time `json:"written"` // when it stopped
	Token   string    `json:"token"`   // its admin API key (a test key)
	// SteadyAddr and BrokenAddr are the endpoints' servers: fixed
	// loopback ports below Linux's ephemeral range, so the replay can
	// serve the URLs stored in the file.
	SteadyAddr string `json:"steadyAddr"`
	BrokenAddr string `json:"brokenAddr"`
	Steady     string `json:"steady"` // up all along; its server asks for upgradeSecret
	Broken     string `json:"broken"` // up, then down: Incident open when the build stopped
	Incident   string `json:"incident"`
	// From and To bound the run; SteadyUp and BrokenDown are the seconds
	// the older build's uptime counted in them.
	From       time.Time `json:"from"`
	To         time.Time `json:"to"`
	SteadyUp   int64     `json:"steadyUp"`
	BrokenDown int64     `json:"brokenDown"`
}

// upgradeSecret is the steady endpoint's header value, sealed in the
// older build's file: the replay's server refuses a probe without it.
const upgradeSecret = "Bearer upgrade-fixture-secret"

// upgradeArgs are both builds' flags (the older build's must take them),
// on the Redis at redisURL when it is set.
func upgradeArgs(dataDir, redisURL string) []string {
	args := []string{"run", "--listen", "127.0.0.1:0", "--data-dir", dataDir, "--window", "1s", "--grace", "300ms",
		"--allow-private-targets"}
	if redisURL != "" {
		args = append(args, "--store", "redis", "--redis-url", redisURL, "--secrets-key-file", filepath.Join(dataDir, "secrets.key"))
	}
	return args
}

// serveUpgradeTarget serves a go-sdk MCP server on addr (asking for auth
// in the Authorization header when it is set) until the test ends or stop.
func serveUpgradeTarget(t *testing.T, addr, auth string) (stop func()) {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("serve the fixture's endpoint on %s (a fixed port below the ephemeral range, so the URL stored in the file works): %v", addr, err)
	}
	srv := echoMCPServer("upgrade-fixture")
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	hs := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if auth != "" && r.Header.Get("Authorization") != auth {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	})}
	go func() { _ = hs.Serve(ln) }()
	stopped := false
	stop = func() {
		if !stopped {
			stopped = true
			_ = hs.Close()
		}
	}
	t.Cleanup(stop)
	return stop
}

// startBuild starts bin on dataDir and returns its API address.
func startBuild(t *testing.T, name, bin, dataDir, redisURL, hook string) (*e2e.Proc, *e2e.Banner, string) {
	t.Helper()
	banner := e2e.NewBanner()
	p := testpeers.StartProcess(t, e2e.Spec{Name: name, Path: bin, Args: upgradeArgs(dataDir, redisURL),
		Env: append(os.Environ(), "MCPMON_WEBHOOK_URL="+hook), Output: banner})
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	addr, err := banner.Addr(ctx, p.Exited())
	if err == nil {
		err = p.WaitReady(t.Context(), 90*time.Second, e2e.HTTPReady(addr))
	}
	if err != nil {
		t.Fatalf("%s: %v\n%s", name, err, banner)
	}
	return p, banner, addr
}

// uptimeOf is the endpoint's uptime over [from, to).
func (c apiClient) uptimeOf(t *testing.T, id string, from, to time.Time) (up, down int64) {
	t.Helper()
	var v struct {
		Uptime struct {
			Up   int64 `json:"upSeconds"`
			Down int64 `json:"downSeconds"`
		} `json:"uptime"`
	}
	q := url.Values{"range": {"custom"}, "from": {from.UTC().Format(time.RFC3339)}, "to": {to.UTC().Format(time.RFC3339)}}
	if err := json.Unmarshal([]byte(c.get(t, "/v1/endpoints/"+id+"/uptime?"+q.Encode())), &v); err != nil {
		t.Fatal(err)
	}
	return v.Uptime.Up, v.Uptime.Down
}

// incidentState is the incident's state as the API shows it.
func (c apiClient) incidentState(t *testing.T, id string) string {
	t.Helper()
	var v struct {
		State string `json:"state"`
	}
	if err := json.Unmarshal([]byte(c.get(t, "/v1/incidents/"+id)), &v); err != nil {
		t.Fatal(err)
	}
	return v.State
}

// TestUpgradeFromAnOlderDataDir opens each fixture's data dir with this
// build and checks that it carries on where the older build stopped.
func TestUpgradeFromAnOlderDataDir(t *testing.T) {
	t.Parallel() // its servers' ports are its own, a pair per fixture
	manifests, err := filepath.Glob(filepath.Join("testdata", "upgrade", "*.json"))
	if err != nil || len(manifests) == 0 {
		t.Fatalf("no upgrade fixture in testdata/upgrade (%v): write one with TestWriteUpgradeFixture", err)
	}
	bin := testpeers.Mcpmon(t)
	ports := map[string]string{} // address → the fixture serving it
	for _, path := range manifests {
		var fx upgradeFixture
		b, err := os.ReadFile(path)
		if err == nil {
			err = json.Unmarshal(b, &fx)
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		name := strings.TrimSuffix(filepath.Base(path), ".json")
		for _, addr := range []string{fx.SteadyAddr, fx.BrokenAddr} {
			if other, ok := ports[addr]; ok {
				t.Fatalf("fixtures %s and %s both serve %s: write one again with another MCPMON_UPGRADE_PORT", other, name, addr)
			}
			ports[addr] = name
		}
		archive := strings.TrimSuffix(path, ".json") + ".tar.gz"
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			// One after the other: each serves the fixture's fixed ports.
			t.Run("now", func(t *testing.T) { replayUpgrade(t, archive, fx, 0, binaryStart(bin)) })
			for _, age := range upgradeAges {
				t.Run(fmt.Sprintf("%d days on", age/(24*time.Hour)), func(t *testing.T) { replayUpgrade(t, archive, fx, age, inProcessStart(age)) })
			}
		})
	}
}

// upgradeAges are the downtimes replayed besides none: the data dir opened
// past the 7-day horizons (the ledger's TTL, the verdict history, the
// hourly rollups) and past the audit log's 90 days. Each replay is a
// fixture opened that long after the older build stopped, so the test
// does not wait for its fixtures to age to find what a long downtime does.
var upgradeAges = []time.Duration{8 * 24 * time.Hour, 91 * 24 * time.Hour}

// upgradeStart starts this build on an unpacked fixture and returns its
// API address; it stops when the test ends.
type upgradeStart func(t *testing.T, dataDir, redisURL, hook string) string

// binaryStart runs the mcpmon binary, as a user upgrading does.
func binaryStart(bin string) upgradeStart {
	return func(t *testing.T, dataDir, redisURL, hook string) string {
		_, _, addr := startBuild(t, "mcpmon (this build)", bin, dataDir, redisURL, hook)
		return addr
	}
}

// inProcessStart runs this build in the test's process on a clock age
// ahead of the wall's, with the flags upgradeArgs gives the binary.
func inProcessStart(age time.Duration) upgradeStart {
	return func(t *testing.T, dataDir, redisURL, hook string) string {
		o := config.Defaults()
		o.Listen, o.DataDir, o.Window, o.Grace, o.AllowPrivateTargets = "127.0.0.1:0", dataDir, time.Second, 300*time.Millisecond, true
		o.WebhookURL = model.SecretURL(hook)
		if redisURL != "" {
			o.Store, o.RedisURL, o.SecretsKeyFile = config.StoreRedis, redisURL, filepath.Join(dataDir, "secrets.key")
		}
		d, err := Start(t.Context(), RoleAll, o, Deps{Logger: testLogger(t), Stdout: io.Discard, Clock: aheadClock(age)})
		if err != nil {
			t.Fatalf("start this build %s after the older one stopped: %v", age, err)
		}
		t.Cleanup(func() {
			d.Stop()
			if err := d.Wait(); err != nil {
				t.Errorf("mcpmon stopped with: %v", err)
			}
		})
		return d.Addr()
	}
}

// aheadClock is the wall clock moved d ahead.
type aheadClock time.Duration

func (a aheadClock) Now() time.Time { return time.Now().Add(time.Duration(a)) }

// expireRedisKeys deletes the keys of the Redis at url that would have
// expired within age: what the server's own clock does to the fixture's
// TTLs (the ledger's, the events', the audit log's) over that downtime.
func expireRedisKeys(t *testing.T, url string, age time.Duration) {
	t.Helper()
	opt, err := goredis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	rdb := goredis.NewClient(opt)
	defer rdb.Close()
	ctx := t.Context()
	var expired int
	iter := rdb.Scan(ctx, 0, "*", 1000).Iterator()
	for iter.Next(ctx) {
		ttl, err := rdb.PTTL(ctx, iter.Val()).Result()
		if err != nil {
			t.Fatal(err)
		}
		if ttl > 0 && ttl <= age {
			if err := rdb.Del(ctx, iter.Val()).Err(); err != nil {
				t.Fatal(err)
			}
			expired++
		}
	}
	if err := iter.Err(); err != nil {
		t.Fatal(err)
	}
	if expired == 0 {
		t.Fatalf("no key of the fixture's Redis expires within %s: the ledger's done keys should", age)
	}
}

// replayUpgrade opens the fixture's data dir with this build, started by
// start on a clock age after the older build stopped, and checks that it
// carries on where that one stopped.
func replayUpgrade(t *testing.T, archive string, fx upgradeFixture, age time.Duration, start upgradeStart) {
	dataDir, redisURL := filepath.Join(t.TempDir(), "data"), ""
	switch fx.Store {
	case "":
		if err := untarGz(archive, dataDir); err != nil {
			t.Fatalf("unpack %s: %v", archive, err)
		}
	case "redis":
		root := t.TempDir()
		if err := untarGz(archive, root); err != nil {
			t.Fatalf("unpack %s: %v", archive, err)
		}
		dataDir = filepath.Join(root, "data")
		rs := testpeers.NewRedisServer(t)
		if err := os.CopyFS(rs.Dir(), os.DirFS(filepath.Join(root, "redis"))); err != nil {
			t.Fatal(err)
		}
		rs.Start() // loads the older build's AOF
		redisURL = rs.URL()
		if age > 0 {
			expireRedisKeys(t, redisURL, age)
		}
	default:
		t.Fatalf("fixture %s: store %q, want \"\" or \"redis\"", fx.Rev, fx.Store)
	}
	serveUpgradeTarget(t, fx.SteadyAddr, upgradeSecret) // the broken endpoint's server stays down for now
	rcv, hook := newReceiver(t)
	now := aheadClock(age).Now
	started := now()
	addr := start(t, dataDir, redisURL, hook)
	c := apiClient{addr: addr, key: fx.Token}
	if _, err := os.Stat(filepath.Join(dataDir, "queue.db")); fx.Store == "" && !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the older layout's queue.db after the start: %v, want it moved into store.db and removed (beside --store redis the queue keeps it)", err)
	}

	// The older build's key, endpoints and open incident.
	status, body := c.send(t, http.MethodGet, "/v1/endpoints", nil)
	if status != http.StatusOK || !strings.Contains(string(body), fx.Steady) || !strings.Contains(string(body), fx.Broken) {
		t.Fatalf("GET /v1/endpoints with the older build's key: %d %s, want both endpoints", status, body)
	}
	if st := c.incidentState(t, fx.Incident); st != "open" {
		t.Fatalf("incident %s after the upgrade: %q, want still open", fx.Incident, st)
	}
	// The uptime the older build counted, read through this one.
	if up, _ := c.uptimeOf(t, fx.Steady, fx.From, fx.To); up < fx.SteadyUp {
		t.Errorf("steady endpoint's up seconds over the older build's run: %d, want at least the %d it counted", up, fx.SteadyUp)
	}
	if _, down := c.uptimeOf(t, fx.Broken, fx.From, fx.To); down < fx.BrokenDown {
		t.Errorf("broken endpoint's down seconds over the older build's run: %d, want at least the %d it counted", down, fx.BrokenDown)
	}

	// Probing goes on: the steady endpoint up (its sealed header unsealed:
	// its server refuses a probe without it), the broken one down, and
	// nobody paged again for the incident the older build opened.
	eventually(t, 60*time.Second, "an up verdict of the steady endpoint from this build", func() bool {
		v := c.lastVerdict(t, fx.Steady)
		return v.State == msg.StateUp && v.Window.After(started)
	})
	eventually(t, 60*time.Second, "a down verdict of the broken endpoint from this build", func() bool {
		v := c.lastVerdict(t, fx.Broken)
		return v.State == msg.StateDown && v.Window.After(started)
	})
	if got := rcv.all(); len(got) != 0 {
		t.Fatalf("alerts after the upgrade while nothing changed: %v, want none (the open incident was paged by the older build)", got)
	}

	// The broken endpoint back: one resolve, of the older build's incident.
	serveUpgradeTarget(t, fx.BrokenAddr, "")
	res := rcv.wait(t, 60*time.Second)
	if res["kind"] != "resolve" || res["incidentId"] != fx.Incident {
		t.Fatalf("first alert after the broken endpoint came back: %v, want the resolve of %s", res, fx.Incident)
	}
	eventually(t, 30*time.Second, "the incident resolved in the API", func() bool { return c.incidentState(t, fx.Incident) == "resolved" })
	resolved := now()
	eventually(t, 30*time.Second, "three more windows decided", func() bool {
		return c.lastVerdict(t, fx.Broken).Window.After(resolved.Add(3 * time.Second))
	})
	if got := rcv.all(); len(got) != 1 {
		t.Fatalf("alerts after the upgrade: %v, want the one resolve", got)
	}
}

// TestWriteUpgradeFixture writes testdata/upgrade/<rev>.tar.gz and
// <rev>.json with an older build. It runs only when asked:
//
//	git worktree add /tmp/old REV && (cd /tmp/old && go build -o /tmp/old-mcpmon ./cmd/mcpmon)
//	MCPMON_UPGRADE_FROM=/tmp/old-mcpmon MCPMON_UPGRADE_REV=REV MCPMON_UPGRADE_PORT=29517 \
//	  go test ./pkg/daemon -run TestWriteUpgradeFixture -v
//
// MCPMON_UPGRADE_PORT (default 29511) and the port after it serve the two
// endpoints: a pair no other fixture uses. MCPMON_UPGRADE_STORE=redis
// writes one on `--store redis` (a redis-server of its own).
func TestWriteUpgradeFixture(t *testing.T) {
	bin, rev := os.Getenv("MCPMON_UPGRADE_FROM"), os.Getenv("MCPMON_UPGRADE_REV")
	if bin == "" || rev == "" {
		t.Skip("writes an upgrade fixture: set MCPMON_UPGRADE_FROM (an older mcpmon binary) and MCPMON_UPGRADE_REV (its commit), and MCPMON_UPGRADE_STORE=redis for one on Redis")
	}
	port := 29511 // below Linux's ephemeral range; one pair per fixture, so the replays run at once
	if p := os.Getenv("MCPMON_UPGRADE_PORT"); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1024 || n >= 32767 {
			t.Fatalf("MCPMON_UPGRADE_PORT=%q: want a port in 1024..32766 (below the ephemeral range)", p)
		}
		port = n
	}
	fx := upgradeFixture{Rev: rev, Store: os.Getenv("MCPMON_UPGRADE_STORE"),
		SteadyAddr: fmt.Sprintf("127.0.0.1:%d", port), BrokenAddr: fmt.Sprintf("127.0.0.1:%d", port+1)}
	serveUpgradeTarget(t, fx.SteadyAddr, upgradeSecret)
	stopBroken := serveUpgradeTarget(t, fx.BrokenAddr, "")
	rcv, hook := newReceiver(t)
	root := t.TempDir()
	dataDir, packed, name, redisURL := root, root, rev, ""
	var rs *testpeers.RedisServer
	switch fx.Store {
	case "":
	case "redis":
		dataDir, name = filepath.Join(root, "data"), rev+"-redis"
		if err := os.MkdirAll(dataDir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dataDir, "secrets.key"), []byte(seal.EncodeKey(seal.NewKey())+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		rs = testpeers.NewRedisServer(t)
		rs.Start()
		redisURL = rs.URL()
	default:
		t.Fatalf("MCPMON_UPGRADE_STORE=%q: want redis or nothing", fx.Store)
	}
	fx.From = time.Now().UTC().Truncate(time.Second)
	p, banner, addr := startBuild(t, "mcpmon "+rev, bin, dataDir, redisURL, hook)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	token, err := banner.Token(ctx, p.Exited())
	if err != nil {
		t.Fatal(err)
	}
	fx.Token = token
	c := apiClient{addr: addr, key: token}
	fx.Steady = c.register(t, map[string]any{"name": "steady", "url": "http://" + fx.SteadyAddr + "/mcp", "schedule": "@every 1s",
		"timeout": "1s", "headers": map[string]string{"Authorization": upgradeSecret}})
	fx.Broken = c.register(t, map[string]any{"name": "broken", "url": "http://" + fx.BrokenAddr + "/mcp", "schedule": "@every 1s", "timeout": "1s"})
	for _, id := range []string{fx.Steady, fx.Broken} {
		eventually(t, 30*time.Second, "up verdicts", func() bool { return c.latestState(t, id) == msg.StateUp })
	}
	eventually(t, 60*time.Second, "a minute of verdicts", func() bool { return c.verdictWindows(t, fx.Steady) >= 60 })
	stopBroken()
	open := rcv.wait(t, 60*time.Second)
	if open["kind"] != "open" {
		t.Fatalf("first alert: %v, want an open", open)
	}
	fx.Incident, _ = open["incidentId"].(string)
	eventually(t, 30*time.Second, "ten more windows", func() bool { return c.verdictWindows(t, fx.Broken) >= 80 })
	// The uptime it counted so far, then a crash: the file keeps what a
	// SIGKILL leaves (the queue's messages in flight, in the older
	// layout's own queue.db), which this build must take over.
	fx.To = time.Now().UTC().Truncate(time.Second).Add(time.Second)
	fx.SteadyUp, _ = c.uptimeOf(t, fx.Steady, fx.From, fx.To)
	_, fx.BrokenDown = c.uptimeOf(t, fx.Broken, fx.From, fx.To)
	if fx.SteadyUp == 0 || fx.BrokenDown == 0 {
		t.Fatalf("the older build counted %d up seconds of the steady endpoint and %d down of the broken one: want both above 0", fx.SteadyUp, fx.BrokenDown)
	}
	p.Kill()
	if rs != nil {
		rs.Kill() // every write was fsynced to its AOF before Redis acknowledged it
		if err := os.CopyFS(filepath.Join(root, "redis"), os.DirFS(rs.Dir())); err != nil {
			t.Fatal(err)
		}
	}
	fx.Written = time.Now().UTC()

	dir := filepath.Join("testdata", "upgrade")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := tarGz(packed, filepath.Join(dir, name+".tar.gz")); err != nil {
		t.Fatal(err)
	}
	b, _ := json.MarshalIndent(fx, "", "  ")
	if err := os.WriteFile(filepath.Join(dir, name+".json"), append(b, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %s/%s.{tar.gz,json}: incident %s", dir, name, fx.Incident)
}

// maxFixtureFile bounds a file unpacked from a fixture.
const maxFixtureFile = 64 << 20

// untarGz unpacks the regular files and directories of archive into dir.
func untarGz(archive, dir string) error {
	f, err := os.Open(archive)
	if err != nil {
		return err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return err
	}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if !filepath.IsLocal(h.Name) {
			return fmt.Errorf("entry %q leaves the directory", h.Name)
		}
		p := filepath.Join(dir, h.Name)
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(p, 0o700); err != nil {
				return err
			}
		case tar.TypeReg:
			if h.Size > maxFixtureFile {
				return fmt.Errorf("entry %q: %d bytes, more than a fixture holds", h.Name, h.Size)
			}
			if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
				return err
			}
			out, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY|os.O_EXCL, fs.FileMode(h.Mode)&0o600)
			if err != nil {
				return err
			}
			_, err = io.Copy(out, io.LimitReader(tr, h.Size))
			if cerr := out.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return err
			}
		}
	}
}

// tarGz packs dir's directories and regular files into archive.
func tarGz(dir, archive string) error {
	f, err := os.Create(archive)
	if err != nil {
		return err
	}
	zw := gzip.NewWriter(f)
	tw := tar.NewWriter(zw)
	err = tw.AddFS(os.DirFS(dir))
	for _, c := range []io.Closer{tw, zw, f} {
		if cerr := c.Close(); err == nil {
			err = cerr
		}
	}
	return err
}
