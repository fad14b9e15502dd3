package daemon

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mcpmon/mcpmon/pkg/config"
	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/msg"
	"github.com/mcpmon/mcpmon/pkg/testpeers"
)

// TestRedisCrashMidIncident: Redis (AOF on) is killed while an incident is
// open and the endpoint recovers while Redis is down. mcpmon must report
// not-ready, keep every message in the queue, and once Redis is back
// process them: the incident is not lost, the resolve is sent exactly once,
// and the open alert is never repeated.
func TestRedisCrashMidIncident(t *testing.T) {
	rs := testpeers.NewRedisServer(t)
	rs.Start()
	srv := newMCPServer(t)
	rcv, hook := newReceiver(t)

	o := fastOptions(t)
	o.WebhookURL = model.SecretURL(hook)
	o.ReplicaID = "redis-crash"
	o.Store = config.StoreRedis
	o.RedisURL = rs.URL()
	o.RedisPrefix = fmt.Sprintf("crash-%d:", time.Now().UnixNano())
	o.SecretsKey = model.Secret(testSecretsKey)
	o.Auth = config.AuthNone // loopback; API keys have their own tests (apikeys_test.go)
	// Failed messages come back after the visibility timeout: keep it short
	// so recovery after the outage is quick.
	o.Visibility = 2 * time.Second

	d, err := Start(t.Context(), RoleAll, o, Deps{Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if d != nil {
			d.Stop()
			_ = d.Wait()
		}
	}()

	id := register(t, d.Addr(), map[string]any{"name": "fixture", "url": srv.url(), "schedule": "@every 1s", "timeout": "1s"})
	eventually(t, 20*time.Second, "an up verdict", func() bool { return latestState(t, d.Addr(), id) == msg.StateUp })
	srv.stop()
	open := rcv.wait(t, 30*time.Second)
	if open["state"] != "open" {
		t.Fatalf("first alert = %v, want open", open)
	}

	rs.Kill()
	eventually(t, 10*time.Second, "/readyz to report the store outage", func() bool {
		resp, err := http.Get("http://" + d.Addr() + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusServiceUnavailable
	})
	// The endpoint recovers while Redis is down: nothing can be decided
	// until it returns (the final count below catches any extra alert).
	srv.start()

	rs.Start() // same port and AOF directory
	resolve := rcv.wait(t, 60*time.Second)
	if resolve["state"] != "resolved" || resolve["incidentId"] != open["incidentId"] {
		t.Fatalf("alert after Redis returned = %v, want the resolve of %v (the incident must survive the crash)", resolve, open["incidentId"])
	}
	d.Stop()
	if err := d.Wait(); err != nil {
		t.Fatal(err)
	}
	d = nil
	if got := rcv.all(); len(got) != 2 {
		t.Fatalf("received %d alerts, want exactly one open and one resolve: %v", len(got), got)
	}
}

// TestStartWaitsForRedis: a process started while Redis is down does not
// exit. It serves /readyz 503 naming the store, and once Redis answers it
// becomes ready and schedules, probes and decides as usual.
func TestStartWaitsForRedis(t *testing.T) {
	rs := testpeers.NewRedisServer(t) // prepared, not started
	srv := newMCPServer(t)

	o := fastOptions(t)
	o.Store = config.StoreRedis
	o.RedisURL = rs.URL()
	o.RedisPrefix = fmt.Sprintf("wait-%d:", time.Now().UnixNano())
	o.SecretsKey = model.Secret(testSecretsKey)
	o.Auth = config.AuthNone // loopback; API keys have their own tests (apikeys_test.go)

	d, err := Start(t.Context(), RoleAll, o, Deps{Logger: testLogger(t)})
	if err != nil {
		t.Fatalf("start with Redis down = %v, want a process that waits for it", err)
	}
	defer func() { d.Stop(); _ = d.Wait() }()
	if code, body := readyz(t, d.Addr()); code != http.StatusServiceUnavailable || !strings.Contains(body, "store") {
		t.Fatalf("/readyz with Redis down = %d %q, want 503 naming the store", code, body)
	}

	rs.Start()
	eventually(t, 10*time.Second, "/readyz 200 once Redis is up", func() bool {
		code, _ := readyz(t, d.Addr())
		return code == http.StatusOK
	})
	id := register(t, d.Addr(), map[string]any{"name": "fixture", "url": srv.url(), "schedule": "@every 1s", "timeout": "1s"})
	eventually(t, 20*time.Second, "an up verdict", func() bool { return latestState(t, d.Addr(), id) == msg.StateUp })
}

func readyz(t *testing.T, addr string) (int, string) {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}
