package prober

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/mcpmon/mcpmon/pkg/msg"
)

// discoverProbe runs the 2026-07-28 stateless probe: server/discover (and
// tools/list), each carrying _meta and the Mcp-Method header.
func (r *run) discoverProbe(ctx context.Context) error {
	r.res.Transport = TransportStreamableHTTP
	r.version = Version20260728
	var result json.RawMessage
	err := r.timed(msg.PhaseDiscover, func() error {
		var err error
		result, err = r.call(ctx, "server/discover", map[string]any{})
		return err
	})
	if err != nil {
		return asRPCClass(err, ClassRPCError, "server/discover")
	}
	var dr struct {
		SupportedVersions []string                   `json:"supportedVersions"`
		Capabilities      json.RawMessage            `json:"capabilities"`
		Meta              map[string]json.RawMessage `json:"_meta"`
		ServerInfo        *struct {
			Name    string `json:"name"`
			Version string `json:"version"`
		} `json:"serverInfo"`
	}
	if err := json.Unmarshal(result, &dr); err != nil {
		return failf(ClassProtocolError, 0, "server/discover result is malformed: %v", err)
	}
	if !slices.Contains(dr.SupportedVersions, Version20260728) {
		// A server that lists only older revisions wants the 2025 handshake.
		return failf(ClassVersionMismatch, 0, "server/discover lists %s without %s", fromTarget(fmt.Sprint(dr.SupportedVersions)), Version20260728)
	}
	r.res.ProtocolVersion = Version20260728
	r.conf.obs.Era, r.conf.obs.Discover = Version20260728, result
	var info struct {
		Name    string `json:"name"`
		Version string `json:"version"`
	}
	if raw, ok := dr.Meta["io.modelcontextprotocol/serverInfo"]; ok {
		_ = json.Unmarshal(raw, &info)
	} else if dr.ServerInfo != nil {
		info = *dr.ServerInfo
	}
	r.res.ServerName, r.res.ServerVersion = info.Name, info.Version // cleaned after scrubbing (redactIdentity)
	var caps struct {
		Tools json.RawMessage `json:"tools"`
	}
	_ = json.Unmarshal(dr.Capabilities, &caps)
	r.hasTools = len(caps.Tools) > 0 && string(caps.Tools) != "null"
	r.listTools(ctx)
	if err := r.checkTool(ctx); err != nil {
		return err
	}
	r.activeChecks(ctx)
	return nil
}
