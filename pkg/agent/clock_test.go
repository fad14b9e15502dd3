package agent

import (
	"bytes"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	apiv1 "github.com/mcpmon/mcpmon/pkg/api/v1"
	"github.com/mcpmon/mcpmon/pkg/clock"
)

// TestAgentSendsItsClockAndWarnsOfSkew: every request carries the agent's
// clock; an answer whose Date is more than 30 s off warns once, and once
// more (info) when the clocks agree again.
func TestAgentSendsItsClockAndWarnsOfSkew(t *testing.T) {
	agentNow := time.Date(2026, 12, 2, 5, 0, 0, 250_000_000, time.UTC)
	clk := clock.NewFake(agentNow)
	var (
		mu     sync.Mutex
		sent   []string
		offset time.Duration // the server's clock minus the agent's
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		sent = append(sent, r.Header.Get(apiv1.AgentTimeHeader))
		w.Header().Set("Date", clk.Now().Add(offset).UTC().Format(http.TimeFormat))
		_, _ = w.Write([]byte(`{"commands":[]}`))
	}))
	t.Cleanup(srv.Close)
	var logs bytes.Buffer
	a := &agent{o: Options{Token: token, Version: "t", Clock: clk, HTTPClient: srv.Client()}, srv: newServers(srv.URL, nil),
		log: slog.New(slog.NewTextHandler(&logs, nil)), refused: make(chan struct{})}
	poll := func(off time.Duration) {
		t.Helper()
		mu.Lock()
		offset = off
		mu.Unlock()
		if _, err := a.poll(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	poll(0)
	poll(29 * time.Second)
	if strings.Contains(logs.String(), "clock") {
		t.Fatalf("warned within 30 s: %s", logs.String())
	}
	poll(-2 * time.Minute)
	poll(-2 * time.Minute)
	if n := strings.Count(logs.String(), "differs from the server's"); n != 1 {
		t.Fatalf("%d skew warnings for two skewed answers, want 1: %s", n, logs.String())
	}
	if !strings.Contains(logs.String(), "skew=2m0s") {
		t.Errorf("the warning does not say by how much: %s", logs.String())
	}
	poll(time.Second)
	if !strings.Contains(logs.String(), "agrees with the server's again") {
		t.Errorf("no word when the clocks agree again: %s", logs.String())
	}
	mu.Lock()
	defer mu.Unlock()
	if got, want := sent[0], agentNow.Format(time.RFC3339Nano); got != want {
		t.Errorf("%s = %q, want the agent's clock %q", apiv1.AgentTimeHeader, got, want)
	}
}
