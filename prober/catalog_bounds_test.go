package prober

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpmon/mcpmon/pkg/conformance"
	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/msg"
)

// catalogStrings is every string of c a reader sees: names, descriptions,
// and the keys and values of every schema at every depth.
func catalogStrings(c Catalog) []string {
	var out []string
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case string:
			out = append(out, x)
		case json.Number:
			out = append(out, string(x))
		case []any:
			for _, e := range x {
				walk(e)
			}
		case map[string]any:
			for k, e := range x {
				out = append(out, k)
				walk(e)
			}
		}
	}
	for _, t := range c.Tools {
		out = append(out, t.Name, t.Description)
		walk(t.InputSchema)
	}
	return out
}

// TestBuildCatalogScrubsEveryString: a secret the target echoes anywhere
// in a tool — name, description, a schema key or value at any depth, an
// enum, a number — in any spelling the scrubber knows is gone from the
// catalog and from what its fingerprint covers.
func TestBuildCatalogScrubsEveryString(t *testing.T) {
	const token = "tok-LIVE-8c41d2e9a7"
	secrets := newScrubber(map[string]string{"Authorization": "Bearer " + token, "X-Pin": "90417733"})
	forms := map[string]string{
		"as is":       token,
		"upper":       strings.ToUpper(token),
		"base64":      base64.StdEncoding.EncodeToString([]byte(token)),
		"base64 url":  base64.RawURLEncoding.EncodeToString([]byte("Bearer " + token)),
		"url-encoded": url.QueryEscape("Bearer " + token),
	}
	for name, form := range forms {
		q := strconv.Quote(form)
		for where, tool := range map[string]string{
			"name":               `{"name":"t-` + form + `"}`,
			"description":        `{"name":"t","description":"you sent ` + form + `"}`,
			"schema key":         `{"name":"t","inputSchema":{"properties":{` + q + `:{"type":"string"}}}}`,
			"schema value":       `{"name":"t","inputSchema":{"properties":{"a":{"default":` + q + `}}}}`,
			"deep schema":        `{"name":"t","inputSchema":{"a":{"b":{"c":{"d":[{"e":[` + q + `]}]}}}}}`,
			"enum":               `{"name":"t","inputSchema":{"enum":["x",` + q + `]}}`,
			"key and value both": `{"name":"t","inputSchema":{` + q + `:` + q + `}}`,
		} {
			t.Run(name+"/"+where, func(t *testing.T) {
				c := buildCatalog([]json.RawMessage{json.RawMessage(tool)}, secrets, defaultCatalogLimits, false)
				if len(c.Tools) != 1 {
					t.Fatalf("tools %+v, want the one tool kept", c.Tools)
				}
				doc := string(canonJSON(c))
				for _, s := range append(catalogStrings(c), doc) {
					if strings.Contains(strings.ToLower(s), strings.ToLower(token)) || strings.Contains(s, form) {
						t.Fatalf("catalog holds the secret: %s", doc)
					}
				}
				if !strings.Contains(doc, "[REDACTED]") {
					t.Fatalf("nothing redacted: %s", doc)
				}
			})
		}
	}
	t.Run("number", func(t *testing.T) {
		c := buildCatalog([]json.RawMessage{json.RawMessage(`{"name":"t","inputSchema":{"default":90417733,"maximum":10}}`)}, secrets, defaultCatalogLimits, false)
		if doc := string(canonJSON(c)); strings.Contains(doc, "90417733") || !strings.Contains(doc, `"maximum":10`) {
			t.Fatalf("catalog %s: want the numeric secret redacted, other numbers kept", doc)
		}
	})
	t.Run("no secret, no change", func(t *testing.T) {
		raw := []json.RawMessage{json.RawMessage(`{"name":"a","description":"A","inputSchema":{"type":"object","properties":{"x":{"type":"number","maximum":1.50}}}}`)}
		if buildCatalog(raw, secrets, defaultCatalogLimits, false).Fingerprint != buildCatalog(raw, nil, defaultCatalogLimits, false).Fingerprint {
			t.Fatal("scrubbing a catalog without secrets changed its fingerprint")
		}
	})
}

// TestBuildCatalogBounds: each limit cuts the catalog deterministically —
// the same tools in any order give the same catalog and fingerprint — and
// marks it truncated; within the limits nothing is cut.
func TestBuildCatalogBounds(t *testing.T) {
	tool := func(name, desc, schema string) json.RawMessage {
		return json.RawMessage(fmt.Sprintf(`{"name":%q,"description":%q,"inputSchema":%s}`, name, desc, schema))
	}
	many := func(n int) []json.RawMessage {
		var raw []json.RawMessage
		for i := range n {
			raw = append(raw, tool(fmt.Sprintf("t%03d", i), "d", `{"type":"object"}`))
		}
		return raw
	}
	small := catalogLimits{tools: 10, bytes: 4096, description: 32, schemaBytes: 256, schemaDepth: 4}
	for _, tc := range []struct {
		name          string
		raw           []json.RawMessage
		more          bool
		wantTools     int
		wantTruncated bool
		bytes         int // overrides small.bytes
		check         func(t *testing.T, c Catalog)
	}{
		{name: "within limits", raw: many(10), wantTools: 10},
		{name: "tool count", raw: many(25), wantTools: 10, wantTruncated: true, check: func(t *testing.T, c Catalog) {
			if c.Tools[0].Name != "t000" || c.Tools[9].Name != "t009" {
				t.Errorf("kept %s..%s, want the first ten by name", c.Tools[0].Name, c.Tools[9].Name)
			}
		}},
		{name: "more pages", raw: many(3), more: true, wantTools: 3, wantTruncated: true},
		{name: "bytes", raw: func() []json.RawMessage {
			var raw []json.RawMessage
			for i := range 8 {
				raw = append(raw, tool(fmt.Sprintf("t%d", i), strings.Repeat("x", 30), `{"type":"object","description":"`+strings.Repeat("y", 200)+`"}`))
			}
			return raw
		}(), bytes: 1024, wantTruncated: true, check: func(t *testing.T, c Catalog) {
			if n := len(canonJSON(c.Tools)); n > 1024 || len(c.Tools) == 0 || len(c.Tools) == 8 {
				t.Errorf("%d tools in %d bytes, want some but not all, within 1024", len(c.Tools), n)
			}
		}},
		{name: "description", raw: []json.RawMessage{tool("t", strings.Repeat("é", 40), `{}`)}, wantTools: 1, wantTruncated: true, check: func(t *testing.T, c Catalog) {
			d := c.Tools[0].Description
			if !c.Tools[0].Truncated || len(d) > small.description+len("…") || !strings.HasSuffix(d, "…") || !json.Valid(canonJSON(d)) || strings.ContainsRune(d, '\uFFFD') {
				t.Errorf("description %q: want cut at a rune boundary to %d bytes, marked", d, small.description)
			}
		}},
		{name: "schema size", raw: []json.RawMessage{tool("t", "d", `{"enum":["`+strings.Repeat("z", 300)+`"]}`)}, wantTools: 1, wantTruncated: true, check: func(t *testing.T, c Catalog) {
			if c.Tools[0].InputSchema != nil || !c.Tools[0].Truncated {
				t.Errorf("schema kept: %+v", c.Tools[0])
			}
		}},
		{name: "schema depth", raw: []json.RawMessage{tool("t", "d", strings.Repeat(`{"a":`, 5)+`1`+strings.Repeat(`}`, 5))}, wantTools: 1, wantTruncated: true, check: func(t *testing.T, c Catalog) {
			if c.Tools[0].InputSchema != nil || !c.Tools[0].Truncated {
				t.Errorf("schema kept: %+v", c.Tools[0])
			}
		}},
		{name: "schema at the depth limit", raw: []json.RawMessage{tool("t", "d", strings.Repeat(`{"a":`, 4)+`"[{"`+strings.Repeat(`}`, 4))}, wantTools: 1, check: func(t *testing.T, c Catalog) {
			if c.Tools[0].InputSchema == nil {
				t.Error("a schema within the depth limit (brackets inside strings do not count) was dropped")
			}
		}},
		{name: "hostile depth", raw: []json.RawMessage{tool("t", "d", strings.Repeat(`[`, 5000)+strings.Repeat(`]`, 5000))}, wantTools: 1, wantTruncated: true},
		{name: "not a tool", raw: []json.RawMessage{json.RawMessage(`"nope"`), tool("t", "d", `{}`)}, wantTools: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lim := small
			if tc.bytes > 0 {
				lim.bytes = tc.bytes
			}
			c := buildCatalog(tc.raw, nil, lim, tc.more)
			if tc.wantTools > 0 && len(c.Tools) != tc.wantTools || c.Truncated != tc.wantTruncated {
				t.Fatalf("%d tools, truncated=%v; want %d, %v", len(c.Tools), c.Truncated, tc.wantTools, tc.wantTruncated)
			}
			if tc.check != nil {
				tc.check(t, c)
			}
			rev := slices.Clone(tc.raw)
			slices.Reverse(rev)
			if again := buildCatalog(rev, nil, lim, tc.more); again.Fingerprint != c.Fingerprint || again.Truncated != c.Truncated {
				t.Fatalf("the same tools in another order cut to another catalog: %s vs %s", again.Fingerprint, c.Fingerprint)
			}
			if c.Fingerprint != fingerprint(c.Tools) {
				t.Fatal("the fingerprint does not cover the tools kept")
			}
		})
	}
}

// TestCatalogDiffIsCapped: a drift of thousands of tools names at most
// maxDiffEntries of them (removed first) within maxDiffBytes and counts
// the rest; its severity is the whole diff's.
func TestCatalogDiffIsCapped(t *testing.T) {
	var old, cur Catalog
	for i := range 2000 {
		old.Tools = append(old.Tools, Tool{Name: fmt.Sprintf("old-%04d-%s", i, strings.Repeat("n", 200))})
		cur.Tools = append(cur.Tools, Tool{Name: fmt.Sprintf("new-%04d", i)})
	}
	for _, tc := range []struct {
		name           string
		entries, bytes int
	}{
		{"count", 50, 1 << 20},
		{"bytes", 1 << 20, 4096},
		{"defaults", maxDiffEntries, maxDiffBytes},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := DiffCatalogs(old, cur).redacted(nil).capped(tc.entries, tc.bytes)
			listed := len(d.Added) + len(d.Removed) + len(d.Changed)
			if listed > tc.entries || listed+d.More != 4000 || d.Severity != "breaking" || len(d.Removed) == 0 {
				t.Fatalf("listed %d (removed %d), more %d, severity %s; want at most %d listed, removed first, 4000 in all, breaking",
					listed, len(d.Removed), d.More, d.Severity, tc.entries)
			}
			if n := len(canonJSON(d)); n > tc.bytes+1024 {
				t.Fatalf("diff is %d bytes, want about %d", n, tc.bytes)
			}
			if m := d.message(); !strings.Contains(m, fmt.Sprintf("%d more", d.More)) || len(m) > 4096+len("…") {
				t.Fatalf("message %q: want the rest counted, within 4 KiB", m)
			}
		})
	}
	t.Run("reasons", func(t *testing.T) {
		props := map[string]any{}
		for i := range 100 {
			props[fmt.Sprintf("p%03d", i)] = map[string]any{"type": "string"}
		}
		o := Catalog{Tools: []Tool{{Name: "t", InputSchema: map[string]any{"properties": props}}}}
		c := Catalog{Tools: []Tool{{Name: "t", InputSchema: map[string]any{}}}}
		d := DiffCatalogs(o, c).capped(maxDiffEntries, maxDiffBytes)
		if len(d.Changed) != 1 || len(d.Changed[0].Breaking) != maxDiffReasons || !strings.Contains(d.Changed[0].Breaking[maxDiffReasons-1], "and 91 more") {
			t.Fatalf("changed %+v: want %d reasons, the last counting the rest", d.Changed, maxDiffReasons)
		}
	})
}

// TestToolsListStopsAtTheCap: a server with 20 pages of 1,000 tools is read
// one page deep — the first fills the catalog — and the probe is up with
// the catalog kept truncated, the same fingerprint each probe.
func TestToolsListStopsAtTheCap(t *testing.T) {
	var pages atomic.Int64
	ep := rawEP(t, goodRaw(map[string]func(http.ResponseWriter, json.RawMessage){
		"tools/list": func(w http.ResponseWriter, id json.RawMessage) {
			n := pages.Add(1)
			tools := make([]any, 1000)
			for i := range tools {
				tools[i] = map[string]any{"name": fmt.Sprintf("tool-%d-%04d", n, i), "description": strings.Repeat("d", 300), "inputSchema": map[string]any{"type": "object"}}
			}
			writeJSON(w, 200, result(id, map[string]any{"tools": tools, "nextCursor": fmt.Sprint(n)}))
		},
	}))
	objs := &objectsFake{m: map[string][]byte{}}
	p := testProber(t, func(o *Options) { o.Catalogs = objs })
	var prints []string
	for range 2 {
		pages.Store(0)
		res := p.Probe(context.Background(), ep, cmd())
		if res.Status != StatusOf(ClassOK) || !res.CatalogTruncated || res.ToolCount == 0 || res.ToolCount > MaxCatalogTools {
			t.Fatalf("result %s %q, truncated=%v, %d tools: want up, truncated, at most %d tools", res.Class, res.Error, res.CatalogTruncated, res.ToolCount, MaxCatalogTools)
		}
		if pages.Load() != 1 {
			t.Fatalf("read %d pages, want 1", pages.Load())
		}
		prints = append(prints, res.CatalogFingerprint)
	}
	if prints[0] != prints[1] {
		t.Fatalf("the same listing cut to two fingerprints: %v", prints)
	}
	var stored Catalog
	for _, doc := range objs.m {
		if len(doc) > MaxCatalogBytes+1024 {
			t.Fatalf("stored catalog is %d bytes, cap %d", len(doc), MaxCatalogBytes)
		}
		if err := json.Unmarshal(doc, &stored); err != nil {
			t.Fatal(err)
		}
	}
	if !stored.Truncated || stored.Fingerprint != prints[0] {
		t.Fatalf("stored catalog truncated=%v fingerprint %s, want truncated, %s", stored.Truncated, stored.Fingerprint, prints[0])
	}
}

// TestOnePageOfCountlessToolsIsCheap: one tools/list page of a megabyte
// listing about 20,000 tiny tools, a new one each probe (so no cached
// conformance outcome applies), is decoded only up to maxListedTools: the
// probe is up with a truncated catalog of MaxCatalogTools, the schema rule
// says the page was not validated, and a probe allocates a few megabytes.
// Every tool was decoded, canonicalized and schema-validated: 136 MB and
// over 300 ms of CPU a probe, 500 times a plain probe's, at a schedule of
// one a second.
func TestOnePageOfCountlessToolsIsCheap(t *testing.T) {
	var page strings.Builder
	page.WriteString(`{"tools":[`)
	for i := 0; page.Len() < 1000000; i++ {
		if i > 0 {
			page.WriteByte(',')
		}
		fmt.Fprintf(&page, `{"name":"t%d","inputSchema":{"type":"object"}}`, i)
	}
	page.WriteString(`],"nonce":%d}`)
	var n atomic.Int64
	ep := rawEP(t, goodRaw(map[string]func(http.ResponseWriter, json.RawMessage){
		"tools/list": func(w http.ResponseWriter, id json.RawMessage) {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":`+page.String()+`}`, id, n.Add(1))
		},
	}))
	ep.Transport = TransportStreamableHTTP
	p := testProber(t, nil)
	prev := &msg.ProbeResult{Status: msg.StatusUp, ProtocolVersion: Version20251125, Transport: TransportStreamableHTTP}
	for i := range 3 {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		res, _ := p.Run(context.Background(), ep, msg.NewProbeCommand(ep.ID, testSlot.Add(time.Duration(i)*time.Second)), prev)
		runtime.ReadMemStats(&after)
		// The first probe compiles the schemas and sends the active
		// checks. The others cost what the server's megabyte costs to read
		// and check as JSON, and maxListedTools tools; not what 20,000 do.
		if allocated := after.TotalAlloc - before.TotalAlloc; i > 0 && allocated > 40<<20 {
			t.Fatalf("a probe allocated %d MB, want under 40 (92 when every tool was decoded)", allocated>>20)
		}
		if res.Status != msg.StatusUp || !res.CatalogTruncated || res.ToolCount != MaxCatalogTools {
			t.Fatalf("result %s %q, truncated=%v, %d tools: want up, truncated, %d tools", res.Class, res.Error, res.CatalogTruncated, res.ToolCount, MaxCatalogTools)
		}
		if rule, _ := res.Conformance.Rule(conformance.RuleToolsListSchema); i > 0 && (rule.Outcome != msg.ConformanceNA || !strings.Contains(rule.Detail, fmt.Sprintf("more than %d tools", maxListedTools))) {
			t.Fatalf("%s: %s %q, want n/a saying the page lists more than %d tools", rule.ID, rule.Outcome, rule.Detail, maxListedTools)
		}
		prev = &res
	}
}

// TestToolCheckPastTheToolsRead: a tool check whose tool is listed after
// the tools a probe decodes is called, not failed as missing.
func TestToolCheckPastTheToolsRead(t *testing.T) {
	tools := make([]any, maxListedTools+10)
	for i := range tools {
		tools[i] = map[string]any{"name": fmt.Sprintf("t%05d", i), "inputSchema": map[string]any{"type": "object"}}
	}
	last := fmt.Sprintf("t%05d", len(tools)-1)
	var called atomic.Bool
	ep := rawEP(t, goodRaw(map[string]func(http.ResponseWriter, json.RawMessage){
		"tools/list": func(w http.ResponseWriter, id json.RawMessage) {
			writeJSON(w, 200, result(id, map[string]any{"tools": tools}))
		},
		"tools/call": func(w http.ResponseWriter, id json.RawMessage) {
			called.Store(true)
			writeJSON(w, 200, result(id, map[string]any{"content": []any{map[string]any{"type": "text", "text": "ok"}}}))
		},
	}))
	ep.ToolCheck = &model.ToolCheck{Name: last}
	res := testProber(t, nil).Probe(context.Background(), ep, cmd())
	if res.Class != ClassOK || !called.Load() {
		t.Fatalf("result %s %q, called %v: want ok after calling %s", res.Class, res.Error, called.Load(), last)
	}
}

// TestDecodeToolsPage: within room the tools and cursor are what
// json.Unmarshal reads; past it the first room tools and over.
func TestDecodeToolsPage(t *testing.T) {
	for _, tc := range []struct {
		in         string
		room       int
		tools      int
		cursor     string
		over, fail bool
	}{
		{in: `{"tools":[{"name":"a"},{"name":"b"}],"nextCursor":"c"}`, room: 5, tools: 2, cursor: "c"},
		{in: `{"nextCursor":"c","tools":[1,2,3]}`, room: 3, tools: 3, cursor: "c"},
		{in: `{"tools":[1,2,3,4],"nextCursor":"c"}`, room: 3, tools: 3, over: true},
		{in: `{"TOOLS":[1],"NextCursor":"x","tools":[2,3]}`, room: 5, tools: 2, cursor: "x"},
		{in: `{"tools":null,"nextCursor":null}`, room: 5},
		{in: `null`, room: 5},
		{in: `{"other":{"tools":[1]},"tools":[]}`, room: 5},
		{in: `{"tools":{}}`, room: 5, fail: true},
		{in: `{"tools":[],"nextCursor":5}`, room: 5, fail: true},
		{in: `[1]`, room: 5, fail: true},
		{in: `"x"`, room: 5, fail: true},
	} {
		pg, err := decodeToolsPage([]byte(tc.in), tc.room)
		if (err != nil) != tc.fail || len(pg.tools) != tc.tools || pg.nextCursor != tc.cursor || pg.over != tc.over {
			t.Errorf("%s: %d tools, cursor %q, over %v, err %v; want %d, %q, %v, fail %v", tc.in, len(pg.tools), pg.nextCursor, pg.over, err, tc.tools, tc.cursor, tc.over, tc.fail)
		}
	}
}

func TestJSONDepth(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int
	}{
		{`1`, 0},
		{`{}`, 1},
		{`{"a":[1,{"b":2}]}`, 3},
		{`{"a":"[[[[{{{{"}`, 1},
		{`{"a":"\"[["}`, 1},
		{`{"a":"\\"}`, 1},
		{strings.Repeat("[", 1000), 1000},
	} {
		if got := jsonDepth([]byte(tc.in)); got != tc.want {
			t.Errorf("jsonDepth(%.40s) = %d, want %d", tc.in, got, tc.want)
		}
	}
}
