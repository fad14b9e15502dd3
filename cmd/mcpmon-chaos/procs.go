package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
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
	cmd        *exec.Cmd
	exited     chan struct{} // closed when the current cmd has exited
	killed     bool          // the harness killed the current cmd
	restartIn  time.Duration // after a harness kill
	stopping   bool
	starts     int
	unexpected []string      // one line per unexpected exit
	quit       chan struct{} // closed by stop: ends a restart back-off early
	done       chan struct{} // closed when supervision has ended
}

func newProc(name, path string, env []string, dir string, httpAddr bool, args func(addr string) []string) (*proc, error) {
	p := &proc{name: name, path: path, args: args, env: env, logPath: filepath.Join(dir, name+".log"), httpAddr: httpAddr, quit: make(chan struct{}), done: make(chan struct{})}
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	p.addr = addr
	return p, nil
}

func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
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
	cmd := exec.Command(p.path, p.args(p.addr)...)
	cmd.Env = p.env
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", p.name, err)
	}
	p.cmd, p.killed, p.exited = cmd, false, make(chan struct{})
	return nil
}

func (p *proc) supervise() {
	defer close(p.done)
	for {
		p.mu.Lock()
		cmd, exited := p.cmd, p.exited
		p.mu.Unlock()
		err := cmd.Wait()
		close(exited)
		p.mu.Lock()
		stopping, killed, pause := p.stopping, p.killed, p.restartIn
		if !stopping && !killed {
			p.unexpected = append(p.unexpected, fmt.Sprintf("%s %s exited on its own (%v): %s",
				time.Now().Format("15:04:05.000"), p.name, err, lastLogLine(p.logPath)))
			pause = time.Second
			if a, aerr := freeAddr(); aerr == nil && p.httpAddr {
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
	if p.stopping || p.cmd == nil {
		p.mu.Unlock()
		return
	}
	p.killed, p.restartIn = true, pause
	cmd, exited := p.cmd, p.exited
	p.mu.Unlock()
	_ = cmd.Process.Signal(syscall.SIGKILL)
	<-exited
}

// stop ends the process with SIGTERM (SIGKILL after grace) and its supervision.
func (p *proc) stop(grace time.Duration) {
	p.mu.Lock()
	if !p.stopping {
		close(p.quit)
	}
	p.stopping = true
	cmd := p.cmd
	p.mu.Unlock()
	if cmd != nil && cmd.Process != nil {
		_ = cmd.Process.Signal(syscall.SIGTERM)
	}
	select {
	case <-p.done:
	case <-time.After(grace):
		p.mu.Lock()
		cmd = p.cmd
		p.mu.Unlock()
		_ = cmd.Process.Kill()
		<-p.done
	}
}

// Unexpected lists the process's exits the harness did not cause.
func (p *proc) Unexpected() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.unexpected...)
}

// waitReady polls until ready answers true, the process is up, or the deadline.
func (p *proc) waitReady(ctx context.Context, timeout time.Duration, ready func(addr string) bool) error {
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		if ready(p.Addr()) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not ready after %s; last log line: %s", p.name, timeout, lastLogLine(p.logPath))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

var pollClient = &http.Client{Timeout: 2 * time.Second}

// httpReady is true when /readyz answers 200.
func httpReady(addr string) bool {
	resp, err := pollClient.Get("http://" + addr + "/readyz")
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// redisReady is true when a Redis at addr answers PING.
func redisReady(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return false
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return false
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	return err == nil && strings.HasPrefix(line, "+PONG")
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
