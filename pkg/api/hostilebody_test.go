package api_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	apiv1 "github.com/mcpmon/mcpmon/pkg/api/v1"
)

// wideLabels is an endpoint whose labels object has n members: about
// 1 MiB at 80,000, just under the body size cap.
func wideLabels(n int) string {
	var b strings.Builder
	b.WriteString(`{"name":"x","url":"https://a.example.com/mcp","labels":{`)
	for i := range n {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `"k%d":"v"`, i)
	}
	b.WriteString("}}")
	return b.String()
}

// refusedAt asserts a 400 problem+json whose one field problem is at
// pointer and says detail.
func refusedAt(t *testing.T, resp *http.Response, b []byte, pointer, detail string) {
	t.Helper()
	var p apiv1.Problem
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(resp.Header.Get("Content-Type"), "problem+json") ||
		json.Unmarshal(b, &p) != nil || len(p.Errors) != 1 {
		t.Fatalf("%d %q %.300s, want 400 problem+json with one field problem", resp.StatusCode, resp.Header.Get("Content-Type"), b)
	}
	if fe := p.Errors[0]; fe.Pointer != pointer || !strings.Contains(fe.Detail, detail) {
		t.Fatalf("problem %+v, want pointer %q and a detail with %q", fe, pointer, detail)
	}
}

// TestHostileBodiesAreRefusedAtTheirField: the bodies a hostile tenant
// sent are each refused with a 400 naming the field, on every route that
// takes a body of that shape, and nothing is stored: a wide object
// before anything is decoded, and text that is not valid UTF-8 (which
// the decoder would have stored with U+FFFD in its place).
func TestHostileBodiesAreRefusedAtTheirField(t *testing.T) {
	h := newHarness(t)
	ep := h.create(`{"name":"kept","url":"https://a.example.com/mcp","labels":{"team":"a"}}`)
	for _, tc := range []struct {
		name, method, path, body, pointer, detail string
	}{
		{"80,000 labels", "POST", "/v1/endpoints", wideLabels(80000), "#/labels", "at most 1024 members"},
		{"80,000 labels in a patch", "PATCH", "/v1/endpoints/" + ep.ID, wideLabels(80000), "#/labels", "at most 1024 members"},
		{"2,000 sinks", "POST", "/v1/endpoints", `{"name":"x","url":"https://a.example.com/mcp","sinks":[` + strings.Repeat(`{},`, 2000) + `{}]}`, "#/sinks", "at most 1024 elements"},
		{"a wide maintenance selector", "POST", "/v1/maintenance", `{"start":"2027-01-01T00:00:00Z","end":"2027-01-01T01:00:00Z","selector":` + strings.TrimPrefix(wideLabels(5000), `{"name":"x","url":"https://a.example.com/mcp","labels":`), "#/selector", "at most 1024 members"},
		{"invalid UTF-8 in a name", "POST", "/v1/endpoints", "{\"name\":\"n\xff\",\"url\":\"https://a.example.com/mcp\"}", "#/name", "valid UTF-8"},
		{"invalid UTF-8 in the URL's path", "POST", "/v1/endpoints", "{\"name\":\"u3\",\"url\":\"https://a.example.com/m\x80cp\"}", "#/url", "valid UTF-8"},
		{"invalid UTF-8 in a label value", "POST", "/v1/endpoints", "{\"name\":\"u2\",\"url\":\"https://a.example.com/mcp\",\"labels\":{\"team\":\"a\x80b\"}}", "#/labels/team", "valid UTF-8"},
		{"invalid UTF-8 in label names", "POST", "/v1/endpoints", "{\"name\":\"u1\",\"url\":\"https://a.example.com/mcp\",\"labels\":{\"k\x80\":\"a\",\"k\xfe\":\"b\"}}", "#/labels", "member names must be valid UTF-8"},
		{"invalid UTF-8 in a header value", "POST", "/v1/endpoints", "{\"name\":\"hd\",\"url\":\"https://a.example.com/mcp\",\"headers\":{\"X-A\":\"v\x80\"}}", "#/headers/X-A", "valid UTF-8"},
		{"an unpaired surrogate in a name", "POST", "/v1/endpoints", `{"name":"x\ud800","url":"https://a.example.com/mcp"}`, "#/name", "valid UTF-8"},
		{"invalid UTF-8 in a patch", "PATCH", "/v1/endpoints/" + ep.ID, "{\"labels\":{\"team\":\"b\xff\"}}", "#/labels/team", "valid UTF-8"},
		{"invalid UTF-8 in a status page title", "POST", "/v1/status-pages", "{\"slug\":\"utf-page\",\"title\":\"T\x80\xfe\"}", "#/title", "valid UTF-8"},
		{"invalid UTF-8 in a maintenance name", "POST", "/v1/maintenance", "{\"name\":\"m\x80\",\"start\":\"2027-01-01T00:00:00Z\",\"end\":\"2027-01-01T01:00:00Z\",\"selector\":{\"team\":\"a\"}}", "#/name", "valid UTF-8"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, b := h.do(tc.method, tc.path, "", tc.body)
			refusedAt(t, resp, b, tc.pointer, tc.detail)
		})
	}
	var list apiv1.EndpointList
	h.mustJSON("GET", "/v1/endpoints", "", http.StatusOK, &list)
	if len(list.Endpoints) != 1 || list.Endpoints[0].Name != "kept" || len(list.Endpoints[0].Labels) != 1 || list.Endpoints[0].Labels["team"] != "a" {
		t.Fatalf("endpoints after the refusals: %+v, want only the one created, unchanged", list.Endpoints)
	}
	var pages, windows struct {
		Pages       []json.RawMessage `json:"items"`
		Maintenance []json.RawMessage `json:"maintenance"`
	}
	h.mustJSON("GET", "/v1/status-pages", "", http.StatusOK, &pages)
	h.mustJSON("GET", "/v1/maintenance", "", http.StatusOK, &windows)
	if len(pages.Pages) != 0 || len(windows.Maintenance) != 0 {
		t.Fatalf("stored %d status pages and %d maintenance windows from refused bodies", len(pages.Pages), len(windows.Maintenance))
	}
}

// TestMemberNamesAreCaseSensitive: a member name that differs from a
// field's only in case is an unknown field at its pointer, on a create,
// inside a nested object, and in a merge patch (which answered 200 and
// changed nothing); the endpoint is not changed.
func TestMemberNamesAreCaseSensitive(t *testing.T) {
	h := newHarness(t)
	ep := h.create(`{"name":"kept","url":"https://a.example.com/mcp"}`)
	for _, tc := range []struct {
		name, method, path, body, pointer string
	}{
		{"a second name in another case", "POST", "/v1/endpoints", `{"name":"casedup","NAME":"other","url":"https://a.example.com/mcp"}`, "#/NAME"},
		{"the only name in another case", "POST", "/v1/endpoints", `{"Name":"x","url":"https://a.example.com/mcp"}`, "#/Name"},
		{"a nested field", "POST", "/v1/endpoints", `{"name":"x","url":"https://a.example.com/mcp","rules":{"OpenAfter":3}}`, "#/rules/OpenAfter"},
		{"a Unicode case fold", "POST", "/v1/endpoints", `{"name":"x","url":"https://a.example.com/mcp","\u017fchedule":"@every 1m"}`, "#/\u017fchedule"},
		{"a patch", "PATCH", "/v1/endpoints/" + ep.ID, `{"URL":"https://b.example.com/mcp"}`, "#/URL"},
		{"a maintenance window", "POST", "/v1/maintenance", `{"Selector":{"team":"a"},"start":"2027-01-01T00:00:00Z","end":"2027-01-01T01:00:00Z"}`, "#/Selector"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, b := h.do(tc.method, tc.path, "", tc.body)
			refusedAt(t, resp, b, tc.pointer, "unknown field")
		})
	}
	var got apiv1.EndpointView
	h.mustJSON("GET", "/v1/endpoints/"+ep.ID, "", http.StatusOK, &got)
	if got.URL != "https://a.example.com/mcp" || got.Version != ep.Version {
		t.Fatalf("after the refused patch: url %s version %d, want %s %d", got.URL, got.Version, ep.URL, ep.Version)
	}
	var list apiv1.EndpointList
	h.mustJSON("GET", "/v1/endpoints", "", http.StatusOK, &list)
	if len(list.Endpoints) != 1 {
		t.Fatalf("%d endpoints, want only the one created", len(list.Endpoints))
	}
	// Labels and headers are maps: any name is theirs.
	h.create(`{"name":"maps","url":"https://a.example.com/mcp","labels":{"Team":"a","team":"b"},"headers":{"X-Key":"v"}}`)
}
