package prober

// handshake.go owns the initialize handshake of the 2025-era protocol, one
// for both transports: Streamable HTTP (2025-03-26 to 2025-11-25) and
// legacy HTTP+SSE (2024-11-05, once legacy.go has opened its stream). call
// and notify send each step over whichever transport the run has open.

import (
	"context"
	"encoding/json"
	"errors"
	"slices"

	"github.com/mcpmon/mcpmon/pkg/msg"
)

// initializeProbe runs the Streamable HTTP handshake for version.
func (r *run) initializeProbe(ctx context.Context, version string) error {
	r.res.Transport = TransportStreamableHTTP
	return r.handshake(ctx, version)
}

// handshake runs initialize → notifications/initialized → ping →
// tools/list, then ends the session (a DELETE; a legacy run has no session
// ID to end, its stream is closed with the run).
func (r *run) handshake(ctx context.Context, version string) error {
	params := r.p.initializeParams(version)
	var result json.RawMessage
	err := r.timed(msg.PhaseInitialize, func() error {
		var err error
		result, err = r.call(ctx, "initialize", params)
		return err
	})
	if err != nil {
		return asRPCClass(err, ClassRPCError, "initialize")
	}
	defer r.deleteSession(ctx)
	if err := r.acceptInitialize(result, version); err != nil {
		return err
	}
	r.conf.obs.Era, r.conf.obs.Initialize, r.conf.obs.SessionID = r.version, result, r.sessionID
	r.conf.obs.LegacySSE = r.legacy != nil
	if err := r.timed(msg.PhaseInitialized, func() error { return r.notify(ctx, "notifications/initialized") }); err != nil {
		return err
	}
	if err := r.timed(msg.PhasePing, func() error {
		_, err := r.call(ctx, "ping", emptyParams)
		r.conf.obs.PingSent = true
		var pe *probeError
		if errors.As(err, &pe) && pe.rpc != nil && pe.rpc.Code == codeMethodNotFound {
			r.conf.obs.PingNotFound = true
			return nil // an answered -32601 still proves the server alive
		}
		return asRPCClass(err, ClassRPCError, "ping")
	}); err != nil {
		return err
	}
	r.listTools(ctx)
	if err := r.checkTool(ctx); err != nil {
		return err
	}
	r.activeChecks(ctx)
	return nil
}

// acceptInitialize checks the initialize result and records the server.
func (r *run) acceptInitialize(result json.RawMessage, asked string) error {
	var ir struct {
		ProtocolVersion string          `json:"protocolVersion"`
		Capabilities    json.RawMessage `json:"capabilities"`
		ServerInfo      struct {
			Name    string `json:"name"`
			Version string `json:"version"`
		} `json:"serverInfo"`
	}
	if err := json.Unmarshal(result, &ir); err != nil {
		return failf(ClassProtocolError, 0, "initialize result is not an InitializeResult: %v", err)
	}
	if ir.ProtocolVersion == "" {
		return failf(ClassProtocolError, 0, "initialize result has no protocolVersion")
	}
	r.res.ServerName, r.res.ServerVersion = ir.ServerInfo.Name, ir.ServerInfo.Version // cleaned after scrubbing (redactIdentity)
	r.res.ProtocolVersion = ir.ProtocolVersion
	if pinned := r.ep.ProtocolVersion; pinned != "" && ir.ProtocolVersion != pinned {
		return failf(ClassVersionMismatch, 0, "endpoint pins protocol %s but the server answered %s", pinned, fromTarget(ir.ProtocolVersion))
	}
	if ir.ProtocolVersion == Version20260728 {
		// The prober speaks 2026-07-28, but that revision has no
		// initialize and no session for the handshake to go on with.
		return failf(ClassVersionMismatch, 0, "asked for protocol %s, server answered %s to initialize, a revision without initialize (the prober speaks it through server/discover): the handshake cannot continue", asked, Version20260728)
	}
	if !slices.Contains(versions[:], ir.ProtocolVersion) {
		return failf(ClassVersionMismatch, 0, "asked for protocol %s, server answered %q, which the prober does not speak", asked, fromTarget(ir.ProtocolVersion))
	}
	r.version = ir.ProtocolVersion
	var caps struct {
		Tools json.RawMessage `json:"tools"`
	}
	_ = json.Unmarshal(ir.Capabilities, &caps)
	r.hasTools = len(caps.Tools) > 0 && string(caps.Tools) != "null"
	return nil
}
