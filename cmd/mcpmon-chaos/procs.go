package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/mcpmon/mcpmon/pkg/testpeers/e2e"
)

// proc is one supervised child process (an mcpmon replica or the harness's
// redis-server). Like Kubernetes would, the supervisor restarts it whenever
// it exits: at once after a kill the harness ordered (or after a chosen
// pause), after a one-second back-off when it exited on its own — which is
// recorded as an unexpected exit, since no mcpmon process should.
type proc struct {
	name     string
	path     string
	args     func(addr string) []string // the command line for a listen address
	env      []string
	logPath  string
	httpAddr bool // the process serves /readyz on addr

	mu         sync.Mutex
	addr       string
	cur        *e2e.Proc     // the current run of the process
	killed     bool          // the harness killed the current run
	restartIn  time.Duration // after a harness kill
	stopping   bool
	starts     int
	unexpected []string      // one line per unexpected exit
	quit       chan struct{} // closed by stop: ends a restart back-off early
	done       chan struct{} // closed when supervision has ended
}

func newProc(name, path string, env []string, dir string, httpAddr bool, args func(addr string) []string) (*proc, error) {
	p := &proc{name: name, path: path, args: args, env: env, logPath: filepath.Join(dir, name+".log"), httpAddr: httpAddr, quit: make(chan struct{}), done: make(chan struct{})}
	addr, err := e2e.FreeAddr()
	if err != nil {
		return nil, err
	}
	p.addr = addr
	return p, nil
}

// Addr is where the process listens now.
func (p *proc) Addr() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.addr
}

// start launches the process and supervises it until stop.
func (p *proc) start() error {
	if err := p.launch(); err != nil {
		return err
	}
	go p.supervise()
	return nil
}

func (p *proc) launch() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopping {
		return errStopping
	}
	f, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer f.Close() // the child keeps its own descriptor
	p.starts++
	fmt.Fprintf(f, "==== chaos: start #%d of %s at %s on %s ====\n", p.starts, p.name, time.Now().Format(time.RFC3339Nano), p.addr)
	cur, err := e2e.Start(e2e.Spec{Name: p.name, Path: p.path, Args: p.args(p.addr), Env: p.env, Output: f})
	if err != nil {
		return err
	}
	p.cur, p.killed = cur, false
	return nil
}

func (p *proc) supervise() {
	defer close(p.done)
	for {
		p.mu.Lock()
		cur := p.cur
		p.mu.Unlock()
		err := cur.Err()
		p.mu.Lock()
		stopping, killed, pause := p.stopping, p.killed, p.restartIn
		if !stopping && !killed {
			p.unexpected = append(p.unexpected, fmt.Sprintf("%s %s exited on its own (%v): %s",
				time.Now().Format("15:04:05.000"), p.name, err, lastLogLine(p.logPath)))
			pause = time.Second
			if a, aerr := e2e.FreeAddr(); aerr == nil && p.httpAddr {
				p.addr = a // in case it died because its port was taken
			}
		}
		p.mu.Unlock()
		if stopping {
			return
		}
		for {
			select { // a supervisor's restart back-off
			case <-p.quit:
				return
			case <-time.After(pause):
			}
			err := p.launch()
			if errors.Is(err, errStopping) {
				return
			}
			if err == nil {
				break
			}
			pause = time.Second
		}
	}
}

// kill SIGKILLs the process, as a crashed node or an OOM kill would, and has
// the supervisor restart it after pause. It waits until the process is gone.
func (p *proc) kill(pause time.Duration) {
	p.mu.Lock()
	if p.stopping || p.cur == nil {
		p.mu.Unlock()
		return
	}
	p.killed, p.restartIn = true, pause
	cur := p.cur
	p.mu.Unlock()
	cur.Kill()
}

// stop ends the process with SIGTERM (SIGKILL after grace) and its
// supervision. Once stopping is set no run starts, so the current one is
// the last.
func (p *proc) stop(grace time.Duration) {
	p.mu.Lock()
	if !p.stopping {
		close(p.quit)
	}
	p.stopping = true
	cur := p.cur
	p.mu.Unlock()
	if cur == nil {
		return // never started: nothing supervises it
	}
	cur.Stop(grace)
	<-p.done
}

// Unexpected lists the process's exits the harness did not cause.
func (p *proc) Unexpected() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.unexpected...)
}

// waitReady polls until ready answers nil for the process's current
// address, or the deadline.
func (p *proc) waitReady(ctx context.Context, timeout time.Duration, ready func(ctx context.Context, addr string) error) error {
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := e2e.Poll(wctx, 100*time.Millisecond, func() error { return ready(wctx, p.Addr()) }); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("%s not ready after %s (%w); last log line: %s", p.name, timeout, err, lastLogLine(p.logPath))
	}
	return nil
}

var pollClient = &http.Client{Timeout: 2 * time.Second}

// httpReady is nil when /readyz answers 200.
func httpReady(ctx context.Context, addr string) error { return e2e.HTTPReady(addr)(ctx) }

// redisReady is nil when a Redis at addr answers PING.
func redisReady(_ context.Context, addr string) error {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if !strings.HasPrefix(line, "+PONG") {
		return fmt.Errorf("redis at %s answered %q to PING", addr, strings.TrimSpace(line))
	}
	return nil
}

// lastLogLine is the last non-empty line of a log file, for reports.
func lastLogLine(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "(no log: " + err.Error() + ")"
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) == 0 {
		return ""
	}
	l := lines[len(lines)-1]
	if len(l) > 300 {
		l = l[:300] + "…"
	}
	return l
}

var errStopping = errors.New("process is being stopped")

var errChaosFailed = errors.New("chaos: outages were lost, paged twice or spuriously")
