package daemon

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mcpmon/mcpmon/pkg/msg"
	"github.com/mcpmon/mcpmon/pkg/testpeers"
)

// proc is one mcpmon process of the fleet.
type proc struct {
	name string
	addr string
	cmd  *exec.Cmd
	out  *bytes.Buffer
}

type fleet struct {
	t     *testing.T
	bin   string
	env   []string
	mu    sync.Mutex
	procs []*proc
}

func buildBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "mcpmon")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/mcpmon/mcpmon/cmd/mcpmon").CombinedOutput()
	if err != nil {
		t.Fatalf("build mcpmon: %v\n%s", err, out)
	}
	return bin
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func (f *fleet) start(name string, args ...string) *proc {
	f.t.Helper()
	p := &proc{name: name, addr: freeAddr(f.t), out: &bytes.Buffer{}}
	p.cmd = exec.Command(f.bin, append(args, "--listen", p.addr)...)
	p.cmd.Env = f.env
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	if err := p.cmd.Start(); err != nil {
		f.t.Fatalf("start %s: %v", name, err)
	}
	f.mu.Lock()
	f.procs = append(f.procs, p)
	f.mu.Unlock()
	eventually(f.t, 20*time.Second, name+" ready", func() bool {
		if p.cmd.ProcessState != nil {
			f.t.Fatalf("%s exited: %s", name, p.out)
		}
		resp, err := httpClient.Get("http://" + p.addr + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	})
	return p
}

// kill ends p without warning, as a crashed node or an OOM kill would.
func (f *fleet) kill(p *proc) {
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	_, _ = p.cmd.Process.Wait()
}

// stopAll sends SIGTERM to every live process and waits for it.
func (f *fleet) stopAll() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, p := range f.procs {
		if p.cmd.ProcessState == nil {
			_ = p.cmd.Process.Signal(syscall.SIGTERM)
		}
	}
	for _, p := range f.procs {
		if p.cmd.ProcessState == nil {
			done := make(chan struct{})
			go func() { _ = p.cmd.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(30 * time.Second):
				_ = p.cmd.Process.Kill()
				<-done
			}
		}
	}
	f.procs = nil
}

func (f *fleet) dumpLogs() {
	for _, p := range f.procs {
		f.t.Logf("---- %s ----\n%s", p.name, p.out)
	}
}

// TestFleet runs every role as its own process — two API/schedulers, two
// probers in different regions, two aggregators, two alerters — on fauxqs and
// redis-server, kills one replica of each role with SIGKILL mid-incident,
// and still sees exactly one alert and one resolve.
func TestFleet(t *testing.T) {
	sqsEndpoint := testpeers.SQSEndpoint(t)
	redisURL := testpeers.RedisURL(t)
	if testing.Short() {
		t.Skip("builds and runs nine processes; skipped with -short")
	}
	f := &fleet{t: t, bin: buildBinary(t)}
	prefix := fmt.Sprintf("fleet%d-", time.Now().UnixNano())
	rcv, hook := newReceiver(t)
	f.env = append(os.Environ(),
		"AWS_ACCESS_KEY_ID=test", "AWS_SECRET_ACCESS_KEY=test", "AWS_REGION=us-east-1",
		"MCPMON_QUEUE=sqs", "MCPMON_SQS_ENDPOINT="+sqsEndpoint, "MCPMON_SQS_PREFIX="+prefix, "MCPMON_SQS_REGION=us-east-1",
		"MCPMON_STORE=redis", "MCPMON_REDIS_URL="+redisURL, "MCPMON_REDIS_PREFIX="+prefix+":",
		"MCPMON_SECRETS_KEY="+testSecretsKey,
		"MCPMON_WINDOW=2s", "MCPMON_GRACE=500ms", "MCPMON_ALLOW_PRIVATE_TARGETS=true",
		"MCPMON_WEBHOOK_URL="+hook, "MCPMON_CLAIM_LEASE=5s", "MCPMON_VISIBILITY_TIMEOUT=4s",
		"MCPMON_LOG_LEVEL=debug",
		"MCPMON_AUTH=none", // every process listens on 127.0.0.1; API keys have their own tests
	)
	defer func() {
		if t.Failed() {
			f.dumpLogs()
		}
		f.stopAll()
	}()

	ensure := exec.Command(f.bin, "queues", "ensure")
	ensure.Env = f.env
	if out, err := ensure.CombinedOutput(); err != nil {
		t.Fatalf("mcpmon queues ensure: %v\n%s", err, out)
	}

	api1 := f.start("api-1", "api")
	api2 := f.start("api-2", "api")
	prober1 := f.start("prober-eu", "prober", "--region", "eu")
	f.start("prober-us", "prober", "--region", "us")
	agg1 := f.start("aggregator-1", "aggregator")
	f.start("aggregator-2", "aggregator")
	alert1 := f.start("alerter-1", "alerter", "--replica-id", "alerter-1")
	f.start("alerter-2", "alerter", "--replica-id", "alerter-2")

	srv := newMCPServer(t)
	id := register(t, api1.addr, map[string]any{"name": "fleet", "url": srv.url(), "schedule": "@every 1s", "timeout": "1s"})
	eventually(t, 60*time.Second, "an up verdict", func() bool { return latestState(t, api2.addr, id) == msg.StateUp })

	srv.stop()
	for _, p := range []*proc{api1, prober1, agg1, alert1} {
		f.kill(p)
	}
	open := rcv.wait(t, 90*time.Second)
	if open["state"] != "open" {
		t.Fatalf("first alert = %v, want open", open)
	}
	srv.start()
	resolve := rcv.wait(t, 90*time.Second)
	if resolve["state"] != "resolved" || resolve["incidentId"] != open["incidentId"] {
		t.Fatalf("second alert = %v, want the resolve of %v", resolve, open["incidentId"])
	}
	f.stopAll()
	got := rcv.all()
	var kinds []string
	for _, a := range got {
		kinds = append(kinds, fmt.Sprint(a["kind"]))
	}
	if len(got) != 2 {
		t.Fatalf("received %d alerts (%s), want exactly one open and one resolve", len(got), strings.Join(kinds, ", "))
	}
}

var httpClient = &http.Client{Timeout: 2 * time.Second}
