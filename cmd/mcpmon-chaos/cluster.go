package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// ModeCluster is the fleet on a Redis Cluster of its own (3 primaries, 3
// replicas, started by .ci/start-rediscluster.sh), in the sharded layout;
// mid-run one primary is SIGKILLed and its replica takes its slots over.
const ModeCluster = "cluster"

// redisCluster is the harness's own cluster: its directory (the start
// script's pid files and node directories) and URL.
type redisCluster struct {
	dir, url, nodes string
}

// startCluster starts the cluster with the repository's start script and
// returns its redis+cluster:// URL.
func (h *harness) startCluster(ctx context.Context) (string, error) {
	script, err := findScript("start-rediscluster.sh")
	if err != nil {
		return "", err
	}
	c := &redisCluster{dir: filepath.Join(h.dir, "cluster")}
	cmd := exec.CommandContext(ctx, "bash", script, c.dir)
	cmd.Stderr = h.out
	out, err := cmd.Output()
	h.cluster = c // stopped by stopCluster even when the start failed half-way
	if err != nil {
		return "", fmt.Errorf("start the redis cluster: %w", err)
	}
	for line := range strings.SplitSeq(string(out), "\n") {
		if v, ok := strings.CutPrefix(line, "export MCPMON_TEST_REDIS_CLUSTER_URL="); ok {
			c.url = v
		}
		if v, ok := strings.CutPrefix(line, "export MCPMON_TEST_REDIS_CLUSTER_NODES="); ok {
			c.nodes = v
		}
	}
	if c.url == "" || c.nodes == "" {
		return "", fmt.Errorf("start-rediscluster.sh printed no URL or nodes file: %q", out)
	}
	return c.url, nil
}

// stopCluster stops every node the start script (or primaryFailover's
// restart) recorded.
func (h *harness) stopCluster() {
	if h.cluster == nil {
		return
	}
	if script, err := findScript("stop-peers.sh"); err == nil {
		_ = exec.Command("bash", script, h.cluster.dir).Run()
	}
	h.cluster = nil
}

// findScript looks for .ci/NAME from the working directory up: the
// harness runs from the repository root (make chaos) or its package
// directory (go test).
func findScript(name string) (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		p := filepath.Join(dir, ".ci", name)
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf(".ci/%s not found above the working directory: run from the repository", name)
		}
		dir = parent
	}
}

// clusterNode is one line of the start script's nodes file.
type clusterNode struct {
	port int
	pid  int
	conf string
}

func (c *redisCluster) readNodes() ([]clusterNode, error) {
	f, err := os.Open(c.nodes)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []clusterNode
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) != 3 {
			continue
		}
		port, perr := strconv.Atoi(fs[0])
		pid, qerr := strconv.Atoi(fs[1])
		if perr != nil || qerr != nil {
			return nil, fmt.Errorf("nodes file line %q", sc.Text())
		}
		out = append(out, clusterNode{port, pid, fs[2]})
	}
	return out, sc.Err()
}

// role asks the node on port for its ROLE ("master", "slave"), "" if it
// does not answer.
func nodeRole(ctx context.Context, port int) string {
	c := goredis.NewClient(&goredis.Options{Addr: "127.0.0.1:" + strconv.Itoa(port), DialTimeout: time.Second, MaxRetries: -1})
	defer c.Close()
	v, err := c.Do(ctx, "ROLE").Slice()
	if err != nil || len(v) == 0 {
		return ""
	}
	s, _ := v[0].(string)
	return s
}

// clusterOK reports whether the node on port says cluster_state:ok.
func clusterOK(ctx context.Context, port int) bool {
	c := goredis.NewClient(&goredis.Options{Addr: "127.0.0.1:" + strconv.Itoa(port), DialTimeout: time.Second, MaxRetries: -1})
	defer c.Close()
	info, err := c.ClusterInfo(ctx).Result()
	return err == nil && strings.Contains(info, "cluster_state:ok")
}

// primaryFailover SIGKILLs one primary at `at`, waits (bounded) until a
// surviving node reports the cluster whole again (the dead primary's
// replica promoted), and restarts the killed node after RedisDown, which
// rejoins as a replica.
func (h *harness) primaryFailover(ctx context.Context, at time.Time) {
	if !waitUntil(ctx, at) {
		return
	}
	if err := h.killPrimary(ctx); err != nil {
		fmt.Fprintf(h.out, "chaos %s: primary failover: %v\n", h.o.Mode, err)
		h.mu.Lock()
		h.failoverErr = err
		h.mu.Unlock()
	}
}

func (h *harness) killPrimary(ctx context.Context) error {
	nodes, err := h.cluster.readNodes()
	if err != nil {
		return err
	}
	var victim *clusterNode
	var others []clusterNode
	primaries := 0
	for i, n := range nodes {
		if nodeRole(ctx, n.port) != "master" {
			others = append(others, n)
			continue
		}
		primaries++
		if victim == nil {
			victim = &nodes[i]
		} else {
			others = append(others, n)
		}
	}
	if victim == nil {
		return errors.New("no node answers ROLE as a primary")
	}
	h.mu.Lock()
	h.kills = append(h.kills, killEvent{At: time.Now(), Name: "redis-server"})
	h.mu.Unlock()
	if err := syscall.Kill(victim.pid, syscall.SIGKILL); err != nil {
		return fmt.Errorf("SIGKILL the primary on port %d: %w", victim.port, err)
	}
	fmt.Fprintf(h.out, "chaos %s: SIGKILLed the redis primary on port %d\n", h.o.Mode, victim.port)
	killed := time.Now()
	deadline := time.NewTimer(30 * time.Second)
	defer deadline.Stop()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for promoted := false; !promoted; {
		select {
		case <-ctx.Done():
			return nil
		case <-deadline.C:
			return fmt.Errorf("the cluster did not report ok within 30s of killing the primary on port %d", victim.port)
		case <-tick.C:
		}
		// Whole again once the dead primary's replica was promoted (as
		// many primaries among the survivors as before) and the cluster
		// says its slots are covered.
		n := 0
		for _, o := range others {
			if nodeRole(ctx, o.port) == "master" {
				n++
			}
		}
		promoted = n >= primaries && clusterOK(ctx, others[0].port)
	}
	fmt.Fprintf(h.out, "chaos %s: the cluster is whole again %s after the kill\n", h.o.Mode, time.Since(killed).Round(100*time.Millisecond))
	select {
	case <-ctx.Done():
		return nil
	case <-time.After(h.o.RedisDown):
	}
	// Restarted on the same port and config; it rejoins as a replica.
	cmd := exec.Command("redis-server", victim.conf)
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("restart the node on port %d: %w", victim.port, err)
	}
	go func() { _ = cmd.Wait() }()
	pidFile := filepath.Join(h.cluster.dir, fmt.Sprintf("rediscluster-%d.pid", victim.port))
	return os.WriteFile(pidFile, []byte(strconv.Itoa(cmd.Process.Pid)+"\n"), 0o644)
}
