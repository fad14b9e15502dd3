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
	"github.com/mcpmon/mcpmon/pkg/msg"
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
// with private targets allowed the loopback server is up, without them the
// guard refuses it. Each result carries the command's run ID.
func TestRunProbesWithItsOwnGuard(t *testing.T) {
	target := mcpFixture(t)
	for _, tc := range []struct {
		allow bool
		want  msg.Status
		class string
	}{{true, msg.StatusUp, prober.ClassOK}, {false, msg.StatusDown, prober.ClassBlockedTarget}} {
		slot := time.Now().UTC().Truncate(time.Second)
		cmd := apiv1.AgentCommand{EndpointID: "e1", Slot: slot, Endpoint: apiv1.AgentEndpoint{ID: "e1", URL: target, Transport: "auto",
			Schedule: "@every 1h", Timeout: "5s"}}
		srv := newFakeServer(t, commands(cmd), commands())
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() {
			done <- Run(ctx, Options{Server: srv.URL, Token: token, AllowPrivateTargets: tc.allow, Wait: time.Second, Sleep: (&sleeps{}).sleep})
		}()
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
		r := srv.results[0]
		srv.mu.Unlock()
		if r.Status != tc.want || r.Class != tc.class || r.ProbeRunID != msg.ProbeRunID("e1", slot) || !r.Slot.Equal(slot) {
			t.Errorf("allow private %v: result %s/%s run %s slot %v, want %s/%s for the command's slot", tc.allow, r.Status, r.Class, r.ProbeRunID, r.Slot, tc.want, tc.class)
		}
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
	a := &agent{o: Options{Token: token, HTTPClient: srv.Client(), Sleep: s.sleep, FlushInterval: 10 * time.Millisecond},
		base: srv.URL, log: slog.New(slog.DiscardHandler), pending: make(chan queue.SendInput, maxPending), refused: make(chan struct{})}
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
