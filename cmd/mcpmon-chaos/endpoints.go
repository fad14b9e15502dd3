package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// target is one fake MCP endpoint on 127.0.0.1: a go-sdk streamable HTTP
// server (JSON answers) behind a switch that the plan flips between ok and
// the outage modes. It remembers when the first request of the current
// outage arrived: the first failing probe, from which alert delay is measured.
type target struct {
	url string
	srv *http.Server
	mcp http.Handler

	mu       sync.Mutex
	mode     Mode
	changed  chan struct{} // closed and replaced on every mode change: releases hung requests
	firstBad time.Time
}

// startTargets starts n targets, all up.
func startTargets(n int) ([]*target, error) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "chaos-target", Version: "1.0.0"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "echo", Description: "Echo the text back."},
		func(_ context.Context, _ *mcp.CallToolRequest, in struct {
			Text string `json:"text"`
		}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}, nil, nil
		})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{JSONResponse: true})
	var ts []*target
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			closeTargets(ts)
			return nil, fmt.Errorf("listen for MCP target: %w", err)
		}
		t := &target{url: "http://" + ln.Addr().String() + "/mcp", mcp: h, mode: ModeOK, changed: make(chan struct{})}
		t.srv = &http.Server{Handler: t, ReadHeaderTimeout: 5 * time.Second}
		go func() { _ = t.srv.Serve(ln) }()
		ts = append(ts, t)
	}
	return ts, nil
}

func closeTargets(ts []*target) {
	for _, t := range ts {
		_ = t.srv.Close() // also ends hung requests: their contexts are cancelled
	}
}

// setMode switches t and returns when the first request of the mode it
// leaves arrived, if that mode was an outage and any request came.
func (t *target) setMode(m Mode) (firstBad time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	firstBad = t.firstBad
	t.mode, t.firstBad = m, time.Time{}
	close(t.changed)
	t.changed = make(chan struct{})
	return firstBad
}

func (t *target) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	t.mu.Lock()
	mode, changed := t.mode, t.changed
	if mode != ModeOK && t.firstBad.IsZero() {
		t.firstBad = time.Now()
	}
	t.mu.Unlock()
	switch mode {
	case ModeHTTP503:
		http.Error(w, "service unavailable", http.StatusServiceUnavailable)
	case ModeHTML:
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.WriteHeader(http.StatusOK)
		_, _ = io.WriteString(w, "<!doctype html><html><head><title>Maintenance</title></head><body><h1>Back soon</h1></body></html>\n")
	case ModeHang:
		// Accept and say nothing until the outage ends or the prober gives up.
		select {
		case <-changed:
			http.Error(w, "hang ended", http.StatusServiceUnavailable)
		case <-r.Context().Done():
		}
	default:
		t.mcp.ServeHTTP(w, r)
	}
}
