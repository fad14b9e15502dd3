package status_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpmon/mcpmon/pkg/clock"
	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/msg"
	"github.com/mcpmon/mcpmon/pkg/status"
	"github.com/mcpmon/mcpmon/pkg/store"
)

// fakeStore is a hand-written Reader that counts its reads.
type fakeStore struct {
	eps       []model.Endpoint
	verdicts  map[string]msg.Verdict
	results   map[string]msg.ProbeResult
	incidents map[string][]model.Incident
	rollups   map[string][]model.Rollup
	// objects are the documents by kind, then ID.
	objects map[string]map[string][]byte
	reads   atomic.Int64
}

func (f *fakeStore) ListObjects(_ context.Context, kind string) (map[string][]byte, error) {
	f.reads.Add(1)
	return f.objects[kind], nil
}

func (f *fakeStore) ListEndpoints(context.Context) ([]model.Endpoint, error) {
	f.reads.Add(1)
	return f.eps, nil
}

func (f *fakeStore) LastVerdict(_ context.Context, id string) (msg.Verdict, error) {
	f.reads.Add(1)
	v, ok := f.verdicts[id]
	if !ok {
		return v, model.ErrNotFound
	}
	return v, nil
}

func (f *fakeStore) LatestResult(_ context.Context, id string) (msg.ProbeResult, error) {
	f.reads.Add(1)
	r, ok := f.results[id]
	if !ok {
		return r, model.ErrNotFound
	}
	return r, nil
}

func (f *fakeStore) ListIncidents(_ context.Context, fl store.IncidentFilter) ([]model.Incident, error) {
	f.reads.Add(1)
	return f.incidents[fl.EndpointID], nil
}

func (f *fakeStore) Rollups(_ context.Context, id string, _ time.Duration, _, _ time.Time) ([]model.Rollup, error) {
	f.reads.Add(1)
	return f.rollups[id], nil
}

const ep0 = internalID

var now = time.Date(2026, 5, 20, 12, 0, 0, 0, time.UTC)

// Secrets the private side holds and the public side must never show.
const (
	secretHeader = "Bearer sk-live-HEADERSECRET123"
	secretToken  = "QUERYTOKEN456"
	secretError  = "upstream said: password=ERRSECRET789 at 10.1.2.3"
	internalID   = "ep0internal0id0x"
	privateHost  = "mcp-internal.corp.example"
	secretReason = "REASONSECRET000"
	secretRegion = "10.9.8.7"
)

func fixture() *fakeStore {
	day := now.Truncate(model.Daily)
	opened := now.Add(-26 * time.Hour)
	resolved := opened.Add(42 * time.Minute)
	sk := model.NewSketch()
	_ = sk.Add(0.120)
	_ = sk.Add(0.300)
	return &fakeStore{
		eps: []model.Endpoint{
			{ID: internalID, Tenant: "acme-private-tenant", Name: "Acme MCP", URL: "https://" + privateHost + "/mcp?token=" + secretToken,
				Headers: map[string]string{"Authorization": secretHeader}, Public: true, Slug: "acme-mcp", Version: 3},
			{ID: "hidden1", Name: "Hidden", URL: "https://hidden.example/mcp", Slug: "hidden-one"},
		},
		verdicts: map[string]msg.Verdict{internalID: {EndpointID: internalID, Window: now.Add(-time.Minute), WindowSecs: 60,
			State: msg.StateDown, Class: "http_5xx", Reason: secretReason + " " + secretError, FailingRegions: []string{"eu-west", "us-east"}}},
		results: map[string]msg.ProbeResult{internalID: {EndpointID: internalID, ProbeRunID: "run-secret-id", Region: "ap-south",
			Status: msg.StatusDown, Class: "http_5xx", Error: secretError, HTTPStatus: 502, ServerName: "srv", ToolCount: 7,
			StartedAt: now.Add(-time.Minute)}},
		incidents: map[string][]model.Incident{internalID: {{ID: "inc-" + internalID, EndpointID: internalID, State: model.IncidentResolved,
			OpenedWindow: opened, FirstFailure: opened, Class: "timeout", Reason: secretReason, ResolvedAt: &resolved}}},
		rollups: map[string][]model.Rollup{internalID: {
			{Start: day.Add(-model.Daily), Size: model.Daily, Up: 80000, Down: 42 * 60, Total: sk, Initialize: model.NewSketch()},
			{Start: day, Size: model.Daily, Up: 40000, Down: 60, Total: model.NewSketch(), Initialize: model.NewSketch()},
		}},
	}
}

// serve serves f as a deployment with --public-index.
func serve(t *testing.T, f *fakeStore, clk clock.Clock) *httptest.Server {
	t.Helper()
	return serveWith(t, status.Options{Store: f, Clock: clk, PublicIndex: true})
}

func serveWith(t *testing.T, o status.Options) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(status.Handler(status.NewCache(o)))
	t.Cleanup(srv.Close)
	return srv
}

func get(t *testing.T, url string, hdr ...string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

var etagShape = regexp.MustCompile(`^"[0-9a-z]+-[0-9a-f]{24}"$`)

// TestPublicResponsesLeakNothingPrivate renders an endpoint whose URL
// carries a token, whose header is a secret and whose target answered
// with a secret-looking error, and greps every public response for them.
func TestPublicResponsesLeakNothingPrivate(t *testing.T) {
	srv := serve(t, fixture(), clock.NewFake(now))
	for _, path := range []string{"/status", "/status/acme-mcp", "/status/acme-mcp.json", "/badge/acme-mcp.svg", "/status/acme-mcp/feed.atom"} {
		resp, body := get(t, srv.URL+path)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: %d", path, resp.StatusCode)
		}
		all := body
		for k, v := range resp.Header {
			if k == "Etag" {
				// A digest of the body (checked here) after the window: its
				// hex may spell any short number, so its shape is checked.
				if !etagShape.MatchString(strings.Join(v, ",")) {
					t.Errorf("%s ETag %q is not a window and a digest", path, v)
				}
				continue
			}
			all += "\n" + k + ": " + strings.Join(v, ",")
		}
		for _, secret := range []string{secretHeader, "HEADERSECRET", secretToken, "ERRSECRET", "password=", "10.1.2.3", internalID,
			privateHost, secretReason, "acme-private-tenant", "run-secret-id", "upstream said", "Authorization", "502", "hidden.example", "hidden-one", "Hidden"} {
			if strings.Contains(all, secret) {
				t.Errorf("%s shows %q", path, secret)
			}
		}
	}
}

func TestPageShowsStateBarsIncidentsAndRegions(t *testing.T) {
	srv := serve(t, fixture(), clock.NewFake(now))
	_, body := get(t, srv.URL+"/status/acme-mcp")
	for _, want := range []string{"Acme MCP is down.", "42 min", "timed out", "resolved", "1 minute down", "42 minutes down",
		"eu-west", "us-east", "not reachable", `src="/badge/acme-mcp.svg"`, "<strong id=\"state-word\">down</strong>"} {
		if !strings.Contains(body, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if n := strings.Count(body, `tabindex="0" aria-label="`); n != status.Days {
		t.Errorf("%d bars, want %d", n, status.Days)
	}
	if strings.Contains(body, "<script") {
		t.Error("page has a script")
	}
	var v status.JSONView
	_, js := get(t, srv.URL+"/status/acme-mcp.json")
	if err := json.Unmarshal([]byte(js), &v); err != nil {
		t.Fatal(err)
	}
	if v.State != "down" || v.Uptime30d == nil || v.Incidents90d != 1 || v.OpenIncident || v.ToolCount != nil || v.LatencyP50Ms == nil {
		t.Errorf("json = %s", js)
	}
}

func TestUnknownAndPrivateSlugsAre404(t *testing.T) {
	srv := serve(t, fixture(), clock.NewFake(now))
	for _, path := range []string{"/status/hidden-one", "/status/hidden-one.json", "/badge/hidden-one.svg", "/status/nope", "/badge/nope.svg", "/badge/acme-mcp.png",
		"/status/hidden-one/feed.atom", "/status/nope/feed.atom", "/status/acme-mcp/feed.rss"} {
		if resp, _ := get(t, srv.URL+path); resp.StatusCode != http.StatusNotFound {
			t.Errorf("%s: %d, want 404", path, resp.StatusCode)
		}
	}
}

func TestETagAnd304AndCacheControl(t *testing.T) {
	srv := serve(t, fixture(), clock.NewFake(now))
	tags := map[string]bool{}
	for _, path := range []string{"/status/acme-mcp", "/status/acme-mcp.json", "/badge/acme-mcp.svg", "/status/acme-mcp/feed.atom"} {
		resp, _ := get(t, srv.URL+path)
		if cc := resp.Header.Get("Cache-Control"); cc != "public, max-age=60, stale-while-revalidate=300" {
			t.Errorf("%s Cache-Control %q", path, cc)
		}
		tag := resp.Header.Get("ETag")
		if !strings.HasPrefix(tag, `"`) || tags[tag] {
			t.Errorf("%s ETag %q: want a strong tag of its own", path, tag)
		}
		tags[tag] = true
		again, body := get(t, srv.URL+path, "If-None-Match", `"other", `+tag)
		if again.StatusCode != http.StatusNotModified || body != "" || again.Header.Get("ETag") != tag {
			t.Errorf("%s with If-None-Match: %d %q", path, again.StatusCode, body)
		}
		if other, _ := get(t, srv.URL+path, "If-None-Match", `"stale"`); other.StatusCode != http.StatusOK {
			t.Errorf("%s with a stale tag: %d", path, other.StatusCode)
		}
	}
}

// TestFreshCacheReadsNoStore: after the first request, requests within the
// TTL — for the page, the JSON, the badge, an unknown slug — read nothing;
// after it, one refresh reads again.
func TestFreshCacheReadsNoStore(t *testing.T) {
	f := fixture()
	clk := clock.NewFake(now)
	srv := serve(t, f, clk)
	get(t, srv.URL+"/badge/acme-mcp.svg")
	first := f.reads.Load()
	if first == 0 {
		t.Fatal("the first request read nothing")
	}
	for range 50 {
		for _, path := range []string{"/status/acme-mcp", "/status/acme-mcp.json", "/badge/acme-mcp.svg", "/badge/unknown-slug.svg"} {
			get(t, srv.URL+path)
		}
	}
	if n := f.reads.Load(); n != first {
		t.Fatalf("%d store reads for 200 requests on a fresh cache, want 0", n-first)
	}
	clk.Advance(status.DefaultTTL)
	get(t, srv.URL+"/badge/acme-mcp.svg")
	if n := f.reads.Load(); n != 2*first {
		t.Fatalf("refresh after the TTL read %d times, want %d", n-first, first)
	}
}

func TestBadgeTextFitsItsBox(t *testing.T) {
	for _, s := range []string{"mcp", "operational | 99.99%", "partial outage | 100%", "WWWWWWWW", "ünïcödé"} {
		w := status.TextWidth(s)
		// Never narrower than the widest ASCII glyph (%) would need per character / 1.6.
		if min := len([]rune(s)) * 4; w < min {
			t.Errorf("TextWidth(%q) = %d, implausibly narrow", s, w)
		}
	}
	if status.TextWidth("WWWW") <= status.TextWidth("iiii") {
		t.Error("proportional widths expected")
	}
	p := status.Build(status.Input{Endpoint: model.Endpoint{Name: "x", Slug: "xyz", Public: true}, Now: now})
	svg := string(status.Badge("mcp", p))
	if !strings.Contains(svg, `textLength=`) || !strings.Contains(svg, "pending") {
		t.Errorf("badge %s", svg)
	}
}

func TestRatioNeverRoundsUpToHundred(t *testing.T) {
	if got := (status.Ratio{Measured: true, Value: 0.99996}).Percent(); got != "99.99%" {
		t.Errorf("got %s", got)
	}
	if got := (status.Ratio{}).Percent(); got != "no data" {
		t.Errorf("got %s", got)
	}
}
