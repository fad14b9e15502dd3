package prober

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/msg"
	"github.com/mcpmon/mcpmon/pkg/store"
)

// Tool is one tool in canonical form: what the fingerprint covers.
type Tool struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	InputSchema any    `json:"inputSchema"`
	// Truncated marks a tool whose description was cut or whose input
	// schema was dropped for exceeding catalogLimits.
	Truncated bool `json:"truncated,omitempty"`
}

// Catalog is a stored tool catalog.
type Catalog struct {
	Fingerprint string `json:"fingerprint"`
	Tools       []Tool `json:"tools"`
	// Truncated says the target listed more than the limits keep: tools
	// beyond the count or byte cap are left out, or a tool was cut.
	Truncated bool `json:"truncated,omitempty"`
}

// What a probe keeps of a target's tool catalog. A target chooses its
// catalog's size, and every byte of it is stored, fingerprinted, diffed and
// carried in results and events, so each is bounded: the tools kept, the
// bytes of their canonical JSON, each description, and each input schema's
// size and nesting. Beyond them the catalog is cut (Catalog.Truncated), in
// an order that depends only on what was fetched, so the same listing cuts
// to the same fingerprint.
const (
	MaxCatalogTools       = 500
	MaxCatalogBytes       = 256 << 10
	MaxToolDescription    = 8 << 10
	MaxToolSchemaBytes    = 32 << 10
	MaxToolSchemaDepth    = 32
	maxCatalogRawPerBytes = 4 // raw page bytes fetched per kept byte: room for whitespace and cut descriptions
)

type catalogLimits struct {
	tools, bytes, description, schemaBytes, schemaDepth int
}

var defaultCatalogLimits = catalogLimits{
	tools: MaxCatalogTools, bytes: MaxCatalogBytes, description: MaxToolDescription,
	schemaBytes: MaxToolSchemaBytes, schemaDepth: MaxToolSchemaDepth,
}

// full reports whether tools/list pages holding n tools in rawBytes bytes
// are already enough to fill a catalog: fetching more pages could only be
// cut away.
func (l catalogLimits) full(n, rawBytes int) bool {
	return n >= l.tools || rawBytes >= maxCatalogRawPerBytes*l.bytes
}

// buildCatalog turns the raw tools a target listed into the catalog that
// is fingerprinted and stored: every string the target wrote (names,
// descriptions, schema keys and values at any depth) scrubbed of the
// endpoint's secrets first, then bounded by lim, then sorted by name and
// cut to lim's count and bytes. more says the target had tools beyond
// those fetched. It is pure.
func buildCatalog(raw []json.RawMessage, secrets scrubber, lim catalogLimits, more bool) Catalog {
	tools := make([]Tool, 0, min(len(raw), lim.tools))
	for _, r := range raw {
		t, ok := canonicalTool(r, secrets, lim)
		if ok {
			tools = append(tools, t)
		}
	}
	sortTools(tools)
	c := Catalog{Tools: tools, Truncated: more}
	// Each kept tool is encoded once, for the size cut and the fingerprint:
	// the hash of "[" + the tools' encodings joined by "," + "]" is
	// fingerprint(c.Tools), byte for byte.
	h := sha256.New()
	h.Write([]byte("["))
	size := 2 // []
	for i, t := range tools {
		enc := canonJSON(t)
		size += len(enc) + 1
		if i >= lim.tools || size > lim.bytes {
			c.Tools, c.Truncated = tools[:i:i], true
			break
		}
		if i > 0 {
			h.Write([]byte(","))
		}
		h.Write(enc)
		c.Truncated = c.Truncated || t.Truncated
	}
	h.Write([]byte("]"))
	c.Fingerprint = "sha256:" + hex.EncodeToString(h.Sum(nil))
	return c
}

// canonicalTool decodes one raw tool. Numbers keep their literal text
// (json.Number); map keys are sorted when re-encoded, so two servers
// sending the same schema with different key order or whitespace
// fingerprint the same. A schema too large or too deeply nested is dropped
// before it is decoded.
func canonicalTool(r json.RawMessage, secrets scrubber, lim catalogLimits) (Tool, bool) {
	var t struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		InputSchema json.RawMessage `json:"inputSchema"`
	}
	if json.Unmarshal(r, &t) != nil {
		return Tool{}, false
	}
	out := Tool{Name: clean(secrets.scrub(t.Name))}
	out.Description = model.NoBidi(strings.ToValidUTF8(secrets.scrub(t.Description), "\uFFFD"))
	if len(out.Description) > lim.description {
		out.Description, out.Truncated = strings.ToValidUTF8(out.Description[:lim.description], "")+"…", true
	}
	if len(t.InputSchema) == 0 {
		return out, true
	}
	if len(t.InputSchema) > maxCatalogRawPerBytes*lim.schemaBytes || jsonDepth(t.InputSchema) > lim.schemaDepth {
		out.Truncated = true
		return out, true
	}
	var schema any
	d := json.NewDecoder(bytes.NewReader(t.InputSchema))
	d.UseNumber()
	if d.Decode(&schema) == nil {
		schema = scrubJSON(schema, secrets)
		if len(canonJSON(schema)) > lim.schemaBytes {
			schema, out.Truncated = nil, true
		}
	}
	out.InputSchema = schema
	return out, true
}

// sortTools orders tools by name, then by their canonical JSON.
func sortTools(tools []Tool) {
	sort.SliceStable(tools, func(i, j int) bool {
		if tools[i].Name != tools[j].Name {
			return tools[i].Name < tools[j].Name
		}
		return string(canonJSON(tools[i])) < string(canonJSON(tools[j]))
	})
}

// scrubJSON scrubs every string of a decoded JSON value: object keys,
// string values and the literal text of numbers (a numeric secret echoed
// as a number becomes the string "[REDACTED]"). Keys that scrub to the same
// text keep the value of the first in sorted order, so the result does
// not depend on map iteration.
func scrubJSON(v any, secrets scrubber) any {
	if len(secrets) == 0 {
		return v
	}
	switch x := v.(type) {
	case string:
		return secrets.scrub(x)
	case json.Number:
		if s := secrets.scrub(string(x)); s != string(x) {
			return s
		}
		return x
	case []any:
		for i := range x {
			x[i] = scrubJSON(x[i], secrets)
		}
		return x
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		out := make(map[string]any, len(x))
		for _, k := range keys {
			sk := secrets.scrub(k)
			if _, dup := out[sk]; !dup {
				out[sk] = scrubJSON(x[k], secrets)
			}
		}
		return out
	}
	return v
}

// jsonDepth is the deepest nesting of arrays and objects in raw, read
// without decoding it (strings skipped), so a hostile depth is refused in
// time linear in its size.
func jsonDepth(raw []byte) int {
	depth, deepest := 0, 0
	inString, escaped := false, false
	for _, c := range raw {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			depth++
			deepest = max(deepest, depth)
		case c == '}' || c == ']':
			depth--
		}
	}
	return deepest
}

func canonJSON(v any) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

// fingerprint is "sha256:" + hex SHA-256 of the canonical JSON array of tools.
func fingerprint(tools []Tool) string {
	h := sha256.Sum256(canonJSON(tools))
	return "sha256:" + hex.EncodeToString(h[:])
}

// ToolChange describes how one tool changed.
type ToolChange struct {
	Name               string   `json:"name"`
	DescriptionChanged bool     `json:"descriptionChanged,omitempty"`
	Breaking           []string `json:"breaking,omitempty"`
	Info               []string `json:"info,omitempty"`
}

// CatalogDiff is the drift between two catalogs.
type CatalogDiff struct {
	Severity string       `json:"severity"` // breaking | info
	Added    []string     `json:"added,omitempty"`
	Removed  []string     `json:"removed,omitempty"`
	Changed  []ToolChange `json:"changed,omitempty"`
	// More counts the tools that changed beyond those listed (capped).
	More           int    `json:"more,omitempty"`
	OldFingerprint string `json:"oldFingerprint"`
	NewFingerprint string `json:"newFingerprint"`
}

// A catalog diff lists at most maxDiffEntries tools, maxDiffReasons
// reasons per tool and about maxDiffBytes of names and reasons: it travels
// in every result of the probe that saw it and is kept in the event
// history, whatever size of catalog churn a target chooses.
const (
	maxDiffEntries = 50
	maxDiffReasons = 10
	maxDiffBytes   = 16 << 10
)

// capped bounds d's lists: the removed tools first, then the changed, then
// the added (breaking news before info), while fewer than entries tools
// and bytes of their names and reasons are listed; the rest are counted in
// More. The severity stays the whole diff's. It is pure.
func (d CatalogDiff) capped(entries, bytes int) CatalogDiff {
	listed, size := 0, 0
	fits := func(cost int) bool {
		if listed >= entries || size+cost > bytes {
			d.More++
			return false
		}
		listed, size = listed+1, size+cost
		return true
	}
	names := func(ns []string) []string {
		var out []string
		for _, n := range ns {
			if fits(len(n)) {
				out = append(out, n)
			}
		}
		return out
	}
	reasons := func(rs []string) []string {
		if len(rs) <= maxDiffReasons {
			return rs
		}
		return append(slices.Clone(rs[:maxDiffReasons-1]), fmt.Sprintf("… and %d more", len(rs)-maxDiffReasons+1))
	}
	d.Removed = names(d.Removed)
	var changed []ToolChange
	for _, c := range d.Changed {
		c.Breaking, c.Info = reasons(c.Breaking), reasons(c.Info)
		cost := len(c.Name)
		for _, r := range append(slices.Clone(c.Breaking), c.Info...) {
			cost += len(r)
		}
		if fits(cost) {
			changed = append(changed, c)
		}
	}
	d.Changed = changed
	d.Added = names(d.Added)
	return d
}

// DiffCatalogs compares two catalogs. Breaking: a tool removed, a required
// input added, an input removed or its type changed. Everything else (tools
// added, optional inputs added, descriptions) is info.
func DiffCatalogs(old, cur Catalog) CatalogDiff {
	d := CatalogDiff{Severity: "info", OldFingerprint: old.Fingerprint, NewFingerprint: cur.Fingerprint}
	oldBy, curBy := map[string]Tool{}, map[string]Tool{}
	for _, t := range old.Tools {
		oldBy[t.Name] = t
	}
	for _, t := range cur.Tools {
		curBy[t.Name] = t
	}
	for _, t := range cur.Tools {
		if _, ok := oldBy[t.Name]; !ok {
			d.Added = append(d.Added, t.Name)
		}
	}
	for _, t := range old.Tools {
		c, ok := curBy[t.Name]
		if !ok {
			d.Removed = append(d.Removed, t.Name)
			d.Severity = "breaking"
			continue
		}
		if ch, changed := diffTool(t, c); changed {
			if len(ch.Breaking) > 0 {
				d.Severity = "breaking"
			}
			d.Changed = append(d.Changed, ch)
		}
	}
	d.Added, d.Removed = slices.Compact(d.Added), slices.Compact(d.Removed)
	return d
}

type schemaShape struct {
	Properties map[string]struct {
		Type any `json:"type"`
	} `json:"properties"`
	Required []string `json:"required"`
}

func shapeOf(schema any) schemaShape {
	var s schemaShape
	_ = json.Unmarshal(canonJSON(schema), &s)
	return s
}

func diffTool(old, cur Tool) (ToolChange, bool) {
	ch := ToolChange{Name: old.Name}
	changed := false
	if old.Description != cur.Description {
		ch.DescriptionChanged, changed = true, true
	}
	if bytes.Equal(canonJSON(old.InputSchema), canonJSON(cur.InputSchema)) {
		return ch, changed
	}
	changed = true
	os, cs := shapeOf(old.InputSchema), shapeOf(cur.InputSchema)
	for _, req := range cs.Required {
		if !slices.Contains(os.Required, req) {
			ch.Breaking = append(ch.Breaking, fmt.Sprintf("required input %q added", req))
		}
	}
	for name, op := range os.Properties {
		cp, ok := cs.Properties[name]
		if !ok {
			ch.Breaking = append(ch.Breaking, fmt.Sprintf("input %q removed", name))
			continue
		}
		if ot, ct := string(canonJSON(op.Type)), string(canonJSON(cp.Type)); ot != ct {
			ch.Breaking = append(ch.Breaking, fmt.Sprintf("input %q type changed from %s to %s", name, ot, ct))
		}
	}
	for name := range cs.Properties {
		if _, ok := os.Properties[name]; !ok && !slices.Contains(cs.Required, name) {
			ch.Info = append(ch.Info, fmt.Sprintf("optional input %q added", name))
		}
	}
	sort.Strings(ch.Breaking)
	sort.Strings(ch.Info)
	if len(ch.Breaking) == 0 && len(ch.Info) == 0 {
		ch.Info = append(ch.Info, "input schema changed")
	}
	return ch, changed
}

// redacted scrubs secrets from the tool and input names, the only words of
// the target's in a diff (the message around them is mcpmon's and stays as
// is), and bounds each: the old catalog was scrubbed of the secrets of its
// day, and a name read from it may predate the current ones.
func (d CatalogDiff) redacted(secrets scrubber) CatalogDiff {
	names := func(ns []string) []string {
		if ns == nil {
			return nil
		}
		out := make([]string, len(ns))
		for i, n := range ns {
			out[i] = clean(secrets.scrub(n))
		}
		return out
	}
	d.Added, d.Removed = names(d.Added), names(d.Removed)
	changed := make([]ToolChange, len(d.Changed))
	for i, c := range d.Changed {
		c.Name = clean(secrets.scrub(c.Name))
		c.Breaking, c.Info = names(c.Breaking), names(c.Info)
		changed[i] = c
	}
	d.Changed = changed
	return d
}

// message renders a diff for humans; description changes are called out as a
// security signal because tool descriptions are instructions to the model.
func (d CatalogDiff) message() string {
	var parts []string
	if len(d.Added) > 0 {
		parts = append(parts, fmt.Sprintf("added %s", strings.Join(d.Added, ", ")))
	}
	if len(d.Removed) > 0 {
		parts = append(parts, fmt.Sprintf("removed %s", strings.Join(d.Removed, ", ")))
	}
	var descs []string
	for _, c := range d.Changed {
		var what []string
		if c.DescriptionChanged {
			what = append(what, "description")
			descs = append(descs, c.Name)
		}
		what = append(what, c.Breaking...)
		what = append(what, c.Info...)
		parts = append(parts, fmt.Sprintf("changed %s (%s)", c.Name, strings.Join(what, "; ")))
	}
	if d.More > 0 {
		parts = append(parts, fmt.Sprintf("… and %d more", d.More))
	}
	head := d.Severity
	if d.More > 0 {
		// Up front: the list may be cut to 4 KiB below.
		head = fmt.Sprintf("%s; %d more tools than listed", d.Severity, d.More)
	}
	s := fmt.Sprintf("tool catalog changed (%s): %s", head, strings.Join(parts, "; "))
	if len(descs) > 0 {
		s += fmt.Sprintf(". SECURITY: the description of %s changed; tool descriptions are instructions to the model, and a silent change can mean a server swapping instructions under its users (tool poisoning): review it", strings.Join(descs, ", "))
	}
	return clean4k(s)
}

func clean4k(s string) string {
	if len(s) > 4096 {
		s = strings.ToValidUTF8(s[:4096], "") + "…"
	}
	return s
}

// catalogDrift compares cur (buildCatalog's) with the stored catalog (this
// prober's region's, see loadObject). It returns a drift event (nil when
// unchanged, first seen, or no store) and the catalog to remember (nil when
// unchanged), which the caller stores only after the result is published
// (see Memory).
func (p *Prober) catalogDrift(ctx context.Context, endpointID string, cur Catalog, secrets scrubber) (*msg.Event, []byte) {
	if p.opts.Catalogs == nil {
		return nil, nil
	}
	doc, inherited, err := p.loadObject(ctx, store.KindCatalog, endpointID)
	var old Catalog
	switch {
	case errors.Is(err, model.ErrNotFound):
	case err != nil:
		p.log.Warn("read tool catalog failed; drift not checked this probe", "endpoint", endpointID, "err", err)
		return nil, nil
	default:
		if err := json.Unmarshal(doc, &old); err != nil {
			p.log.Warn("stored tool catalog unreadable; replacing it", "endpoint", endpointID, "err", err)
			doc = nil
		}
	}
	if doc != nil && old.Fingerprint == cur.Fingerprint {
		if inherited || old.Truncated != cur.Truncated {
			return nil, canonJSON(cur) // the region's own from now on
		}
		return nil, nil
	}
	if doc == nil {
		return nil, canonJSON(cur)
	}
	d := DiffCatalogs(old, cur).redacted(secrets).capped(maxDiffEntries, maxDiffBytes)
	p.opts.Metrics.catalogChanged(endpointID, d.Severity)
	return &msg.Event{Kind: EventCatalogChanged, Severity: d.Severity, Message: d.message(), Details: d}, canonJSON(cur)
}
