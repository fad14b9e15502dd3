package prober

import (
	"context"
	"encoding/json"

	"github.com/mcpmon/mcpmon/pkg/msg"
)

// listTools reads tools/list pages until the last one, or until the pages
// hold enough to fill a catalog (catalogLimits.full: the rest would be cut
// away, so it is not fetched and r.toolsMore says so); a failure marks the
// probe degraded.
func (r *run) listTools(ctx context.Context) {
	if !r.hasTools {
		return
	}
	var tools []json.RawMessage
	rawBytes, more := 0, false
	cursor := ""
	err := r.timed(msg.PhaseToolsList, func() error {
		for page := 0; ; page++ {
			if page >= DefaultMaxToolPages {
				return failf(ClassDegraded, 0, "more than %d pages", DefaultMaxToolPages)
			}
			params := map[string]any{}
			if cursor != "" {
				params["cursor"] = cursor
			}
			res, err := r.call(ctx, "tools/list", params)
			if err != nil {
				return err
			}
			var lr struct {
				Tools      []json.RawMessage `json:"tools"`
				NextCursor string            `json:"nextCursor"`
			}
			if err := json.Unmarshal(res, &lr); err != nil {
				return failf(ClassDegraded, 0, "malformed result: %v", err)
			}
			tools = append(tools, lr.Tools...)
			r.conf.page(res)
			rawBytes += len(res)
			if lr.NextCursor == "" {
				return nil
			}
			if defaultCatalogLimits.full(len(tools), rawBytes) {
				more = true
				return nil
			}
			if lr.NextCursor == cursor {
				return failf(ClassDegraded, 0, "server repeated the same cursor")
			}
			cursor = lr.NextCursor
		}
	})
	if err != nil {
		r.degraded = failf(ClassDegraded, 0, "tools/list failed: %v", err)
		return
	}
	r.tools = tools
	if tools == nil {
		r.tools = []json.RawMessage{}
	}
	r.toolsMore = more
	r.conf.obs.ToolsListed = !more
}
