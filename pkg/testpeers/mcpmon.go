package testpeers

import (
	"context"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpmon/mcpmon/pkg/testpeers/e2e"
)

// built is the mcpmon binary shared by the tests of one test binary that
// are running at once; the last of them to end removes it.
var built struct {
	mu    sync.Mutex
	users int
	dir   string
	bin   string
	err   error
}

// Mcpmon returns the path of an mcpmon binary built from this module,
// compiled once for all the tests of the test binary that hold it at the
// same time (a later test reuses Go's build cache).
func Mcpmon(t testing.TB) string {
	t.Helper()
	built.mu.Lock()
	defer built.mu.Unlock()
	if built.users == 0 {
		built.dir, built.err = os.MkdirTemp("", "mcpmon-e2e-")
		if built.err == nil {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			built.bin, built.err = e2e.Build(ctx, built.dir)
			cancel()
		}
		if built.err != nil {
			_ = os.RemoveAll(built.dir)
			t.Fatalf("build mcpmon: %v", built.err)
		}
	}
	built.users++
	t.Cleanup(func() {
		built.mu.Lock()
		defer built.mu.Unlock()
		if built.users--; built.users == 0 {
			_ = os.RemoveAll(built.dir)
		}
	})
	return built.bin
}

// Fleet is the mcpmon processes of one test, all from one binary and one
// environment. At the test's end every live one is stopped and, if the test
// failed, their output is logged.
type Fleet struct {
	t   testing.TB
	Bin string
	Env []string // the environment of every process (nil: the test's)

	mu    sync.Mutex
	procs []*e2e.Proc // every process started, for DumpLogs after StopAll too
}

// NewFleet builds (or reuses) the binary for a fleet started with env.
func NewFleet(t testing.TB, env []string) *Fleet {
	t.Helper()
	f := &Fleet{t: t, Bin: Mcpmon(t), Env: env}
	t.Cleanup(func() {
		if t.Failed() {
			f.DumpLogs()
		}
		f.StopAll()
	})
	return f
}

// Run runs a one-shot command (`queues ensure`) to its end and returns its
// output, failing the test if it fails.
func (f *Fleet) Run(args ...string) string {
	f.t.Helper()
	p, err := e2e.Start(e2e.Spec{Name: "mcpmon " + strings.Join(args, " "), Path: f.Bin, Args: args, Env: f.Env})
	if err != nil {
		f.t.Fatal(err)
	}
	if err := p.Err(); err != nil {
		f.t.Fatalf("mcpmon %s: %v\n%s", strings.Join(args, " "), err, p.Output())
	}
	return p.Output()
}

// Start runs `mcpmon args... --listen ADDR` on a free loopback address and
// returns once its /readyz answers 200 (within 20s), with Addr set.
func (f *Fleet) Start(name string, args ...string) *Member {
	f.t.Helper()
	addr, err := e2e.FreeAddr()
	if err != nil {
		f.t.Fatal(err)
	}
	p, err := e2e.Start(e2e.Spec{Name: name, Path: f.Bin, Args: append(args, "--listen", addr), Env: f.Env})
	if err != nil {
		f.t.Fatal(err)
	}
	f.mu.Lock()
	f.procs = append(f.procs, p)
	f.mu.Unlock()
	if err := p.WaitReady(f.t.Context(), 20*time.Second, e2e.HTTPReady(addr)); err != nil {
		f.t.Fatal(err)
	}
	return &Member{Proc: p, Addr: addr}
}

// Member is one process of a Fleet and where it listens.
type Member struct {
	*e2e.Proc
	Addr string
}

// StopAll asks every live process to shut down at once (SIGTERM) and waits
// for each, killing one that takes more than 30s.
func (f *Fleet) StopAll() {
	f.mu.Lock()
	procs := slices.Clone(f.procs)
	f.mu.Unlock()
	var wg sync.WaitGroup
	for _, p := range procs {
		wg.Go(func() { p.Stop(30 * time.Second) })
	}
	wg.Wait()
}

// DumpLogs logs every process's output.
func (f *Fleet) DumpLogs() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, p := range f.procs {
		f.t.Logf("---- %s ----\n%s", p.Name, p.Output())
	}
}

// StartProcess runs spec's process for the rest of the test. At the test's
// end it is asked to shut down (SIGTERM; SIGKILL after 10s) and, if the test
// failed, the last 8000 bytes of its output are logged.
func StartProcess(t testing.TB, spec e2e.Spec) *e2e.Proc {
	t.Helper()
	p, err := e2e.Start(spec)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.Stop(10 * time.Second)
		if t.Failed() {
			out := p.Output()
			if len(out) > 8000 {
				out = "...\n" + out[len(out)-8000:]
			}
			t.Logf("%s output:\n%s", spec.Name, out)
		}
	})
	return p
}

// StartMcpmon runs the built binary with args (which include --listen
// 127.0.0.1:0) and env for the rest of the test, learns from its banner
// where it listens and the admin key it printed at its first start (within
// 30s), and returns a client of its API once /readyz answers (within 90s).
func StartMcpmon(t testing.TB, args, env []string) e2e.API {
	t.Helper()
	banner := e2e.NewBanner()
	p := StartProcess(t, e2e.Spec{Name: "mcpmon", Path: Mcpmon(t), Args: args, Env: env, Output: banner})
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	addr, err := banner.Addr(ctx, p.Exited())
	if err == nil {
		var token string
		if token, err = banner.Token(ctx, p.Exited()); err == nil {
			if err = p.WaitReady(t.Context(), 90*time.Second, e2e.HTTPReady(addr)); err == nil {
				return e2e.API{URL: "http://" + addr, Token: token}
			}
		}
	}
	t.Fatalf("mcpmon %s: %v", strings.Join(args, " "), err)
	return e2e.API{}
}

// Eventually polls cond every 100ms until it returns nil, failing the test
// with what and cond's last error once within has passed. It is for state
// outside the test's goroutines (a child process, a socket); see e2e.Poll.
func Eventually(t testing.TB, within time.Duration, what string, cond func() error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), within)
	defer cancel()
	if err := e2e.Poll(ctx, 100*time.Millisecond, cond); err != nil {
		t.Fatalf("timed out after %s waiting for %s: %v", within, what, err)
	}
}
