package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// Spec says how to run one child process.
type Spec struct {
	Name string   // for errors and logs
	Path string   // the executable
	Args []string // its arguments
	Env  []string // its whole environment (nil: this process's)
	// Output receives the child's stdout and stderr (a log file, a
	// Banner) instead of a Buffer the Proc keeps. An *os.File is handed to
	// the child as it is, so a long run costs no memory here.
	Output io.Writer
}

// Proc is one running child process.
type Proc struct {
	Name string

	cmd    *exec.Cmd
	out    io.Writer
	exited chan struct{} // closed once the process has exited and been reaped
	err    error         // Wait's error, set before exited is closed
}

// Start runs spec's process and reaps it in the background.
func Start(spec Spec) (*Proc, error) {
	p := &Proc{Name: spec.Name, out: spec.Output, exited: make(chan struct{})}
	if p.out == nil {
		p.out = &Buffer{}
	}
	cmd := exec.Command(spec.Path, spec.Args...)
	cmd.Env = spec.Env
	cmd.Stdout, cmd.Stderr = p.out, p.out
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", spec.Name, err)
	}
	p.cmd = cmd
	go func() {
		p.err = cmd.Wait()
		close(p.exited)
	}()
	return p, nil
}

// PID is the process's ID, for reading its /proc entries.
func (p *Proc) PID() int { return p.cmd.Process.Pid }

// Exited is closed once the process has exited.
func (p *Proc) Exited() <-chan struct{} { return p.exited }

// Err is how the process exited; only meaningful once Exited is closed.
func (p *Proc) Err() error {
	<-p.exited
	return p.err
}

// Output is everything the process has written to stdout and stderr, when
// its Spec.Output can tell (a Buffer, a Banner); else "".
func (p *Proc) Output() string {
	if s, ok := p.out.(fmt.Stringer); ok {
		return s.String()
	}
	return ""
}

// Kill ends the process without warning, as a crashed node or an OOM kill
// would, and returns once it is gone.
func (p *Proc) Kill() {
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.exited
}

// Stop asks the process to shut down (SIGTERM), kills it if it has not
// exited after grace, and returns once it is gone.
func (p *Proc) Stop(grace time.Duration) {
	select {
	case <-p.exited:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(grace):
		p.Kill()
	}
}

// WaitReady polls ready every 100ms until it returns nil, the process
// exits, or timeout passes.
func (p *Proc) WaitReady(ctx context.Context, timeout time.Duration, ready func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		err := ready(ctx)
		if err == nil {
			return nil
		}
		select {
		case <-p.exited:
			return fmt.Errorf("%s exited before it was ready (%v):\n%s", p.Name, p.err, p.Output())
		case <-ctx.Done():
			return fmt.Errorf("%s not ready after %s: %w", p.Name, timeout, err)
		case <-tick.C:
		}
	}
}

// pollClient bounds each readiness probe: a child that accepts but never
// answers is not ready.
var pollClient = &http.Client{Timeout: 2 * time.Second}

// HTTPReady returns a readiness check that /readyz on addr answers 200.
func HTTPReady(addr string) func(context.Context) error {
	return func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/readyz", nil)
		if err != nil {
			return err
		}
		resp, err := pollClient.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("/readyz on %s: %s", addr, resp.Status)
		}
		return nil
	}
}

// Buffer is a bytes.Buffer that a child (or an in-process server) writes
// from its own goroutines while the test reads it.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *Buffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *Buffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
