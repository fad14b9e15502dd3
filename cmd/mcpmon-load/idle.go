package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mcpmon/mcpmon/pkg/config"
	"github.com/mcpmon/mcpmon/pkg/daemon"
	"github.com/mcpmon/mcpmon/pkg/model"
)

// idleSchedule is registered for every endpoint of the idle measurement:
// scheduled, but not due for up to a year.
const idleSchedule = "0 0 1 1 *"

// idleReady is the line a child prints once its daemon has started.
const idleReady = "mcpmon-load: idle child ready"

// runIdle measures what a whole `mcpmon run` (embedded queue and store,
// default configuration) costs with endpoints registered and nothing due.
// For 0 and each size it registers the endpoints in a fresh data dir and
// starts the daemon on it in a child process (this binary with
// --idle-child, so the RSS is the daemon's alone, not the registration's
// leftovers). All children run at once — idle, they hardly compete — and
// after settle their CPU time and VmRSS are read from /proc over the same
// window. RSS per endpoint is a child's VmRSS minus the 0-endpoint child's,
// divided by its endpoints.
func runIdle(ctx context.Context, sizes []int, window, settle time.Duration, profileDir string, stdout, stderr io.Writer) error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	type child struct {
		n        int
		cmd      *exec.Cmd
		cpu      time.Duration
		rss, hwm int64 // bytes
	}
	var children []*child
	defer func() {
		for _, c := range children {
			stopChild(c.cmd)
		}
	}()
	for _, n := range append([]int{0}, sizes...) {
		dir, err := os.MkdirTemp("", "mcpmon-idle-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		t0 := time.Now()
		if err := registerIdle(ctx, dir, n, stderr); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "idle: %d endpoints registered in %s; starting the daemon\n", n, time.Since(t0).Round(time.Millisecond))
		args := []string{"--idle-child", dir}
		if profileDir != "" && n > 0 {
			args = append(args, "--idle-cpuprofile", filepath.Join(profileDir, fmt.Sprintf("idle-%d.pprof", n)))
		}
		cmd, err := startChild(ctx, exe, args, stderr)
		if err != nil {
			return fmt.Errorf("idle with %d endpoints: %w", n, err)
		}
		children = append(children, &child{n: n, cmd: cmd})
	}
	fmt.Fprintf(stderr, "idle: settling %s (every periodic loop has run once), then measuring %s ...\n", settle, window)
	if err := sleep(ctx, settle); err != nil {
		return err
	}
	for _, c := range children {
		if c.cpu, err = procCPU(c.cmd.Process.Pid); err != nil {
			return err
		}
	}
	start := time.Now()
	if err := sleep(ctx, window); err != nil {
		return err
	}
	elapsed := time.Since(start)
	for _, c := range children {
		cpu, err := procCPU(c.cmd.Process.Pid)
		if err != nil {
			return err
		}
		c.cpu = cpu - c.cpu
		if c.rss, c.hwm, err = procRSS(c.cmd.Process.Pid); err != nil {
			return err
		}
	}
	base := children[0]
	fmt.Fprintf(stdout, "idle `mcpmon run` (embedded, default config), endpoints on %q; settle %s, window %s\n\n", idleSchedule, settle, window)
	fmt.Fprintln(stdout, "| endpoints | idle CPU (% of one core) | VmRSS | VmHWM | RSS delta per endpoint (vs 0) |")
	fmt.Fprintln(stdout, "|---|---|---|---|---|")
	for _, c := range children {
		per := "—"
		if c.n > 0 {
			per = fmt.Sprintf("%.2f KiB", float64(c.rss-base.rss)/float64(c.n)/1024)
		}
		fmt.Fprintf(stdout, "| %d | %.2f %% (%s in %s) | %.1f MiB | %.1f MiB | %s |\n", c.n,
			100*c.cpu.Seconds()/elapsed.Seconds(), c.cpu.Round(time.Millisecond), elapsed.Round(time.Second),
			mib(c.rss), mib(c.hwm), per)
	}
	return nil
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }

// registerIdle writes n endpoints straight into dir's store, through a
// daemon started on it (the store is the daemon's own; the API would only
// add HTTP and auth per endpoint).
func registerIdle(ctx context.Context, dir string, n int, stderr io.Writer) error {
	if n == 0 {
		return nil
	}
	return writeEndpoints(ctx, idleConfig(dir), n, stderr, func(i int) model.Endpoint {
		return model.Endpoint{
			ID: fmt.Sprintf("idle%06d", i), Name: fmt.Sprintf("idle %d", i), URL: fmt.Sprintf("https://idle%d.example.com/mcp", i),
			Transport: "auto", Schedule: idleSchedule, Timeout: 10 * time.Second,
		}
	})
}

// writeEndpoints starts the daemon of cfg, writes endpoint(0) …
// endpoint(n-1) straight into its store and stops it: the API would only
// add HTTP and auth per endpoint, which no load run measures. bbolt commits
// one transaction at a time; a few writers keep the next transaction ready
// while one commits.
func writeEndpoints(ctx context.Context, cfg config.Options, n int, stderr io.Writer, endpoint func(i int) model.Endpoint) error {
	d, err := daemon.Start(ctx, daemon.RoleAll, cfg, daemon.Deps{Registry: prometheus.NewRegistry(),
		Logger: slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	if err != nil {
		return err
	}
	const writers = 8
	var wg sync.WaitGroup
	errs := make([]error, writers)
	for w := range writers {
		wg.Go(func() {
			for i := w; i < n && errs[w] == nil; i += writers {
				_, errs[w] = d.Store().CreateEndpoint(ctx, endpoint(i))
			}
		})
	}
	wg.Wait()
	d.Stop()
	return errors.Join(errors.Join(errs...), d.Wait())
}

func idleConfig(dir string) config.Options {
	cfg := config.Defaults()
	cfg.Listen = "127.0.0.1:0"
	cfg.DataDir = dir
	return cfg
}

// runIdleChild is the child side: the daemon on dir until SIGTERM.
func runIdleChild(ctx context.Context, dir, cpuprofile string, stdout, stderr io.Writer) error {
	d, err := daemon.Start(ctx, daemon.RoleAll, idleConfig(dir), daemon.Deps{
		Logger: slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	if err != nil {
		return err
	}
	stopProfile, err := startCPUProfile(cpuprofile)
	if err != nil {
		return err
	}
	defer stopProfile()
	fmt.Fprintln(stdout, idleReady)
	return d.Wait()
}

// startChild starts exe args and waits for its ready line.
func startChild(ctx context.Context, exe string, args []string, stderr io.Writer) (*exec.Cmd, error) {
	cmd := exec.Command(exe, args...)
	cmd.Stderr = stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	ready := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(out)
		ok := false
		for sc.Scan() {
			if sc.Text() == idleReady && !ok {
				ok = true
				ready <- true
			}
		}
		if !ok {
			ready <- false
		}
	}()
	select {
	case ok := <-ready:
		if ok {
			return cmd, nil
		}
		_ = cmd.Wait()
		return nil, errors.New("child exited before it was ready")
	case <-ctx.Done():
		stopChild(cmd)
		return nil, ctx.Err()
	}
}

// stopChild stops a child with SIGTERM, as a service manager would, and
// waits for its shutdown.
func stopChild(cmd *exec.Cmd) {
	_ = cmd.Process.Signal(syscall.SIGTERM)
	_ = cmd.Wait()
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat times; 100 on every
// Linux architecture Go supports.
const clockTicks = 100

// procCPU is pid's user + system CPU time from /proc/<pid>/stat.
func procCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// Fields after the parenthesised command name; utime and stime are
	// fields 14 and 15 of the whole line, 12 and 13 after "state".
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 13 {
		return 0, fmt.Errorf("short /proc/%d/stat", pid)
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, err
	}
	return time.Duration(ut+st) * time.Second / clockTicks, nil
}

// procRSS is pid's VmRSS and VmHWM (peak RSS) in bytes.
func procRSS(pid int) (rss, hwm int64, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok || (k != "VmRSS" && k != "VmHWM") {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("/proc/%d/status %s: %w", pid, k, err)
		}
		if k == "VmRSS" {
			rss = kb << 10
		} else {
			hwm = kb << 10
		}
	}
	return rss, hwm, nil
}

func parseSizes(s string) ([]int, error) {
	var sizes []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 || n > 1_000_000 {
			return nil, fmt.Errorf("--idle %q: want endpoint counts 1..1000000 separated by commas", s)
		}
		sizes = append(sizes, n)
	}
	return sizes, nil
}
