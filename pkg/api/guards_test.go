package api_test

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/mcpmon/mcpmon/pkg/api"
	apiv1 "github.com/mcpmon/mcpmon/pkg/api/v1"
	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/netguard"
)

// TestStateChangesRequireJSON: a POST, PUT or PATCH without a JSON content
// type is refused before any handler runs, even with an empty body, so a
// cross-site form or no-cors fetch (text/plain, form-urlencoded) cannot
// acknowledge an incident or change anything else. Routes that do not exist
// still answer 404.
func TestStateChangesRequireJSON(t *testing.T) {
	h := newHarness(t)
	seedIncident(t, h, "inc", "ep-a", model.IncidentOpen)
	for _, tc := range []struct {
		name, method, path, contentType, body string
		want                                  int
	}{
		{"empty text/plain ack", "POST", "/v1/incidents/inc/ack", "text/plain", "", 415},
		{"empty ack without a content type", "POST", "/v1/incidents/inc/ack", "-", "", 415},
		{"form-encoded ack", "POST", "/v1/incidents/inc/ack", "application/x-www-form-urlencoded", "by=mallory", 415},
		{"multipart create", "POST", "/v1/endpoints", "multipart/form-data; boundary=x", "--x--", 415},
		{"text/plain maintenance put", "PUT", "/v1/maintenance/nope", "text/plain", "", 415},
		{"unknown route stays 404", "POST", "/v1/nothing", "text/plain", "", 404},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := snapshot(t, h)
			resp, b := h.do(tc.method, tc.path, tc.contentType, tc.body)
			if resp.StatusCode != tc.want || resp.Header.Get("Content-Type") != apiv1.ProblemContentType {
				t.Fatalf("%s %s (%s) = %d %s %s, want %d problem+json", tc.method, tc.path, tc.contentType, resp.StatusCode, resp.Header.Get("Content-Type"), b, tc.want)
			}
			if after := snapshot(t, h); after != before {
				t.Fatalf("a refused request changed the store:\nbefore %s\nafter  %s", before, after)
			}
		})
	}
	// The same empty acknowledgement with a JSON content type is accepted.
	var got apiv1.IncidentView
	h.mustJSON("POST", "/v1/incidents/inc/ack", "", http.StatusOK, &got)
	if got.State != string(model.IncidentAcknowledged) {
		t.Fatalf("JSON ack: %+v", got)
	}
}

// TestRequestIDAdoptedOnlyWhenShortAndPrintable: a client's X-Request-Id is
// echoed and logged when it is short printable ASCII; one with spaces,
// non-ASCII bytes or over 64 bytes is replaced and never logged. Control
// characters (ESC, DEL) never get that far: net/http answers 400 itself.
func TestRequestIDAdoptedOnlyWhenShortAndPrintable(t *testing.T) {
	h := newHarness(t)
	for _, tc := range []struct {
		id            string
		adopt         bool
		serverRefuses bool
	}{
		{"req-42.a_b:c/d", true, false},
		{strings.Repeat("a", api.MaxRequestIDLen), true, false},
		{strings.Repeat("a", api.MaxRequestIDLen+1), false, false},
		{"two words", false, false},
		{"caf\xc3\xa9", false, false},
		{"evil\x1b[31mred", false, true},
		{"del\x7f", false, true},
	} {
		// Raw bytes on the wire: net/http's client refuses to send some
		// of these values, an attacker's client does not.
		resp := rawRequest(t, h.srv.Listener.Addr().String(), "GET /v1/endpoints HTTP/1.1\r\nHost: x\r\nX-Request-Id: "+tc.id+"\r\nConnection: close\r\n\r\n")
		got := resp.Header.Get("X-Request-Id")
		switch {
		case tc.serverRefuses:
			if resp.StatusCode != http.StatusBadRequest || strings.Contains(h.logs.String(), tc.id) {
				t.Errorf("X-Request-Id %q: %d, want net/http's 400 and nothing logged", tc.id, resp.StatusCode)
			}
		case tc.adopt && got != tc.id:
			t.Errorf("X-Request-Id %q answered as %q, want it adopted", tc.id, got)
		case !tc.adopt && (got == tc.id || got == ""):
			t.Errorf("X-Request-Id %q answered as %q, want a fresh ID", tc.id, got)
		case !tc.adopt && strings.Contains(h.logs.String(), tc.id):
			t.Errorf("refused X-Request-Id %q reached the log", tc.id)
		case !strings.Contains(h.logs.String(), `"request_id":"`+got+`"`):
			t.Errorf("request ID %q not in the request log", got)
		}
	}
}

// TestHostAllowList: with AllowedHosts the API answers only those Host
// values (421 problem otherwise), whatever the port when the entry has none.
func TestHostAllowList(t *testing.T) {
	h := newHarness(t, func(o *api.Options) { o.AllowedHosts = []string{"mcpmon.example.com", "[::1]:8080"} })
	for _, tc := range []struct {
		host string
		want int
	}{
		{"mcpmon.example.com", 200},
		{"mcpmon.example.com:443", 200},
		{"MCPMON.example.com.", 200},
		{"[::1]:8080", 200},
		{"[::1]:9090", 421},
		{"rebind.attacker.example", 421},
		{"127.0.0.1", 421},
	} {
		req, err := http.NewRequestWithContext(t.Context(), "GET", h.srv.URL+"/v1/endpoints", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Host = tc.host
		resp, err := h.srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want || tc.want == 421 && resp.Header.Get("Content-Type") != apiv1.ProblemContentType {
			t.Errorf("Host %q = %d %s, want %d", tc.host, resp.StatusCode, resp.Header.Get("Content-Type"), tc.want)
		}
	}
}

// TestValidationGaps: inputs an attacker sends from outside. Each is a 400
// problem naming the field, and the store does not change.
func TestValidationGaps(t *testing.T) {
	h := newHarness(t, func(o *api.Options) { o.TargetValidator = netguard.Guard{}.CheckTarget })
	ep := h.create(`{"name":"existing","url":"https://a.example/mcp"}`)
	epPath := "/v1/endpoints/" + ep.ID
	seedIncident(t, h, "inc-open", ep.ID, model.IncidentOpen)
	valid := func(extra string) string { return `{"name":"n","url":"https://b.example/mcp"` + extra + `}` }
	url := func(u string) string { return `{"name":"n","url":"` + u + `"}` }
	name := func(n string) string { return `{"name":"` + n + `","url":"https://b.example/mcp"}` }
	mw := func(extra string) string { return `{"endpointIds":["a"],"cron":"@daily","duration":"1h"` + extra + `}` }

	for _, tc := range []struct {
		name, method, path, body, pointer string
	}{
		// Header values: no control character but tab.
		{"VT in header value", "POST", "/v1/endpoints", valid(`,"headers":{"X-A":"a\u000bb"}`), "#/headers/X-A"},
		{"DEL in header value", "POST", "/v1/endpoints", valid(`,"headers":{"X-A":"a\u007fb"}`), "#/headers/X-A"},
		{"ESC in header value", "POST", "/v1/endpoints", valid(`,"headers":{"X-A":"\u001b[2J"}`), "#/headers/X-A"},
		{"NUL in header value", "POST", "/v1/endpoints", valid(`,"headers":{"X-A":"a\u0000"}`), "#/headers/X-A"},
		// Ports.
		{"port 0", "POST", "/v1/endpoints", url("https://b.example:0/mcp"), "#/url"},
		{"port 65536", "POST", "/v1/endpoints", url("https://b.example:65536/mcp"), "#/url"},
		{"port 99999", "POST", "/v1/endpoints", url("http://b.example:99999/mcp"), "#/url"},
		// Names.
		{"bidi override in name", "POST", "/v1/endpoints", name(`docs\u202etxt.exe`), "#/name"},
		{"bidi isolate in name", "POST", "/v1/endpoints", name(`a\u2067b`), "#/name"},
		{"zero-width-only name", "POST", "/v1/endpoints", name(`\u200b\u200c\u200d\ufeff`), "#/name"},
		{"ESC in name", "POST", "/v1/endpoints", name(`a\u001b[31m`), "#/name"},
		{"DEL in name", "POST", "/v1/endpoints", name(`a\u007f`), "#/name"},
		{"patch bidi name", "PATCH", epPath, `{"name":"\u202eevil"}`, "#/name"},
		{"control char in label value", "POST", "/v1/endpoints", valid(`,"labels":{"team":"a\nb"}`), "#/labels/team"},
		// Acknowledgements.
		{"NUL in ack by", "POST", "/v1/incidents/inc-open/ack", `{"by":"al\u0000ice"}`, "#/by"},
		{"CR in ack by", "POST", "/v1/incidents/inc-open/ack", `{"by":"ali\rce"}`, "#/by"},
		{"LF in ack reason", "POST", "/v1/incidents/inc-open/ack", `{"reason":"ok\nacknowledged via API by admin"}`, "#/reason"},
		{"bidi in ack by", "POST", "/v1/incidents/inc-open/ack", `{"by":"\u202ealice"}`, "#/by"},
		// Maintenance names.
		{"NUL in maintenance name", "POST", "/v1/maintenance", mw(`,"name":"a\u0000"`), "#/name"},
		{"CRLF in maintenance name", "POST", "/v1/maintenance", mw(`,"name":"a\r\nb"`), "#/name"},
		{"zero-width maintenance name", "POST", "/v1/maintenance", mw(`,"name":"\u200b"`), "#/name"},
		// Time zones: UTC on every replica.
		{"CRON_TZ=Local schedule", "POST", "/v1/endpoints", valid(`,"schedule":"CRON_TZ=Local 0 9 * * *"`), "#/schedule"},
		{"TZ=Local schedule", "POST", "/v1/endpoints", valid(`,"schedule":"TZ=Local */5 * * * *"`), "#/schedule"},
		{"CRON_TZ=Local maintenance", "POST", "/v1/maintenance", `{"endpointIds":["a"],"cron":"CRON_TZ=Local 0 2 * * *","duration":"1h"}`, "#/cron"},
		// Targets in non-canonical IPv4 forms and IPv4-compatible IPv6.
		{"decimal IPv4", "POST", "/v1/endpoints", url("http://2130706433/mcp"), "#/url"},
		{"hex IPv4", "POST", "/v1/endpoints", url("http://0x7f000001/mcp"), "#/url"},
		{"short IPv4", "POST", "/v1/endpoints", url("http://127.1/mcp"), "#/url"},
		{"octal IPv4", "POST", "/v1/endpoints", url("http://0177.0.0.1/mcp"), "#/url"},
		{"IPv4-compatible IPv6", "POST", "/v1/endpoints", url("http://[::127.0.0.1]/mcp"), "#/url"},
		{"patch to short IPv4", "PATCH", epPath, `{"url":"http://127.1/mcp"}`, "#/url"},
		// Duplicate keys, at any depth.
		{"duplicate url", "POST", "/v1/endpoints", `{"name":"n","url":"https://b.example/mcp","url":"http://169.254.169.254/"}`, "#/url"},
		{"duplicate header", "POST", "/v1/endpoints", valid(`,"headers":{"X-A":"1","X-A":"2"}`), "#/headers/X-A"},
		{"duplicate in patch", "PATCH", epPath, `{"name":"a","name":"b"}`, "#/name"},
		{"duplicate in ack", "POST", "/v1/incidents/inc-open/ack", `{"by":"a","by":"b"}`, "#/by"},
		{"duplicate in maintenance", "POST", "/v1/maintenance", `{"endpointIds":["a"],"selector":{"x":"1","x":"2"},"cron":"@daily","duration":"1h"}`, "#/selector/x"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := snapshot(t, h)
			resp, b := h.do(tc.method, tc.path, "", tc.body)
			if resp.StatusCode != http.StatusBadRequest || resp.Header.Get("Content-Type") != apiv1.ProblemContentType {
				t.Fatalf("%s %s = %d %s, want a 400 problem", tc.method, tc.path, resp.StatusCode, b)
			}
			var p apiv1.Problem
			if err := json.Unmarshal(b, &p); err != nil {
				t.Fatal(err)
			}
			found := false
			for _, fe := range p.Errors {
				found = found || fe.Pointer == tc.pointer
			}
			if !found {
				t.Errorf("errors %+v lack pointer %q", p.Errors, tc.pointer)
			}
			if after := snapshot(t, h); after != before {
				t.Errorf("a rejected request changed the store:\nbefore %s\nafter  %s", before, after)
			}
		})
	}
}

// TestValidationErrorsInStableOrder: a body with many problems lists them
// in the same order every time (the order of the fields), so clients and
// tests can compare answers.
func TestValidationErrorsInStableOrder(t *testing.T) {
	h := newHarness(t)
	body := `{"name":"","url":"ftp://x","transport":"pigeon","timeout":"soon",
		"headers":{"B":"\u0001","A":"\u0001"},
		"rules":{"openAfter":-1,"openWindow":-1,"resolveAfter":-1,"regionQuorum":-1}}`
	want := []string{"#/name", "#/url", "#/transport", "#/timeout", "#/headers/A", "#/headers/B",
		"#/rules/openAfter", "#/rules/openWindow", "#/rules/resolveAfter", "#/rules/regionQuorum"}
	for range 20 {
		resp, b := h.do("POST", "/v1/endpoints", "", body)
		var p apiv1.Problem
		if err := json.Unmarshal(b, &p); err != nil || resp.StatusCode != 400 {
			t.Fatalf("%d %s: %v", resp.StatusCode, b, err)
		}
		var got []string
		for _, fe := range p.Errors {
			got = append(got, fe.Pointer)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("pointers %v, want %v", got, want)
		}
	}
}

// rawRequest writes raw to the server at addr and reads one response.
func rawRequest(t *testing.T, addr, raw string) *http.Response {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, raw); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp
}
