package prober

import (
	"context"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpmon/mcpmon/pkg/msg"
)

// TestEras probes go-sdk servers of every era and transport shape.
func TestEras(t *testing.T) {
	tests := []struct {
		name        string
		versions    []string // server's supported versions (nil = all)
		opts        mcp.StreamableHTTPOptions
		legacy      bool
		transport   string
		pin         string
		wantVersion string
		wantTrans   string
	}{
		{name: "auto stateful SSE answers", wantVersion: Version20251125, wantTrans: TransportStreamableHTTP},
		{name: "auto stateful JSON answers", opts: mcp.StreamableHTTPOptions{JSONResponse: true}, wantVersion: Version20251125, wantTrans: TransportStreamableHTTP},
		{name: "auto stateless discovers 2026", opts: mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true}, wantVersion: Version20260728, wantTrans: TransportStreamableHTTP},
		{name: "auto stateless SSE", opts: mcp.StreamableHTTPOptions{Stateless: true}, wantVersion: Version20260728, wantTrans: TransportStreamableHTTP},
		{name: "pinned 2025-06-18", pin: Version20250618, wantVersion: Version20250618, wantTrans: TransportStreamableHTTP},
		{name: "pinned 2025-03-26", pin: Version20250326, wantVersion: Version20250326, wantTrans: TransportStreamableHTTP},
		{name: "server only 2025-06-18", versions: []string{Version20250618}, wantVersion: Version20250618, wantTrans: TransportStreamableHTTP},
		{name: "pinned 2026 stateless", pin: Version20260728, transport: TransportStreamableHTTP, opts: mcp.StreamableHTTPOptions{Stateless: true}, wantVersion: Version20260728, wantTrans: TransportStreamableHTTP},
		{name: "legacy sse transport", legacy: true, transport: TransportSSE, wantVersion: Version20241105, wantTrans: TransportSSE},
		{name: "legacy via auto", legacy: true, wantVersion: Version20241105, wantTrans: TransportSSE},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := sdkServer(tc.versions...)
			var url string
			if tc.legacy {
				url = legacySSE(t, s).URL
			} else {
				url = streamable(t, s, tc.opts).URL
			}
			ep := endpoint(url)
			if tc.transport != "" {
				ep.Transport = tc.transport
			}
			ep.ProtocolVersion = tc.pin
			res := testProber(t, nil).Probe(context.Background(), ep, cmd())
			if res.Status != msg.StatusUp || res.Class != ClassOK {
				t.Fatalf("status %s class %s error %q", res.Status, res.Class, res.Error)
			}
			if res.ProtocolVersion != tc.wantVersion || res.Transport != tc.wantTrans {
				t.Errorf("version %s transport %s, want %s %s", res.ProtocolVersion, res.Transport, tc.wantVersion, tc.wantTrans)
			}
			if res.ServerName != "fixture" || res.ServerVersion != "1.2.3" {
				t.Errorf("server %q %q", res.ServerName, res.ServerVersion)
			}
			if res.ToolCount != 1 || res.CatalogFingerprint == "" {
				t.Errorf("tools %d fingerprint %q", res.ToolCount, res.CatalogFingerprint)
			}
			for _, p := range []string{msg.PhaseInitialize, msg.PhaseToolsList, msg.PhaseTotal, msg.PhaseConnect} {
				if _, ok := res.Phases[p]; !ok {
					t.Errorf("phase %s missing: %v", p, res.Phases)
				}
			}
			if res.DedupID() != "ep1-"+cmd().ProbeRunID() {
				t.Errorf("dedup %s", res.DedupID())
			}
		})
	}
}
