package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	apiv1 "github.com/mcpmon/mcpmon/pkg/api/v1"
	"github.com/mcpmon/mcpmon/pkg/clock"
	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/msg"
	"github.com/mcpmon/mcpmon/pkg/netguard"
	"github.com/mcpmon/mcpmon/pkg/queue"
	"github.com/mcpmon/mcpmon/prober"
)

const token = "mcpmon_test"

// fakeServer is the agent API as a script: each poll takes the next
// answer (the last repeats), and posted results are kept.
type fakeServer struct {
	mu      sync.Mutex
	polls   []func(w http.ResponseWriter)
	results []msg.ProbeResult
	posted  chan struct{}
	agents  []string // User-Agent of each poll
	*httptest.Server
}

// firstResult runs an agent with o against srv (its URL, the test token,
// a 1 s wait and unslept backoffs filled in) until srv takes a result,
// stops it (Run must end nil on cancel) and returns the first result.
func firstResult(t *testing.T, srv *fakeServer, o Options) msg.ProbeResult {
	t.Helper()
	o.Server, o.Token, o.Wait, o.Sleep = srv.URL, token, time.Second, (&sleeps{}).sleep
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- Run(ctx, o) }()
	select {
	case <-srv.posted:
	case <-time.After(20 * time.Second):
		t.Fatal("no result posted")
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run = %v, want nil on cancel", err)
	}
	srv.mu.Lock()
	defer srv.mu.Unlock()
	return srv.results[0]
}

func newFakeServer(t *testing.T, polls ...func(w http.ResponseWriter)) *fakeServer {
	f := &fakeServer{polls: polls, posted: make(chan struct{}, 16)}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+token {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		switch r.URL.Path {
		case "/v1/agent/commands":
			f.agents = append(f.agents, r.UserAgent())
			next := f.polls[0]
			if len(f.polls) > 1 {
				f.polls = f.polls[1:]
			}
			next(w)
		case "/v1/agent/results":
			var body apiv1.AgentResults
			if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
				w.WriteHeader(http.StatusBadRequest)
				return
			}
			f.results = append(f.results, body.Results...)
			f.posted <- struct{}{}
			_ = json.NewEncoder(w).Encode(apiv1.AgentResultsAccepted{Accepted: len(body.Results)})
		default:
			w.WriteHeader(http.StatusNotFound)
		}
	}))
	t.Cleanup(f.Close)
	return f
}

func status(code int) func(w http.ResponseWriter) {
	return func(w http.ResponseWriter) { w.WriteHeader(code) }
}

func commands(cmds ...apiv1.AgentCommand) func(w http.ResponseWriter) {
	return func(w http.ResponseWriter) {
		_ = json.NewEncoder(w).Encode(apiv1.AgentCommands{Commands: cmds})
	}
}

// sleeps records the backoff's waits without waiting.
type sleeps struct {
	mu sync.Mutex
	d  []time.Duration
}

func (s *sleeps) sleep(ctx context.Context, d time.Duration) bool {
	s.mu.Lock()
	s.d = append(s.d, d)
	s.mu.Unlock()
	return ctx.Err() == nil
}

func TestRunExitsWhenTheKeyIsRefused(t *testing.T) {
	srv := newFakeServer(t, status(http.StatusUnauthorized))
	err := Run(t.Context(), Options{Server: srv.URL, Token: "mcpmon_revoked"})
	if !errors.Is(err, ErrRefused) {
		t.Fatalf("Run = %v, want ErrRefused", err)
	}
}

// A failing or restarting server is waited out with doubling backoff,
// which starts over after a poll succeeds.
func TestRunBacksOffWhileTheServerFails(t *testing.T) {
	srv := newFakeServer(t, status(http.StatusServiceUnavailable), status(http.StatusBadGateway), status(http.StatusTooManyRequests),
		commands(), status(http.StatusServiceUnavailable), status(http.StatusForbidden))
	var s sleeps
	err := Run(t.Context(), Options{Server: srv.URL, Token: token, Sleep: s.sleep, Version: "v9.9.9"})
	if !errors.Is(err, ErrRefused) {
		t.Fatalf("Run = %v, want ErrRefused at the 403", err)
	}
	want := []time.Duration{MinBackoff, 2 * MinBackoff, 4 * MinBackoff, MinBackoff}
	if !slices.Equal(s.d, want) {
		t.Fatalf("backoff waits = %v, want %v", s.d, want)
	}
	if got := srv.agents[0]; got != apiv1.AgentUserAgent+"v9.9.9" {
		t.Fatalf("User-Agent = %q", got)
	}
	if backoff(30) != MaxBackoff {
		t.Fatalf("backoff(30) = %v, want the cap %v", backoff(30), MaxBackoff)
	}
}

func TestValidateRefusesPlainHTTPBeyondLoopback(t *testing.T) {
	for server, ok := range map[string]bool{
		"https://mcpmon.example.com": true, "http://127.0.0.1:8080": true, "http://localhost:8080": true, "http://[::1]:1": true,
		"http://mcpmon.example.com": false, "ftp://x": false, "https://user:pw@x": false, "": false,
	} {
		if err := (Options{Server: server, Token: token}).Validate(); (err == nil) != ok {
			t.Errorf("Validate(%q) = %v, want ok=%v", server, err, ok)
		}
	}
	if err := (Options{Server: "https://x", Failover: []string{"http://mcpmon.example.com"}, Token: token}).Validate(); err == nil {
		t.Error("Validate took a plain-HTTP failover server beyond loopback")
	}
	if err := (Options{Server: "https://x"}).Validate(); err == nil {
		t.Error("Validate without a token succeeded")
	}
}

// mcpFixture is a go-sdk MCP server on loopback: a private target.
func mcpFixture(t *testing.T) string {
	srv := mcp.NewServer(&mcp.Implementation{Name: "agent-fixture", Version: "1.0.0"}, nil)
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(ts.Close)
	return ts.URL + "/mcp"
}

// The agent probes with the prober's own code and its own SSRF guard:
// with private targets allowed, or the target's network, the loopback
// server is up; without them, or with another network allowed, the guard
// refuses it. Each result carries the command's run ID.
func TestRunProbesWithItsOwnGuard(t *testing.T) {
	target := mcpFixture(t)
	for _, tc := range []struct {
		allow    bool
		networks []string
		want     msg.Status
		class    string
	}{
		{true, nil, msg.StatusUp, prober.ClassOK},
		{false, nil, msg.StatusDown, prober.ClassBlockedTarget},
		{false, []string{"127.0.0.0/8"}, msg.StatusUp, prober.ClassOK},
		{false, []string{"10.0.0.0/8", "169.254.169.254"}, msg.StatusDown, prober.ClassBlockedTarget},
	} {
		nets, err := netguard.ParseNetworks(tc.networks)
		if err != nil {
			t.Fatal(err)
		}
		slot := time.Now().UTC().Truncate(time.Second)
		cmd := apiv1.AgentCommand{EndpointID: "e1", Slot: slot, Endpoint: apiv1.AgentEndpoint{ID: "e1", URL: target, Transport: "auto",
			Schedule: "@every 1h", Timeout: "5s"}}
		srv := newFakeServer(t, commands(cmd), commands())
		r := firstResult(t, srv, Options{AllowPrivateTargets: tc.allow, AllowedNetworks: nets})
		if r.Status != tc.want || r.Class != tc.class || r.ProbeRunID != msg.ProbeRunID("e1", slot) || !r.Slot.Equal(slot) {
			t.Errorf("allow private %v, networks %v: result %s/%s run %s slot %v, want %s/%s for the command's slot", tc.allow, tc.networks, r.Status, r.Class, r.ProbeRunID, r.Slot, tc.want, tc.class)
		}
	}
}

// An agent given several servers keeps to one until it fails, then moves
// to the next at once: a command taken from a, whose polls and posts then
// fail, is probed and its result posted to b.
func TestAgentFailsOverBetweenServers(t *testing.T) {
	target := mcpFixture(t)
	slot := time.Now().UTC().Truncate(time.Second)
	cmd := apiv1.AgentCommand{EndpointID: "e1", Slot: slot, Endpoint: apiv1.AgentEndpoint{ID: "e1", URL: target, Transport: "auto",
		Schedule: "@every 1h", Timeout: "5s"}}
	var polledA sync.Once
	a := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		served := false
		if r.URL.Path == "/v1/agent/commands" {
			polledA.Do(func() { commands(cmd)(w); served = true })
		}
		if !served {
			w.WriteHeader(http.StatusServiceUnavailable) // a replica going down
		}
	}))
	t.Cleanup(a.Close)
	// b answers polls only once it has the result, then refuses the key,
	// which ends Run.
	b := newFakeServer(t)
	posted := make(chan struct{})
	b.polls = []func(http.ResponseWriter){func(w http.ResponseWriter) { w.WriteHeader(http.StatusUnauthorized) }}
	inner := b.Config.Handler
	b.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/agent/commands" {
			select {
			case <-posted:
			case <-time.After(20 * time.Second):
			}
		}
		inner.ServeHTTP(w, r)
		if r.URL.Path == "/v1/agent/results" {
			close(posted)
		}
	})
	var s sleeps
	err := Run(t.Context(), Options{Server: a.URL, Failover: []string{b.URL + "/"}, Token: token, AllowPrivateTargets: true,
		Wait: time.Second, Sleep: s.sleep})
	if !errors.Is(err, ErrRefused) {
		t.Fatalf("Run = %v, want ErrRefused from b", err)
	}
	b.mu.Lock()
	results := slices.Clone(b.results)
	b.mu.Unlock()
	if len(results) != 1 || results[0].ProbeRunID != msg.ProbeRunID("e1", slot) || results[0].Status != msg.StatusUp {
		t.Fatalf("b took results %+v, want the up result of the command a handed out", results)
	}
	if len(s.d) != 0 {
		t.Errorf("backoff waits %v, want none: a failing server is left for the next at once", s.d)
	}
}

// With every server failing, the backoff waits once per round of the
// list, doubling per round.
func TestAgentBacksOffPerRoundOfServers(t *testing.T) {
	fail := func(n int, last int) *fakeServer {
		polls := make([]func(http.ResponseWriter), 0, n+1)
		for range n {
			polls = append(polls, status(http.StatusServiceUnavailable))
		}
		return newFakeServer(t, append(polls, status(last))...)
	}
	a, b := fail(2, http.StatusUnauthorized), fail(2, http.StatusUnauthorized)
	var s sleeps
	err := Run(t.Context(), Options{Server: a.URL, Failover: []string{b.URL}, Token: token, Sleep: s.sleep})
	if !errors.Is(err, ErrRefused) {
		t.Fatalf("Run = %v, want ErrRefused", err)
	}
	if want := []time.Duration{MinBackoff, 2 * MinBackoff}; !slices.Equal(s.d, want) {
		t.Fatalf("backoff waits = %v, want %v: one per round of a, b", s.d, want)
	}
}

// With one server, nothing changes: the backoff waits after every failure.
func TestServersStepOncePerFailure(t *testing.T) {
	s := newServers("https://a/", []string{"https://b", "https://c"})
	if s.current() != "https://a" {
		t.Fatalf("current = %q, want the first, its slash trimmed", s.current())
	}
	if next := s.failed("https://a"); next != "https://b" {
		t.Fatalf("failed(a) = %q, want b", next)
	}
	if next := s.failed("https://a"); next != "" || s.current() != "https://b" {
		t.Fatalf("a second failure of a moved on to %q (current %q): a poll and a post failing together step once", next, s.current())
	}
	s.failed("https://b")
	if next := s.failed("https://c"); next != "https://a" {
		t.Fatalf("failed(c) = %q, want round to a", next)
	}
	one := newServers("https://only", nil)
	if next := one.failed("https://only"); next != "" || one.current() != "https://only" {
		t.Fatalf("one server: failed = %q, current %q", next, one.current())
	}
}

// Results waiting are posted together, up to apiv1.MaxAgentResults a
// post; a failed post is retried whole, and results the server refuses
// are dropped, not posted again.
func TestResultsShareAPost(t *testing.T) {
	var mu sync.Mutex
	posted := make(chan int, 8)                     // results per post answered 200
	answers := []int{http.StatusServiceUnavailable} // then 200
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body apiv1.AgentResults
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil || r.URL.Path != "/v1/agent/results" {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if len(answers) > 0 {
			w.WriteHeader(answers[0])
			answers = answers[1:]
			return
		}
		posted <- len(body.Results)
		_ = json.NewEncoder(w).Encode(apiv1.AgentResultsAccepted{Accepted: len(body.Results) - 1,
			Refused: []apiv1.AgentResultRefused{{Index: 0, Status: http.StatusBadRequest, Detail: "bad"}}})
	}))
	t.Cleanup(srv.Close)
	var s sleeps
	a := &agent{o: Options{Token: token, HTTPClient: srv.Client(), Sleep: s.sleep, FlushInterval: 10 * time.Millisecond, Clock: clock.Real{}},
		srv: newServers(srv.URL, nil), eps: &endpoints{m: map[string]model.Endpoint{}}, log: slog.New(slog.DiscardHandler), pending: make(chan queue.SendInput, maxPending), refused: make(chan struct{})}
	slot := time.Now().UTC().Truncate(time.Second)
	const n = apiv1.MaxAgentResults + 50
	for i := range n {
		res := msg.ProbeResult{Schema: msg.SchemaVersion, EndpointID: fmt.Sprintf("e%d", i), Slot: slot, Status: msg.StatusUp}
		res.ProbeRunID = msg.ProbeRunID(res.EndpointID, slot)
		if _, err := (poster{a}).Publish(t.Context(), queue.SendInput{DedupID: res.DedupID(), Body: res.Body()}); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { a.postBatches(ctx); close(done) }()
	var got []int
	for len(got) < 2 {
		select {
		case k := <-posted:
			got = append(got, k)
		case <-time.After(20 * time.Second):
			t.Fatalf("posts so far carried %v results, want 2 posts", got)
		}
	}
	if got[0] != apiv1.MaxAgentResults || got[1] != 50 {
		t.Fatalf("posts carried %v results, want %d then 50", got, apiv1.MaxAgentResults)
	}
	cancel()
	<-done
	if !slices.Equal(s.d, []time.Duration{MinBackoff}) {
		t.Fatalf("backoff waits %v, want one after the 503", s.d)
	}
}
