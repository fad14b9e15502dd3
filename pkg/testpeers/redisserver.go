package testpeers

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// RedisServer is a redis-server process owned by one test: its own port and
// AOF directory, so the test can crash and restart it without touching the
// shared test Redis.
type RedisServer struct {
	t    testing.TB
	bin  string
	dir  string
	port int

	mu  sync.Mutex
	cmd *exec.Cmd
	log strings.Builder
}

// NewRedisServer prepares (but does not start) a private redis-server. It
// skips t when redis-server is missing, or fails it under MCPMON_REQUIRE_PEERS=1.
func NewRedisServer(t testing.TB) *RedisServer {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if os.Getenv(EnvRequire) == "1" {
			t.Fatalf("redis-server not in PATH but %s=1: .ci/start-redis.sh should have installed it", EnvRequire)
		}
		t.Skip("redis-server not in PATH: run `make test` (or .ci/start-redis.sh) to install it")
	}
	l, err := (&net.ListenConfig{}).Listen(t.Context(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	s := &RedisServer{t: t, bin: bin, dir: t.TempDir(), port: port}
	t.Cleanup(s.Kill)
	return s
}

// Dir is the server's directory (its AOF): a test may fill it before Start
// with what another server left, or read it after Kill.
func (s *RedisServer) Dir() string { return s.dir }

// URL is the server's redis:// URL.
func (s *RedisServer) URL() string { return fmt.Sprintf("redis://127.0.0.1:%d/0", s.port) }

// Start runs redis-server with AOF on and returns once it logs that it
// accepts connections (read from its stdout, not polled), having loaded the
// AOF if there is one. Every write is fsynced before Redis acknowledges it
// (appendfsync always, as docs/operations/distributed.md asks of a
// deployment): with everysec Redis postpones the AOF write while an fsync is
// slow, so a kill on a busy machine lost a ledger mark it had acknowledged.
func (s *RedisServer) Start() {
	s.t.Helper()
	s.start("Ready to accept connections")
}

// StartWith is Start with more redis-server arguments (a test that moves
// the server's dir at run time needs --enable-protected-configs yes).
func (s *RedisServer) StartWith(extra ...string) {
	s.t.Helper()
	s.start("Ready to accept connections", extra...)
}

// StartReplicaOf runs the server as a replica of primary (which must be
// running) and returns once its first sync with primary has finished, as
// it logs it.
func (s *RedisServer) StartReplicaOf(primary *RedisServer) {
	s.t.Helper()
	s.start("MASTER <-> REPLICA sync: Finished with success", "--replicaof", "127.0.0.1", strconv.Itoa(primary.port))
}

// Pause stops the server's process (SIGSTOP) until Resume: it holds its
// connections but answers nothing, a replica acknowledges nothing.
func (s *RedisServer) Pause() { s.signal(syscall.SIGSTOP) }

// Resume continues a paused server (SIGCONT).
func (s *RedisServer) Resume() { s.signal(syscall.SIGCONT) }

func (s *RedisServer) signal(sig syscall.Signal) {
	s.t.Helper()
	s.mu.Lock()
	cmd := s.cmd
	s.mu.Unlock()
	if cmd == nil {
		s.t.Fatal("redis-server is not running")
	}
	if err := cmd.Process.Signal(sig); err != nil {
		s.t.Fatalf("signal redis-server: %v", err)
	}
}

// start runs redis-server with extra arguments and returns once it logs
// a line containing ready.
func (s *RedisServer) start(ready string, extra ...string) {
	s.t.Helper()
	args := append([]string{
		"--bind", "127.0.0.1", "--port", strconv.Itoa(s.port), "--dir", s.dir,
		"--appendonly", "yes", "--appendfsync", "always", "--save", "",
		"--daemonize", "no", "--logfile", "",
		// A replica's first sync starts at once, not after Redis 7's 5 s
		// wait for more replicas to share it.
		"--repl-diskless-sync-delay", "0"}, extra...)
	cmd := exec.CommandContext(s.t.Context(), s.bin, args...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		s.t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		s.t.Fatal(err)
	}
	s.mu.Lock()
	s.cmd = cmd
	s.mu.Unlock()
	isReady := make(chan struct{})
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		sc := bufio.NewScanner(out)
		once := sync.Once{}
		for sc.Scan() {
			line := sc.Text()
			s.mu.Lock()
			s.log.WriteString(line + "\n")
			s.mu.Unlock()
			if strings.Contains(line, ready) {
				once.Do(func() { close(isReady) })
			}
		}
		_, _ = io.Copy(io.Discard, out)
	}()
	select {
	case <-isReady:
	case <-exited:
		s.t.Fatalf("redis-server exited before accepting connections:\n%s", s.Output())
	case <-time.After(20 * time.Second):
		s.t.Fatalf("redis-server did not log %q within 20s:\n%s", ready, s.Output())
	}
}

// Output is what the server has logged.
func (s *RedisServer) Output() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.log.String()
}

// Kill SIGKILLs the server (a crash, not a clean shutdown) and reaps it.
func (s *RedisServer) Kill() {
	s.mu.Lock()
	cmd := s.cmd
	s.cmd = nil
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
}
