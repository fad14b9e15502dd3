package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// fleetReady prefixes the line a fleet-server child prints with its base
// URL once it listens.
const fleetReady = "mcpmon-load: fleet server ready "

// serveFleet is the fleet-server child: one go-sdk MCP server (JSON
// responses, as the in-process servers) on one 127.0.0.1 listener, where
// every path is an endpoint — /e/0 … /e/9999 are 10,000 targets to the
// pipeline, one process and one port to the machine. Running it in its own
// process keeps the servers' CPU out of the pipeline's getrusage figure.
// sessionTimeout closes sessions idle that long (0: never), for clients
// that initialize and never DELETE.
func serveFleet(ctx context.Context, sessionTimeout time.Duration, stdout io.Writer) error {
	srv := mcp.NewServer(&mcp.Implementation{Name: "load", Version: "1.0.0"}, nil)
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{JSONResponse: true, SessionTimeout: sessionTimeout})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	s := &http.Server{Handler: countHandshakes(h), ReadHeaderTimeout: 5 * time.Second}
	go func() {
		<-ctx.Done()
		_ = s.Close()
	}()
	fmt.Fprintf(stdout, "%shttp://%s\n", fleetReady, ln.Addr())
	if err := s.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// handshakesPath answers, on the fleet server, how many handshakes the
// pipeline has begun so far — one per probe — read in the middle of a run
// without gathering the pipeline's registry (one gather at 10,000
// endpoints costs more than a second of CPU).
const handshakesPath = "/handshakes"

// maxCountedBody bounds how much of a POST countHandshakes reads to find its
// JSON-RPC method; the prober's requests are a few hundred bytes.
const maxCountedBody = 64 << 10

// countHandshakes counts the initialize requests POSTed to an endpoint path
// and serves the count at handshakesPath. An initialize is one probe's
// handshake; counting every session-less POST would also count the
// server/discover a first probe sends before it (era negotiation), about
// one extra per endpoint. The peer's path is left out.
func countHandshakes(h http.Handler) http.Handler {
	var n atomic.Int64
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == handshakesPath {
			fmt.Fprintln(w, n.Load())
			return
		}
		if r.Method == http.MethodPost && r.Header.Get("Mcp-Session-Id") == "" &&
			strings.HasPrefix(r.URL.Path, "/e/") && r.URL.Path != "/e/peer" {
			body, err := io.ReadAll(io.LimitReader(r.Body, maxCountedBody))
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			if isInitialize(body) {
				n.Add(1)
			}
			r.Body = io.NopCloser(io.MultiReader(bytes.NewReader(body), r.Body))
		}
		h.ServeHTTP(w, r)
	})
}

// isInitialize reports whether body is a JSON-RPC initialize request.
func isInitialize(body []byte) bool {
	var m struct {
		Method string `json:"method"`
	}
	return json.Unmarshal(body, &m) == nil && m.Method == "initialize"
}

// fleet is a running fleet-server child.
type fleet struct {
	cmd  *exec.Cmd
	base string
	// accepts counts the child's failed accepts (its log lines): out of
	// file descriptors, the server refuses probes, and a run's figures are
	// wrong without saying so unless the report counts them.
	accepts *acceptErrors
}

// acceptErrors passes the fleet server's log through to w and counts the
// lines net/http writes when an accept fails, showing only the first: a
// server out of file descriptors logs one every few milliseconds.
type acceptErrors struct {
	w io.Writer
	n atomic.Int64
}

var acceptError = []byte("http: Accept error")

func (a *acceptErrors) Write(p []byte) (int, error) {
	k := bytes.Count(p, acceptError)
	if k == 0 {
		return a.w.Write(p)
	}
	if a.n.Add(int64(k)) == int64(k) {
		if _, err := fmt.Fprintf(a.w, "%s(load: the fleet server's further accept errors are counted in the report, not shown)\n", p); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}

// failedAccepts is the number of accepts the fleet server failed so far.
func (f *fleet) failedAccepts() int64 { return f.accepts.n.Load() }

// startFleet starts this binary as a fleet-server child and returns n
// endpoint URLs on it.
func startFleet(ctx context.Context, n int, sessionTimeout time.Duration, stderr io.Writer) (*fleet, []string, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, nil, err
	}
	cmd := exec.Command(exe, "--fleet-child", "--fleet-session-timeout", sessionTimeout.String())
	accepts := &acceptErrors{w: stderr}
	cmd.Stderr = accepts
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, nil, err
	}
	base := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		sent := false
		for sc.Scan() {
			if u, ok := strings.CutPrefix(sc.Text(), fleetReady); ok && !sent {
				sent = true
				base <- u
			}
		}
		if !sent {
			base <- ""
		}
	}()
	select {
	case u := <-base:
		if u == "" {
			_ = cmd.Wait()
			return nil, nil, errors.New("the fleet server exited before it listened (its log is above)")
		}
		urls := make([]string, n)
		for i := range urls {
			urls[i] = fmt.Sprintf("%s/e/%d", u, i)
		}
		return &fleet{cmd: cmd, base: u, accepts: accepts}, urls, nil
	case <-ctx.Done():
		stopChild(cmd)
		return nil, nil, ctx.Err()
	}
}

func (f *fleet) cpu() (time.Duration, error) { return procCPU(f.cmd.Process.Pid) }

func (f *fleet) stop() { stopChild(f.cmd) }

// handshakes reads the fleet server's count of handshakes begun (countHandshakes).
func (f *fleet) handshakes(ctx context.Context) (int64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, f.base+handshakesPath, nil)
	if err != nil {
		return 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, fmt.Errorf("read the fleet server's session count: %w", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64))
	if err != nil {
		return 0, fmt.Errorf("read the fleet server's session count: %w", err)
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("the fleet server's session count %q: %w", b, err)
	}
	return n, nil
}

// peerInChild runs n go-sdk client handshakes against url in a child
// process of this binary (--peer-child) and returns that process's CPU for
// them.
func peerInChild(ctx context.Context, url string, n int) (time.Duration, error) {
	exe, err := os.Executable()
	if err != nil {
		return 0, err
	}
	cmd := exec.CommandContext(ctx, exe, "--peer-child", url, "--peer", strconv.Itoa(n))
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return 0, fmt.Errorf("go-sdk client handshakes in a child process: %w", err)
	}
	ns, err := strconv.ParseInt(strings.TrimSpace(string(out)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("go-sdk client handshakes in a child process printed %q: %w", out, err)
	}
	return time.Duration(ns), nil
}

// peerHandshakes runs the go-sdk client's handshake (initialize +
// initialized + ping + close) n times against url from
// conc goroutines and returns the CPU this process spent doing it — the
// peer figure the pipeline's CPU per probe is compared with, from the same
// run and against the same server. The pipeline must be stopped: getrusage
// measures the whole process.
func peerHandshakes(ctx context.Context, url string, n, conc int) (time.Duration, error) {
	client := mcp.NewClient(&mcp.Implementation{Name: "peer", Version: "1.0.0"}, nil)
	// As prober's BenchmarkProbe measures it: a fresh transport per
	// handshake (a probe opens a fresh connection), pinned to 2025-11-25,
	// no standalone SSE stream. The pipeline's probe does more (tools/list
	// too), so the ratio is conservative.
	so := &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"}
	var before, after syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &before)
	var wg sync.WaitGroup
	errs := make([]error, conc)
	next := make(chan struct{}, n)
	for range n {
		next <- struct{}{}
	}
	close(next)
	for w := range conc {
		wg.Go(func() {
			for range next {
				if errs[w] != nil {
					continue
				}
				tr := &http.Transport{}
				cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: tr}, DisableStandaloneSSE: true}, so)
				if err != nil {
					errs[w] = err
					continue
				}
				if err := cs.Ping(ctx, nil); err != nil {
					errs[w] = err
				}
				_ = cs.Close()
				tr.CloseIdleConnections()
			}
		})
	}
	wg.Wait()
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &after)
	if err := errors.Join(errs...); err != nil {
		return 0, fmt.Errorf("go-sdk client handshakes against %s: %w", url, err)
	}
	return tv(after.Utime) + tv(after.Stime) - tv(before.Utime) - tv(before.Stime), nil
}
