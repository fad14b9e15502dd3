package e2e

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// envHelper makes the test binary act as a child process (see
// TestHelperProcess) instead of running tests.
const envHelper = "E2E_TEST_HELPER"

// TestHelperProcess is the child the Proc tests start: "serve" prints an
// mcpmon-like banner and serves /readyz until SIGTERM, "exit" exits 3 at
// once, "stubborn" ignores SIGTERM.
func TestHelperProcess(t *testing.T) {
	mode := os.Getenv(envHelper)
	if mode == "" {
		return
	}
	switch mode {
	case "exit":
		fmt.Println("giving up")
		os.Exit(3)
	case "stubborn":
		signal.Ignore(syscall.SIGTERM)
		fmt.Println("ready")
		select {}
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		os.Exit(1)
	}
	fmt.Printf("mcpmon run (all): listening on %s (HTTP)\n", ln.Addr())
	fmt.Print("admin API key, shown this once\n  export MCPMON_")
	fmt.Print("TOKEN=mcpmon_abc123\n") // one line in two writes
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}), ReadHeaderTimeout: time.Second}
	go func() { _ = srv.Serve(ln) }()
	<-ctx.Done()
	_ = srv.Close()
	os.Exit(0)
}

func helper(t *testing.T, mode string, out *Banner) *Proc {
	t.Helper()
	spec := Spec{Name: mode, Path: os.Args[0], Args: []string{"-test.run=^TestHelperProcess$"},
		Env: append(os.Environ(), envHelper+"="+mode)}
	if out != nil {
		spec.Output = out
	}
	p, err := Start(spec)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Kill)
	return p
}

func TestProcIsFoundReadyAndStopsOnSIGTERM(t *testing.T) {
	banner := NewBanner()
	p := helper(t, "serve", banner)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	addr, err := banner.Addr(ctx, p.Exited())
	if err != nil {
		t.Fatal(err)
	}
	token, err := banner.Token(ctx, p.Exited())
	if err != nil || token != "mcpmon_abc123" {
		t.Fatalf("token %q, %v; want mcpmon_abc123 from a line written in two pieces", token, err)
	}
	if err := p.WaitReady(ctx, 30*time.Second, HTTPReady(addr)); err != nil {
		t.Fatal(err)
	}
	p.Stop(30 * time.Second)
	if err := p.Err(); err != nil {
		t.Fatalf("after SIGTERM: %v, want a clean exit", err)
	}
	if !strings.Contains(p.Output(), "listening on "+addr) {
		t.Fatalf("Output() = %q, want the banner", p.Output())
	}
}

func TestProcThatExitsIsNotWaitedForUntilTheTimeout(t *testing.T) {
	p := helper(t, "exit", nil)
	start := time.Now()
	err := p.WaitReady(t.Context(), 10*time.Minute, func(context.Context) error { return errors.New("never ready") })
	if err == nil || !strings.Contains(err.Error(), "exited before it was ready") || !strings.Contains(err.Error(), "giving up") {
		t.Fatalf("WaitReady = %v, want the exit and the child's output", err)
	}
	if waited := time.Since(start); waited > 5*time.Minute {
		t.Fatalf("WaitReady took %s: it waited for the timeout, not for the exit", waited)
	}
	var exit *exec.ExitError
	if !errors.As(p.Err(), &exit) || exit.ExitCode() != 3 {
		t.Fatalf("Err() = %v, want exit status 3", p.Err())
	}
}

func TestStopKillsAProcessThatIgnoresSIGTERM(t *testing.T) {
	banner := NewBanner()
	p := helper(t, "stubborn", banner)
	if err := Poll(t.Context(), 10*time.Millisecond, func() error {
		if !strings.Contains(banner.String(), "ready") {
			return errors.New("not yet")
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	p.Stop(100 * time.Millisecond)
	var exit *exec.ExitError
	if !errors.As(p.Err(), &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("Err() = %v, want killed by SIGKILL after the grace", p.Err())
	}
}

func TestBannerWaitEndsWhenTheProcessExits(t *testing.T) {
	b := NewBanner()
	_, _ = b.Write([]byte("mcpmon prober: listening on 127.0.0.1:4000 (HTTP)\n"))
	exited := make(chan struct{})
	close(exited)
	if addr, err := b.Addr(t.Context(), exited); err != nil || addr != "127.0.0.1:4000" {
		t.Fatalf("Addr = %q, %v", addr, err)
	}
	if _, err := b.Token(t.Context(), exited); err == nil || !strings.Contains(err.Error(), "exited before printing its admin key") {
		t.Fatalf("Token = %v, want the exit", err)
	}
}

func TestReceiverRecordsEveryRequestWithItsAnswer(t *testing.T) {
	r, err := StartReceiver(func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			if req.Method != http.MethodPost {
				http.Error(w, "post only", http.StatusMethodNotAllowed)
				return
			}
			next.ServeHTTP(w, req)
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	arrived := make(chan Request, 1)
	go func() {
		req, err := r.Wait(t.Context(), 2)
		if err != nil {
			t.Error(err)
		}
		arrived <- req
	}()
	post := func(path, body string) *http.Response {
		resp, err := http.Post(r.URL+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	if resp := post("/a?x=1", `{"n":1}`); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("default answer %s, want 204", resp.Status)
	}
	r.Answer(http.StatusTooManyRequests, http.Header{"Retry-After": {"7"}}, "slow down")
	if resp := post("/b", `{"n":2}`); resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "7" {
		t.Fatalf("set answer %s %v, want 429 with Retry-After", resp.Status, resp.Header)
	}
	resp, err := http.Get(r.URL + "/c")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	third := <-arrived
	if third.Method != http.MethodGet || third.Status != http.StatusMethodNotAllowed {
		t.Fatalf("third request %s answered %d, want the middleware's 405", third.Method, third.Status)
	}
	got := r.Requests()
	if len(got) != 3 {
		t.Fatalf("%d requests recorded, want 3", len(got))
	}
	if got[0].Path != "/a" || got[0].RawQuery != "x=1" || string(got[0].Body) != `{"n":1}` || got[0].Status != 204 ||
		got[0].Header.Get("Content-Type") != "application/json" {
		t.Errorf("first request recorded as %+v", got[0])
	}
	if got[1].Path != "/b" || got[1].Status != 429 || got[1].At.Before(got[0].At) {
		t.Errorf("second request recorded as %+v", got[1])
	}
}

func TestAPIRegisterSendsTheKeyAndReportsRefusals(t *testing.T) {
	r, err := StartReceiver(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	api := API{URL: r.URL, Token: "mcpmon_k"}
	r.Answer(http.StatusCreated, nil, `{"id":"ep-1"}`)
	id, err := api.Register(t.Context(), map[string]any{"name": "a", "url": "http://127.0.0.1:1/mcp"})
	if err != nil || id != "ep-1" {
		t.Fatalf("Register = %q, %v", id, err)
	}
	req := r.Requests()[0]
	if req.Method != http.MethodPost || req.Path != "/v1/endpoints" || req.Header.Get("Authorization") != "Bearer mcpmon_k" ||
		!strings.Contains(string(req.Body), `"name":"a"`) {
		t.Fatalf("sent %+v", req)
	}
	r.Answer(http.StatusBadRequest, nil, `{"title":"bad url"}`)
	_, err = api.Register(t.Context(), map[string]any{"name": "b"})
	var se *StatusError
	if !errors.As(err, &se) || se.Status != http.StatusBadRequest || !strings.Contains(se.Body, "bad url") {
		t.Fatalf("refused Register = %v, want a StatusError with the body", err)
	}
}

// TestCoreDoesNotImportTesting: cmd/mcpmon-chaos links this package into a
// program, which must not carry the testing package or httptest's flag.
func TestCoreDoesNotImportTesting(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	deps := strings.Fields(string(out))
	for _, banned := range []string{"testing", "net/http/httptest"} {
		if slices.Contains(deps, banned) {
			t.Errorf("pkg/testpeers/e2e depends on %s", banned)
		}
	}
}
