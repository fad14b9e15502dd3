package api

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http/httptest"
	"net/url"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"

	apiv1 "github.com/mcpmon/mcpmon/pkg/api/v1"
)

// depthOf is the deepest nesting of a valid JSON document, by the
// decoder's tokens: the reference checkJSON's byte count is held to.
func depthOf(body []byte) int {
	dec := json.NewDecoder(bytes.NewReader(body))
	depth, deepest := 0, 0
	for {
		tok, err := dec.Token()
		if err != nil {
			return deepest
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			depth++
			deepest = max(deepest, depth)
		case json.Delim('}'), json.Delim(']'):
			depth--
		}
	}
}

// refCheck is the reference checkJSON is held to on valid JSON: a walk
// of the tokens of a strict decoder (jsontext refuses invalid UTF-8,
// unpaired surrogates and duplicate names itself), counting depth,
// members per container and values against caps. It reports whether the
// body is within them all.
func refCheck(body []byte, caps bodyCaps) bool {
	dec := jsontext.NewDecoder(bytes.NewReader(body))
	type frame struct {
		obj bool
		n   int
	}
	var stack []frame
	values := 0
	for {
		tok, err := dec.ReadToken()
		if err == io.EOF {
			return true
		}
		if err != nil {
			return false
		}
		k := tok.Kind()
		if k == '}' || k == ']' {
			stack = stack[:len(stack)-1]
			continue
		}
		if len(stack) > 0 {
			top := &stack[len(stack)-1]
			if _, n := dec.StackIndex(dec.StackDepth()); top.obj && n%2 == 1 {
				// a name: the member is counted, its value is not yet
				if top.n++; top.n > caps.members {
					return false
				}
				continue
			}
			if !top.obj {
				if top.n++; top.n > caps.members {
					return false
				}
			}
		}
		if values++; values > caps.values {
			return false
		}
		if k == '{' || k == '[' {
			if stack = append(stack, frame{obj: k == '{'}); len(stack) > caps.depth {
				return false
			}
		}
	}
}

// fuzzCaps are small, so the fuzzer reaches every cap with short bodies.
var fuzzCaps = bodyCaps{depth: 8, members: 6, values: 24}

// FuzzCheckJSON holds the body door to its contract on any bytes: it
// never panics; on valid JSON it refuses exactly the documents the
// reference walk refuses (too deep, too many members or values, text
// that is not valid UTF-8, a duplicate name), a duplicate at the pointer
// the decoder-token walk finds; its allocation is bounded by the body's
// size; and what it accepts decodes without a panic as an endpoint and
// as a merge patch. Invalid JSON it may refuse or pass on: the decoder
// refuses it either way.
func FuzzCheckJSON(f *testing.F) {
	for _, s := range []string{
		`{"name":"n","url":"https://a.example/mcp"}`,
		`{"url":"https://ok","url":"http://internal"}`,
		`{"sinks":[{"type":"webhook","cfg":[[{"k":1,"k":2}]]}]}`,
		`{"\u0075rl":1,"url":2}`,
		"{\"\xff\":1,\"\xfe\":2}",
		`{"a/b":{"~":1,"~":2}}`,
		`{"a":"[[[[\"","b":{}}`,
		nested(64, "1"),
		nested(65, "1"),
		`{"sinks":` + nested(9990, "") + `}`,
		strings.Repeat("[", 10000),
		`[1,2,{"a":[{"b":null}]}]`,
		`{"a":}`,
		``,
		// The hostile tenant's bodies: a wide object, a wide array,
		// invalid UTF-8 and unpaired surrogates where the decoder put
		// U+FFFD, and names that differ from a field's only in case.
		string(wideLabels(2000)),
		`{"name":"x","url":"https://a.example.com/mcp","sinks":[` + strings.Repeat(`[],`, 2000) + `[]]}`,
		`{"name":"x","url":"https://a.example.com/mcp","toolCheck":{"name":"t","arguments":{"a":[` + strings.Repeat(`0,`, 2000) + `0]}}}`,
		"{\"name\":\"u1\",\"url\":\"https://a.example.com/mcp\",\"labels\":{\"k\x80\":\"a\",\"k\xfe\":\"b\"}}",
		"{\"name\":\"u2\",\"url\":\"https://a.example.com/mcp\",\"labels\":{\"team\":\"a\x80b\"}}",
		"{\"name\":\"u3\",\"url\":\"https://a.example.com/m\x80cp\"}",
		"{\"slug\":\"utf-page\",\"title\":\"T\x80\xfe\"}",
		"{\"name\":\"m\x80\",\"start\":\"2027-01-01T00:00:00Z\",\"end\":\"2027-01-01T01:00:00Z\",\"selector\":{\"team\":\"a\"}}",
		"{\"name\":\"hd\",\"url\":\"https://a.example.com/mcp\",\"headers\":{\"X-A\":\"v\x80\"}}",
		`{"name":"x\ud800","url":"https://a.example.com/mcp"}`,
		`{"name":"\udc00","url":"https://a.example.com/mcp"}`,
		`{"name":"casedup","NAME":"other","url":"https://a.example.com/mcp"}`,
		`{"URL":"https://b.example.com/mcp"}`,
		`{"rules":{"OpenAfter":3}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var m0, m1 runtime.MemStats
		runtime.ReadMemStats(&m0)
		checked, p := checkJSON(body, bodyLimits)
		runtime.ReadMemStats(&m1)
		if a := m1.TotalAlloc - m0.TotalAlloc; a > uint64(64*len(body)+64<<10) {
			t.Fatalf("checkJSON allocated %d bytes for a %d-byte body", a, len(body))
		}
		if p != nil && (len(p.Errors) != 1 || !strings.HasPrefix(p.Errors[0].Pointer, "#")) {
			t.Fatalf("problem %+v, want one field problem", p)
		}
		if !json.Valid(body) {
			return
		}
		for _, caps := range []bodyCaps{bodyLimits, fuzzCaps} {
			_, p := checkJSON(body, caps)
			if want := refCheck(body, caps); (p == nil) != want {
				t.Fatalf("caps %+v: problem %+v, the reference walk accepts = %v", caps, p, want)
			}
		}
		if p != nil {
			if d := oldDuplicateKey(body); d != "" && utf8.Valid(body) && strings.HasPrefix(p.Errors[0].Detail, "duplicate") && p.Errors[0].Pointer != d {
				t.Fatalf("duplicate at %s, the decoder walk finds it at %s", p.Errors[0].Pointer, d)
			}
			return
		}
		var in apiv1.EndpointInput
		_ = decodeStrict(checked, &in)
		_, _ = decodePatch(checked)
	})
}

// formatSelector spells a parsed selector in the syntax parseSelector
// reads, for the round trip.
func formatSelector(s selector) string {
	terms := make([]string, 0, len(s))
	for _, r := range s {
		switch {
		case len(r.values) == 1 && r.not:
			terms = append(terms, r.key+"!="+r.values[0])
		case len(r.values) == 1:
			terms = append(terms, r.key+"="+r.values[0])
		case r.not:
			terms = append(terms, r.key+" notin ("+strings.Join(r.values, ",")+")")
		default:
			terms = append(terms, r.key+" in ("+strings.Join(r.values, ",")+")")
		}
	}
	return strings.Join(terms, ",")
}

// FuzzParseSelector: a selector is refused, or it is within the caps and
// survives a round trip (formatted and parsed again it is the same
// selector); never a panic.
func FuzzParseSelector(f *testing.F) {
	for _, s := range []string{
		"team=search", "team==search", "env!=dev", "tier in (a,b)", "tier notin (a, b ,c)",
		"team=search,env!=dev,tier in (a,b)", "a=", "=b", "a in ()", "a in ((b))", "a in (b", "a)=b",
		"k=" + strings.Repeat("v", 256), strings.Repeat("k=v,", 1100) + "k=v",
		"k in (" + strings.Repeat("v,", 40) + "v)", strings.Repeat("a=b,", 40),
		"k=\u202e", "k=a\x00b", "k=\xff",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		sel, p := parseSelector(httptest.NewRequest("GET", "/v1/endpoints?selector="+url.QueryEscape(raw), nil))
		if p != nil {
			if p.Errors[0].Pointer != "?selector" {
				t.Fatalf("problem at %q, want ?selector", p.Errors[0].Pointer)
			}
			return
		}
		if len(strings.TrimSpace(raw)) > maxSelectorLen || len(sel) > maxSelectorTerms {
			t.Fatalf("accepted %d bytes in %d terms", len(raw), len(sel))
		}
		for _, r := range sel {
			if len(r.values) > maxSelectorInValues {
				t.Fatalf("accepted %d values in one term", len(r.values))
			}
		}
		if sel == nil {
			return
		}
		again, p := parseSelector(httptest.NewRequest("GET", "/v1/endpoints?selector="+url.QueryEscape(formatSelector(sel)), nil))
		if p != nil {
			t.Fatalf("%q parsed as %+v, whose spelling %q is refused: %+v", raw, sel, formatSelector(sel), p.Errors)
		}
		if !slices.EqualFunc(sel, again, func(a, b requirement) bool {
			return a.key == b.key && a.not == b.not && slices.Equal(a.values, b.values)
		}) {
			t.Fatalf("%q parsed as %+v, its spelling %q as %+v", raw, sel, formatSelector(sel), again)
		}
	})
}

// FuzzCursor: whatever ?cursor= holds, pageParams never panics, refuses
// with a problem at ?cursor, and what it accepts is a cursor of the list
// asked for whose own encoding decodes to the same cursor.
func FuzzCursor(f *testing.F) {
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, c := range []cursor{
		{Kind: cursorEndpoints, ID: "k7m2q9x4c1v8b3n6"},
		{Kind: cursorIncidents, ID: "inc-1", At: at},
		{Kind: cursorVerdicts, At: at},
		{Kind: cursorKeys, ID: "key.1"},
	} {
		f.Add(encodeCursor(c), c.Kind)
	}
	for _, raw := range []string{
		`{"v":1,"k":"endpoints","id":"a","k":"keys"}`,
		`{"v":1,"k":"endpoints","id":"../../etc"}`,
		`{"v":2,"k":"endpoints","id":"a"}`,
		`{"v":1,"k":"endpoints","id":"a","extra":1}`,
		`{"v":1,"k":"endpoints","id":"a"} {}`,
		`{"v":1,"k":"endpoints","id":` + nested(100, `"a"`) + `}`,
		`{"v":1,"k":"audit","id":"a","at":"2263-01-01T00:00:00Z"}`,
		`{"v":1,"k":"verdicts","at":"1600-01-01T00:00:00Z"}`,
	} {
		f.Add(base64.RawURLEncoding.EncodeToString([]byte(raw)), cursorEndpoints)
	}
	f.Add("!!!not base64", cursorEndpoints)
	f.Add(strings.Repeat("A", 600), cursorEndpoints)
	kinds := []string{cursorEndpoints, cursorIncidents, cursorVerdicts, cursorMaintenance, cursorKeys, cursorAudit}
	f.Fuzz(func(t *testing.T, raw, kind string) {
		if !slices.Contains(kinds, kind) {
			kind = cursorEndpoints
		}
		_, got, p := pageParams(httptest.NewRequest("GET", "/v1/x?cursor="+url.QueryEscape(raw), nil), kind)
		if p != nil {
			if p.Errors[0].Pointer != "?cursor" {
				t.Fatalf("problem at %q, want ?cursor", p.Errors[0].Pointer)
			}
			return
		}
		if got == nil {
			if raw != "" {
				t.Fatalf("cursor %q neither refused nor read", raw)
			}
			return
		}
		if got.Kind != kind || got.V != 1 || len(raw) > maxCursorLen || !got.At.IsZero() && timeInRange(got.At) != "" {
			t.Fatalf("accepted %q as %+v for the %s list", raw, got, kind)
		}
		_, again, p := pageParams(httptest.NewRequest("GET", "/v1/x?cursor="+url.QueryEscape(encodeCursor(*got)), nil), kind)
		if p != nil || again == nil || again.ID != got.ID || !again.At.Equal(got.At) {
			t.Fatalf("%+v re-encoded reads as %+v (%+v)", got, again, p)
		}
	})
}
