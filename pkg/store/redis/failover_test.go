package redis_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/store"
	"github.com/mcpmon/mcpmon/pkg/store/redis"
	"github.com/mcpmon/mcpmon/pkg/store/redis/redistest"
	"github.com/mcpmon/mcpmon/pkg/testpeers"
	"github.com/mcpmon/mcpmon/pkg/testpeers/e2e"
)

// clusterNode is one line of .ci/start-rediscluster.sh's nodes file.
type clusterNode struct {
	port, pid int
	conf      string
}

func (n clusterNode) addr() string { return "127.0.0.1:" + strconv.Itoa(n.port) }

func readNodes(t *testing.T, path string) []clusterNode {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []clusterNode
	for _, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		f := strings.Fields(line)
		if len(f) != 3 {
			t.Fatalf("%s: malformed line %q", path, line)
		}
		port, err1 := strconv.Atoi(f[0])
		pid, err2 := strconv.Atoi(f[1])
		if err1 != nil || err2 != nil {
			t.Fatalf("%s: malformed line %q", path, line)
		}
		out = append(out, clusterNode{port, pid, f[2]})
	}
	return out
}

// nodeInfo asks one node for its role and its view of the cluster state.
func nodeInfo(n clusterNode) (role string, ok bool, err error) {
	c := goredis.NewClient(&goredis.Options{Addr: n.addr(), DialTimeout: time.Second, ReadTimeout: time.Second, MaxRetries: -1})
	defer c.Close()
	ctx := context.Background() // also from a Cleanup, after the test's context ended
	info, err := c.ClusterInfo(ctx).Result()
	if err != nil {
		return "", false, err
	}
	r, err := c.Do(ctx, "ROLE").Slice()
	if err != nil {
		return "", false, err
	}
	role, _ = r[0].(string)
	return role, strings.Contains(info, "cluster_state:ok"), nil
}

// TestClusterPrimaryFailover: a primary SIGKILLed while a writer marks
// ledger keys done; its replica takes over, the store answers again, and
// every mark the store acknowledged is still there. The killed node is
// started again and rejoins as a replica, leaving the shared test cluster
// whole.
func TestClusterPrimaryFailover(t *testing.T) {
	url := testpeers.RedisClusterURL(t)
	nodes := readNodes(t, testpeers.RedisClusterNodes(t))
	var victim clusterNode
	for _, n := range nodes {
		if role, _, err := nodeInfo(n); err == nil && role == "master" {
			victim = n
			break
		}
	}
	if victim.port == 0 {
		t.Fatal("no primary answers")
	}
	// A replica may take over before its first sync (the cluster runs with
	// validity factor 0), and one that never synced has none of the
	// primary's data: on a cluster created moments before, the failover
	// then loses every earlier write of the victim's slots. Wait for the
	// victim's replica to be online, as it is in any cluster that has run
	// a while.
	testpeers.Eventually(t, 30*time.Second, "the primary's replica to be in sync", func() error {
		c := goredis.NewClient(&goredis.Options{Addr: victim.addr(), DialTimeout: time.Second, ReadTimeout: time.Second, MaxRetries: -1})
		defer c.Close()
		info, err := c.Info(context.Background(), "replication").Result()
		if err != nil {
			return err
		}
		if !strings.Contains(info, "state=online") {
			return fmt.Errorf("primary %s has no replica online: %q", victim.addr(), info)
		}
		return nil
	})
	// Ledger writes wait for the replica, as --redis-ledger-replicas 1
	// makes them; briefly, since after the failover the promoted primary
	// has no replica until the victim rejoins, and every wait times out.
	s := redistest.OpenURL(t, url, redis.Options{LedgerReplicas: 1, LedgerWait: 25 * time.Millisecond})
	ctx := t.Context()

	// mark writes ledger key i done, retrying through the failover; it
	// returns once the store acknowledged both steps.
	mark := func(i int) {
		key := fmt.Sprintf("failover-%d", i)
		deadline := time.Now().Add(30 * time.Second)
		for {
			_, err := s.Claim(ctx, key, "writer", time.Minute)
			if err == nil {
				if err = s.Complete(ctx, key, "writer"); err == nil {
					return
				}
			}
			if !errors.Is(err, store.ErrUnavailable) && !errors.Is(err, store.ErrConflict) || time.Now().After(deadline) {
				t.Fatalf("mark %s: %v", key, err)
			}
		}
	}
	// Endpoints too: their scripts write several keys of one shard.
	create := func(i int) {
		id := fmt.Sprintf("fo-ep-%d", i)
		deadline := time.Now().Add(30 * time.Second)
		for {
			_, err := s.CreateEndpoint(ctx, model.Endpoint{ID: id, Schedule: "@every 1m"})
			if err == nil || errors.Is(err, store.ErrConflict) {
				return
			}
			if !errors.Is(err, store.ErrUnavailable) || time.Now().After(deadline) {
				t.Fatalf("create %s: %v", id, err)
			}
		}
	}
	acked := 0
	for ; acked < 200; acked++ {
		mark(acked)
		create(acked)
	}
	if waits, short := s.LedgerWaits(); waits == 0 {
		t.Fatal("no ledger write waited for a replica")
	} else {
		t.Logf("before the kill: %d ledger writes waited for a replica, %d of them in vain", waits, short)
	}
	if err := syscall.Kill(victim.pid, syscall.SIGKILL); err != nil {
		t.Fatalf("kill primary %s (pid %d): %v", victim.addr(), victim.pid, err)
	}
	t.Cleanup(func() { restartNode(t, victim, nodes) })
	// Writes go on while the cluster notices and promotes the replica.
	for ; acked < 400; acked++ {
		mark(acked)
		create(acked)
	}
	testpeers.Eventually(t, 30*time.Second, "a replica to take over the killed primary's slots", func() error {
		for _, n := range nodes {
			if n.port == victim.port {
				continue
			}
			if _, ok, err := nodeInfo(n); err != nil || !ok {
				return fmt.Errorf("node %s: cluster ok %v, %v", n.addr(), ok, err)
			}
		}
		return nil
	})
	for ; acked < 600; acked++ {
		mark(acked)
		create(acked)
	}

	lost := 0
	for i := range acked {
		st, err := s.Claim(ctx, fmt.Sprintf("failover-%d", i), "other", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if st != store.ClaimDone {
			lost++
		}
	}
	eps, err := s.ListEndpoints(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if lost != 0 || len(eps) != acked {
		t.Fatalf("after the failover: %d of %d done marks lost, %d of %d endpoints listed", lost, acked, len(eps), acked)
	}
}

// restartNode starts the killed node again from its config (it rejoins as
// a replica of the node that took its slots), records its new pid where
// stop-peers.sh looks, and waits until every node sees the cluster ok.
func restartNode(t *testing.T, n clusterNode, nodes []clusterNode) {
	t.Helper()
	cmd := exec.Command("redis-server", n.conf)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Errorf("restart %s: %v", n.addr(), err)
		return
	}
	pid := cmd.Process.Pid
	_ = cmd.Process.Release()
	// nodes file: DIR/rediscluster/nodes; pid files: DIR/rediscluster-PORT.pid.
	dir := filepath.Dir(filepath.Dir(n.conf))
	peers := filepath.Dir(dir)
	if err := os.WriteFile(filepath.Join(peers, "rediscluster-"+strconv.Itoa(n.port)+".pid"), []byte(strconv.Itoa(pid)+"\n"), 0o644); err != nil {
		t.Errorf("record pid of restarted %s: %v", n.addr(), err)
	}
	var lines []string
	for _, m := range nodes {
		if m.port == n.port {
			m.pid = pid
		}
		lines = append(lines, fmt.Sprintf("%d %d %s", m.port, m.pid, m.conf))
	}
	if err := os.WriteFile(filepath.Join(dir, "nodes"), []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Errorf("rewrite the nodes file: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := e2e.Poll(ctx, 100*time.Millisecond, func() error {
		for _, m := range nodes {
			if _, ok, err := nodeInfo(m); err != nil || !ok {
				return fmt.Errorf("node %s: cluster ok %v, %v", m.addr(), ok, err)
			}
		}
		if role, _, _ := nodeInfo(n); role != "slave" {
			return fmt.Errorf("restarted node %s is %q", n.addr(), role)
		}
		// In sync with its primary, so it can take over in the next test.
		c := goredis.NewClient(&goredis.Options{Addr: n.addr(), MaxRetries: -1})
		defer c.Close()
		info, err := c.Info(ctx, "replication").Result()
		if err != nil || !strings.Contains(info, "master_link_status:up") {
			return fmt.Errorf("restarted node %s not in sync yet: %v", n.addr(), err)
		}
		return nil
	})
	if err != nil {
		t.Errorf("the restarted node %s did not rejoin within 30s: %v", n.addr(), err)
	}
}
