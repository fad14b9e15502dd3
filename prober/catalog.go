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

	"github.com/mcpmon/mcpmon/pkg/msg"
	"github.com/mcpmon/mcpmon/pkg/store"
)

// CatalogKind is the store.Objects kind under which catalogs are kept.
const CatalogKind = store.KindCatalog

// Tool is one tool in canonical form: what the fingerprint covers.
type Tool struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	InputSchema any    `json:"inputSchema"`
}

// Catalog is a stored tool catalog.
type Catalog struct {
	Fingerprint string `json:"fingerprint"`
	Tools       []Tool `json:"tools"`
}

// canonicalTools decodes raw tools into canonical form, sorted by name.
// Numbers keep their literal text (json.Number); map keys are sorted when
// re-encoded, so two servers sending the same schema with different key
// order or whitespace fingerprint the same.
func canonicalTools(raw []json.RawMessage) []Tool {
	tools := make([]Tool, 0, len(raw))
	for _, r := range raw {
		var t struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			InputSchema json.RawMessage `json:"inputSchema"`
		}
		if json.Unmarshal(r, &t) != nil {
			continue
		}
		var schema any
		if len(t.InputSchema) > 0 {
			d := json.NewDecoder(bytes.NewReader(t.InputSchema))
			d.UseNumber()
			_ = d.Decode(&schema)
		}
		tools = append(tools, Tool{Name: t.Name, Description: t.Description, InputSchema: schema})
	}
	sort.SliceStable(tools, func(i, j int) bool {
		if tools[i].Name != tools[j].Name {
			return tools[i].Name < tools[j].Name
		}
		return string(canonJSON(tools[i])) < string(canonJSON(tools[j]))
	})
	return tools
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
	Severity       string       `json:"severity"` // breaking | info
	Added          []string     `json:"added,omitempty"`
	Removed        []string     `json:"removed,omitempty"`
	Changed        []ToolChange `json:"changed,omitempty"`
	OldFingerprint string       `json:"oldFingerprint"`
	NewFingerprint string       `json:"newFingerprint"`
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

// redacted scrubs secrets from the tool names, the only words of the
// target's in a diff: the message around them is mcpmon's and stays as is.
func (d CatalogDiff) redacted(secrets scrubber) CatalogDiff {
	names := func(ns []string) []string {
		out := make([]string, len(ns))
		for i, n := range ns {
			out[i] = secrets.scrub(n)
		}
		return out
	}
	d.Added, d.Removed = names(d.Added), names(d.Removed)
	changed := make([]ToolChange, len(d.Changed))
	for i, c := range d.Changed {
		c.Name = secrets.scrub(c.Name)
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
	s := fmt.Sprintf("tool catalog changed (%s): %s", d.Severity, strings.Join(parts, "; "))
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

// catalogDrift compares tools with the stored catalog (this prober's
// region's, see loadObject). It returns a drift event (nil when unchanged,
// first seen, or no store) and the catalog to remember (nil when unchanged),
// which the caller stores only after the result is published (see Memory).
func (p *Prober) catalogDrift(ctx context.Context, endpointID string, raw []json.RawMessage, secrets scrubber) (*msg.Event, []byte) {
	if p.opts.Catalogs == nil {
		return nil, nil
	}
	tools := canonicalTools(raw)
	for i := range tools {
		tools[i].Name, tools[i].Description = clean(secrets.scrub(tools[i].Name)), strings.ToValidUTF8(tools[i].Description, "\uFFFD")
	}
	cur := Catalog{Fingerprint: fingerprint(canonicalTools(raw)), Tools: tools}
	doc, inherited, err := p.loadObject(ctx, CatalogKind, endpointID)
	var old Catalog
	switch {
	case errors.Is(err, store.ErrNotFound):
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
		if inherited {
			return nil, canonJSON(cur) // the region's own from now on
		}
		return nil, nil
	}
	if doc == nil {
		return nil, canonJSON(cur)
	}
	d := DiffCatalogs(old, cur).redacted(secrets)
	p.opts.Metrics.catalogChanged(endpointID, d.Severity)
	return &msg.Event{Kind: EventCatalogChanged, Severity: d.Severity, Message: d.message(), Details: d}, canonJSON(cur)
}
