package prober

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/mcpmon/mcpmon/pkg/msg"
)

// maxListedTools bounds the tools a probe decodes from tools/list, over
// every page: a catalog keeps MaxCatalogTools, and a tool decoded costs
// the catalog (scrubbed, bounded, sorted) and the conformance rules
// (validated against the era's schema) whether it is kept or not. One
// page of a megabyte can list 80,000 tiny tools, which cost over 300 ms
// of CPU a probe to decode, canonicalize and validate. Tools past the
// bound are not decoded: the catalog is cut in listed order, as when
// paging stops once it is full, and the page is not handed to the rules.
const maxListedTools = maxCatalogRawPerBytes * MaxCatalogTools

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
			lr, err := decodeToolsPage(res, maxListedTools-len(tools))
			if err != nil {
				return failf(ClassDegraded, 0, "malformed result: %v", err)
			}
			tools = append(tools, lr.tools...)
			if lr.over {
				more = true
				r.conf.heldBack(page+1, maxListedTools)
				return nil
			}
			r.conf.page(res)
			rawBytes += len(res)
			if lr.nextCursor == "" {
				return nil
			}
			if defaultCatalogLimits.full(len(tools), rawBytes) {
				more = true
				return nil
			}
			if lr.nextCursor == cursor {
				return failf(ClassDegraded, 0, "server repeated the same cursor")
			}
			cursor = lr.nextCursor
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

// toolsPage is what a probe reads of one tools/list result.
type toolsPage struct {
	tools      []json.RawMessage
	nextCursor string
	// over says the page lists more than the room left: tools holds the
	// first room of them and nextCursor is not read.
	over bool
}

// decodeToolsPage reads the tools (at most room) and nextCursor of res, a
// tools/list result that parseRPC already found to be valid JSON. Within
// room it reads what json.Unmarshal would into
// struct{Tools []json.RawMessage; NextCursor string}: member names
// matched without regard to case, the last of two alike winning, a null
// leaving the field unset. Past room it stops without reading further, so
// a page of a million tools costs what a page of room tools costs.
func decodeToolsPage(res []byte, room int) (toolsPage, error) {
	var pg toolsPage
	d := json.NewDecoder(bytes.NewReader(res))
	if tok, err := d.Token(); err != nil {
		return pg, err
	} else if tok != json.Delim('{') {
		if tok == nil {
			return pg, nil // a null result, as Unmarshal leaves it
		}
		return pg, fmt.Errorf("result is %s, not an object", jsonKind(tok))
	}
	for d.More() {
		tok, err := d.Token()
		if err != nil {
			return pg, err
		}
		key, _ := tok.(string)
		switch {
		case strings.EqualFold(key, "tools"):
			pg.tools = pg.tools[:0]
			if pg.over, err = decodeTools(d, &pg.tools, room); err != nil || pg.over {
				return pg, err
			}
		case strings.EqualFold(key, "nextCursor"):
			if err := d.Decode(&pg.nextCursor); err != nil {
				return pg, fmt.Errorf("nextCursor: %w", err)
			}
		default:
			var skip json.RawMessage
			if err := d.Decode(&skip); err != nil {
				return pg, err
			}
		}
	}
	return pg, nil
}

// decodeTools reads a tools array into *tools, at most room elements;
// over says there were more.
func decodeTools(d *json.Decoder, tools *[]json.RawMessage, room int) (over bool, err error) {
	tok, err := d.Token()
	if err != nil {
		return false, err
	}
	switch tok {
	case nil:
		*tools = nil
		return false, nil
	case json.Delim('['):
	default:
		return false, fmt.Errorf("tools is %s, not an array", jsonKind(tok))
	}
	for d.More() {
		if len(*tools) >= room {
			return true, nil
		}
		var t json.RawMessage
		if err := d.Decode(&t); err != nil {
			return false, err
		}
		*tools = append(*tools, t)
	}
	if _, err := d.Token(); err != nil && !errors.Is(err, io.EOF) {
		return false, err
	}
	return false, nil
}

// jsonKind names the JSON value a token starts.
func jsonKind(tok json.Token) string {
	switch tok.(type) {
	case json.Delim:
		if tok == json.Delim('[') {
			return "an array"
		}
		return "an object"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case float64, json.Number:
		return "a number"
	}
	return "null"
}
