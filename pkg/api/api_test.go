package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpmon/mcpmon/pkg/api"
	"github.com/mcpmon/mcpmon/pkg/api/apispec"
	apiv1 "github.com/mcpmon/mcpmon/pkg/api/v1"
	"github.com/mcpmon/mcpmon/pkg/clock"
	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/msg"
	"github.com/mcpmon/mcpmon/pkg/scheduler"
	"github.com/mcpmon/mcpmon/pkg/store"
	"github.com/mcpmon/mcpmon/pkg/store/bolt"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// What the process wires into Options.
var (
	_ api.Store     = (*bolt.Store)(nil)
	_ api.Store     = store.Store(nil)
	_ api.Scheduler = (*scheduler.Scheduler)(nil)
)

// syncBuffer collects log output written from server goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// harness is the API over a real bolt store and a real scheduler (not run:
// tests read its schedule table).
type harness struct {
	t     *testing.T
	srv   *httptest.Server
	store *bolt.Store
	sched *scheduler.Scheduler
	clock *clock.Fake
	logs  *syncBuffer
	// transcript holds every response (status line, headers, body) for the
	// secret-leak checks.
	mu         sync.Mutex
	transcript bytes.Buffer
}

func newHarness(t *testing.T, tweak ...func(*api.Options)) *harness {
	t.Helper()
	h := &harness{t: t, clock: clock.NewFake(t0), logs: &syncBuffer{}}
	st, err := bolt.Open(filepath.Join(t.TempDir(), "mcpmon.db"), bolt.Options{Clock: h.clock, SweepInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	h.store = st
	h.sched = scheduler.New(nil, scheduler.Options{Clock: h.clock})
	n := 0
	opts := api.Options{
		Store:     st,
		Scheduler: h.sched,
		Logger:    slog.New(slog.NewJSONHandler(h.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Clock:     h.clock,
		NewID: func() string {
			n++
			return fmt.Sprintf("id%d", n)
		},
		// No test sends DNS beyond loopback: a host verification without
		// a test DNS server (withDNS) fails like an unreachable resolver.
		HostResolver: noDNS{},
	}
	for _, f := range tweak {
		f(&opts)
	}
	// Every exchange of every API test is held to openapi.yaml.
	h.srv = httptest.NewServer(apispec.Handler(t, api.New(opts)))
	t.Cleanup(h.srv.Close)
	return h
}

// do sends a request; body "" sends none, contentType "" defaults to JSON
// when there is a body or the method changes state (as a real client of
// this API does), "-" sends none.
func (h *harness) do(method, path, contentType, body string) (*http.Response, []byte) {
	h.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	if contentType == "" && (body != "" || method == http.MethodPost || method == http.MethodPut || method == http.MethodPatch) {
		contentType = "application/json"
	}
	req, err := http.NewRequestWithContext(h.t.Context(), method, h.srv.URL+path, rd)
	if err != nil {
		h.t.Fatal(err)
	}
	if contentType != "" && contentType != "-" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := h.srv.Client().Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		h.t.Fatal(err)
	}
	h.mu.Lock()
	fmt.Fprintf(&h.transcript, "%s %s -> %d\n", method, path, resp.StatusCode)
	_ = resp.Header.Write(&h.transcript)
	h.transcript.Write(b)
	h.transcript.WriteString("\n")
	h.mu.Unlock()
	return resp, b
}

func (h *harness) mustJSON(method, path, body string, wantStatus int, into any) *http.Response {
	h.t.Helper()
	resp, b := h.do(method, path, "", body)
	if resp.StatusCode != wantStatus {
		h.t.Fatalf("%s %s = %d %s, want %d", method, path, resp.StatusCode, b, wantStatus)
	}
	if into != nil {
		if err := json.Unmarshal(b, into); err != nil {
			h.t.Fatalf("%s %s: decode %s: %v", method, path, b, err)
		}
	}
	return resp
}

func (h *harness) create(body string) apiv1.EndpointView {
	h.t.Helper()
	var v apiv1.EndpointView
	h.mustJSON("POST", "/v1/endpoints", body, http.StatusCreated, &v)
	return v
}

func TestCreateEndpointAppliesDefaults(t *testing.T) {
	h := newHarness(t)
	resp, b := h.do("POST", "/v1/endpoints", "", `{"name":"docs","url":"https://mcp.example.com/mcp"}`)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("status %d %s", resp.StatusCode, b)
	}
	if got := resp.Header.Get("Location"); got != "/v1/endpoints/id1" {
		t.Errorf("Location = %q", got)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type = %q", ct)
	}
	var v apiv1.EndpointView
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	want := apiv1.EndpointView{ID: "id1", Tenant: "default", Name: "docs", URL: "https://mcp.example.com/mcp", Transport: "auto",
		Schedule: "@every 30s", Timeout: "10s", CreatedAt: t0, UpdatedAt: t0, Version: 1, State: apiv1.StatePending}
	if fmt.Sprintf("%+v", v) != fmt.Sprintf("%+v", want) {
		t.Errorf("created\n got %+v\nwant %+v", v, want)
	}
	stored, err := h.store.GetEndpoint(t.Context(), "id1")
	if err != nil || stored.Timeout != 10*time.Second || stored.Transport != "auto" {
		t.Fatalf("stored %+v, %v", stored, err)
	}
	if _, ok := h.sched.Next("id1"); !ok {
		t.Error("created endpoint is not scheduled")
	}
	// GET Location returns the same thing.
	var got apiv1.EndpointView
	h.mustJSON("GET", resp.Header.Get("Location"), "", http.StatusOK, &got)
	if fmt.Sprintf("%+v", got) != fmt.Sprintf("%+v", want) {
		t.Errorf("GET\n got %+v\nwant %+v", got, want)
	}
}

// TestDefaultTimeoutFitsTheInterval: without an explicit timeout, a schedule
// shorter than the default timeout gets a timeout of its interval, so a hung
// target's probe ends before the next slot.
func TestDefaultTimeoutFitsTheInterval(t *testing.T) {
	h := newHarness(t)
	for _, tc := range []struct{ schedule, want string }{
		{"@every 3s", "3s"},
		{"@every 1m", "10s"},
		{"* * * * *", "10s"},
	} {
		ep := h.create(`{"name":"n","url":"https://a.example/mcp","schedule":"` + tc.schedule + `"}`)
		if ep.Timeout != tc.want {
			t.Errorf("schedule %q: timeout %s, want %s", tc.schedule, ep.Timeout, tc.want)
		}
	}
}

func TestCreateEndpointAllFields(t *testing.T) {
	h := newHarness(t)
	v := h.create(`{
		"name": "billing", "url": "http://10.0.0.5:8080/mcp?tenant=a", "transport": "streamable-http",
		"protocolVersion": "2025-06-18", "schedule": "*/5 * * * *", "timeout": "30s", "latencyThreshold": "1500ms",
		"headers": {"authorization": "Bearer abc", "X-Api-Key": "k"},
		"labels": {"team": "payments", "env": "prod"},
		"rules": {"openAfter": 3, "openWindow": 5, "resolveAfter": 2, "repeatInterval": "4h"},
		"sinks": {"slack": {"webhookUrl": "https://hooks.slack.invalid/T/B/x", "channel": "#ops"}},
		"paused": true}`)
	if v.Transport != "streamable-http" || v.ProtocolVersion != "2025-06-18" || v.Schedule != "*/5 * * * *" ||
		v.Timeout != "30s" || v.LatencyThreshold != "1.5s" || !v.Paused {
		t.Errorf("fields not kept: %+v", v)
	}
	if fmt.Sprint(v.Headers) != "map[Authorization:<redacted> X-Api-Key:<redacted>]" {
		t.Errorf("headers = %v, want canonical names with redacted values", v.Headers)
	}
	if v.Rules == nil || *v.Rules != (apiv1.RulesInput{OpenAfter: 3, OpenWindow: 5, ResolveAfter: 2, RepeatInterval: "4h0m0s"}) {
		t.Errorf("rules = %+v", v.Rules)
	}
	if want := `{"slack":{"channel":"#ops","webhookUrl":"<redacted>"}}`; string(v.Sinks) != want {
		t.Errorf("sinks = %s, want %s", v.Sinks, want)
	}
	stored, _ := h.store.GetEndpoint(t.Context(), v.ID)
	if stored.Headers["Authorization"] != "Bearer abc" || stored.LatencyThreshold != 1500*time.Millisecond || stored.Rules.RepeatInterval != 4*time.Hour {
		t.Errorf("stored %+v", stored)
	}
	if _, ok := h.sched.Next(v.ID); ok {
		t.Error("a paused endpoint was scheduled")
	}
}

func TestListAndDeleteEndpoints(t *testing.T) {
	h := newHarness(t)
	a := h.create(`{"name":"a","url":"https://a.example/mcp"}`)
	b := h.create(`{"name":"b","url":"https://b.example/mcp","headers":{"Authorization":"x"}}`)
	var list struct{ Endpoints []apiv1.EndpointView }
	h.mustJSON("GET", "/v1/endpoints", "", http.StatusOK, &list)
	if len(list.Endpoints) != 2 || list.Endpoints[0].ID != a.ID || list.Endpoints[1].Headers["Authorization"] != apiv1.Redacted {
		t.Fatalf("list = %+v", list)
	}
	h.mustJSON("DELETE", "/v1/endpoints/"+a.ID, "", http.StatusNoContent, nil)
	if _, ok := h.sched.Next(a.ID); ok {
		t.Error("deleted endpoint still scheduled")
	}
	h.mustJSON("GET", "/v1/endpoints/"+a.ID, "", http.StatusNotFound, nil)
	h.mustJSON("GET", "/v1/endpoints", "", http.StatusOK, &list)
	if len(list.Endpoints) != 1 || list.Endpoints[0].ID != b.ID {
		t.Fatalf("after delete, list = %+v", list)
	}
	// Empty list is [], not null.
	h.mustJSON("DELETE", "/v1/endpoints/"+b.ID, "", http.StatusNoContent, nil)
	_, body := h.do("GET", "/v1/endpoints", "", "")
	if strings.TrimSpace(string(body)) != `{"endpoints":[]}` {
		t.Errorf("empty list = %s", body)
	}
}

func TestPatchEndpointMergesFields(t *testing.T) {
	h := newHarness(t)
	v := h.create(`{"name":"a","url":"https://a.example/mcp","schedule":"@every 1h",
		"headers":{"Authorization":"Bearer old","X-Keep":"keep","X-Drop":"drop"},"labels":{"team":"x"}}`)
	before, _ := h.sched.Next(v.ID)

	var got apiv1.EndpointView
	h.mustJSON("PATCH", "/v1/endpoints/"+v.ID, `{"schedule":"@every 10s","timeout":"5s",
		"headers":{"authorization":"Bearer new","x-drop":null,"X-Keep":"<redacted>"},"labels":null}`, http.StatusOK, &got)
	if got.Schedule != "@every 10s" || got.Timeout != "5s" || got.Name != "a" || got.Version != 2 || got.Labels != nil {
		t.Errorf("patched view %+v", got)
	}
	stored, _ := h.store.GetEndpoint(t.Context(), v.ID)
	if fmt.Sprint(stored.Headers) != "map[Authorization:Bearer new X-Keep:keep]" {
		t.Errorf("stored headers %v: want the new value, X-Drop removed and X-Keep kept through the placeholder", stored.Headers)
	}
	after, ok := h.sched.Next(v.ID)
	if !ok || !after.Before(before) || after.Sub(h.clock.Now()) > 10*time.Second {
		t.Errorf("schedule change not applied to the scheduler: next %v (was %v)", after, before)
	}

	// Pausing unschedules; resuming schedules again.
	h.mustJSON("PATCH", "/v1/endpoints/"+v.ID, `{"paused":true}`, http.StatusOK, &got)
	if _, ok := h.sched.Next(v.ID); ok || !got.Paused {
		t.Error("paused endpoint still scheduled")
	}
	h.mustJSON("PATCH", "/v1/endpoints/"+v.ID, `{"paused":false}`, http.StatusOK, &got)
	if _, ok := h.sched.Next(v.ID); !ok {
		t.Error("resumed endpoint not scheduled")
	}
	// merge-patch content type is accepted; null resets to the default.
	resp, b := h.do("PATCH", "/v1/endpoints/"+v.ID, "application/merge-patch+json", `{"schedule":null}`)
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), `"schedule":"@every 30s"`) {
		t.Errorf("merge-patch+json: %d %s", resp.StatusCode, b)
	}
}

// racingStore makes another writer update the endpoint just before each of
// the first `races` UpdateEndpoint calls, as a second API replica would.
type racingStore struct {
	*bolt.Store
	races int
	calls int
}

func (s *racingStore) UpdateEndpoint(ctx context.Context, e model.Endpoint) (model.Endpoint, error) {
	s.calls++
	if s.calls <= s.races {
		cur, err := s.Store.GetEndpoint(ctx, e.ID)
		if err != nil {
			return model.Endpoint{}, err
		}
		cur.Labels = map[string]string{"touched": fmt.Sprint(s.calls)}
		if _, err := s.Store.UpdateEndpoint(ctx, cur); err != nil {
			return model.Endpoint{}, err
		}
	}
	return s.Store.UpdateEndpoint(ctx, e)
}

func TestPatchRetriesLostRaceThenConflicts(t *testing.T) {
	for _, tc := range []struct {
		races      int
		wantStatus int
	}{
		{races: 1, wantStatus: http.StatusOK},
		{races: 100, wantStatus: http.StatusConflict},
	} {
		t.Run(fmt.Sprint("races=", tc.races), func(t *testing.T) {
			var rs *racingStore
			h := newHarness(t, func(o *api.Options) {
				rs = &racingStore{Store: o.Store.(*bolt.Store), races: tc.races}
				o.Store = rs
			})
			v := h.create(`{"name":"a","url":"https://a.example/mcp"}`)
			resp, b := h.do("PATCH", "/v1/endpoints/"+v.ID, "", `{"name":"renamed"}`)
			if resp.StatusCode != tc.wantStatus {
				t.Fatalf("PATCH = %d %s, want %d", resp.StatusCode, b, tc.wantStatus)
			}
			stored, _ := h.store.GetEndpoint(t.Context(), v.ID)
			switch tc.wantStatus {
			case http.StatusOK:
				// The retry merged onto the other writer's change instead of losing it.
				if stored.Name != "renamed" || stored.Labels["touched"] != "1" {
					t.Errorf("stored %+v: want both writers' changes", stored)
				}
			case http.StatusConflict:
				if stored.Name != "a" || !strings.Contains(string(b), apiv1.TypeVersionConflict) {
					t.Errorf("stored name %q, body %s", stored.Name, b)
				}
			}
		})
	}
}

func TestGetEndpointShowsLatestResultAndVerdict(t *testing.T) {
	h := newHarness(t)
	v := h.create(`{"name":"a","url":"https://a.example/mcp"}`)
	ctx := t.Context()
	slot := t0.Add(-30 * time.Second)
	res := msg.ProbeResult{
		Schema: msg.SchemaVersion, EndpointID: v.ID, ProbeRunID: msg.ProbeRunID(v.ID, slot), Slot: slot,
		StartedAt: slot, FinishedAt: slot.Add(120 * time.Millisecond), Status: msg.StatusUp, Class: "ok",
		Transport: "streamable-http", ProtocolVersion: "2025-11-25", ServerName: "docs-server", ServerVersion: "1.2.3",
		Phases:             map[string]float64{msg.PhaseInitialize: 0.012, msg.PhaseTotal: 0.12},
		CatalogFingerprint: "sha256:abc", ToolCount: 4,
		Events: []msg.Event{{Kind: "catalog_changed", Severity: "info", Message: "tool added: search"}},
	}
	if err := h.store.PutLatestResult(ctx, res); err != nil {
		t.Fatal(err)
	}
	if _, err := h.store.RecordVerdict(ctx, msg.Verdict{Schema: 1, EndpointID: v.ID, Window: t0.Add(-time.Minute), WindowSecs: 60,
		State: msg.StateDown, Class: "timeout", Reason: "2 of 2 probes timed out", Results: 2}); err != nil {
		t.Fatal(err)
	}
	var got apiv1.EndpointView
	h.mustJSON("GET", "/v1/endpoints/"+v.ID, "", http.StatusOK, &got)
	lr := got.LatestResult
	if lr == nil || lr.Class != "ok" || lr.ProtocolVersion != "2025-11-25" || lr.ServerName != "docs-server" ||
		lr.ServerVersion != "1.2.3" || lr.CatalogFingerprint != "sha256:abc" || lr.Phases["initialize"] != "12ms" ||
		lr.Phases["total"] != "120ms" || len(lr.Events) != 1 || lr.Events[0].Kind != "catalog_changed" {
		t.Errorf("latestResult = %+v", lr)
	}
	lv := got.LastVerdict
	if lv == nil || lv.State != msg.StateDown || lv.Class != "timeout" || lv.WindowLength != "1m0s" || !lv.Window.Equal(t0.Add(-time.Minute)) {
		t.Errorf("lastVerdict = %+v", lv)
	}
	if got.State != string(msg.StateDown) || got.StateWindow == nil || !got.StateWindow.Equal(t0.Add(-time.Minute)) {
		t.Errorf("state = %q at %v, want down at %v", got.State, got.StateWindow, t0.Add(-time.Minute))
	}
	// The list view stays light but carries each endpoint's current state.
	h.create(`{"name":"fresh","url":"https://b.example/mcp"}`)
	h.create(`{"name":"held","url":"https://c.example/mcp","paused":true}`)
	var list struct{ Endpoints []apiv1.EndpointView }
	h.mustJSON("GET", "/v1/endpoints", "", http.StatusOK, &list)
	states := map[string]string{}
	for _, e := range list.Endpoints {
		if e.LatestResult != nil || e.LastVerdict != nil {
			t.Error("list view carries results")
		}
		states[e.Name] = e.State
	}
	if want := map[string]string{"a": "down", "fresh": apiv1.StatePending, "held": apiv1.StatePaused}; !maps.Equal(states, want) {
		t.Errorf("list states = %v, want %v", states, want)
	}
}

// TestGetEndpointShowsABlindResult: a result the prober published while
// blind says so, with since when, so an owner reading the API sees why the
// window is no_data rather than guessing at their own server.
func TestGetEndpointShowsABlindResult(t *testing.T) {
	h := newHarness(t)
	v := h.create(`{"name":"a","url":"https://a.example/mcp"}`)
	slot, since := t0.Add(-30*time.Second), t0.Add(-5*time.Minute)
	res := msg.ProbeResult{
		Schema: msg.SchemaVersion, EndpointID: v.ID, ProbeRunID: msg.ProbeRunID(v.ID, slot), Slot: slot,
		StartedAt: slot, FinishedAt: slot.Add(time.Second), Status: msg.StatusDown, Class: "timeout",
		Blind: true, BlindSince: since,
	}
	if err := h.store.PutLatestResult(t.Context(), res); err != nil {
		t.Fatal(err)
	}
	var got apiv1.EndpointView
	h.mustJSON("GET", "/v1/endpoints/"+v.ID, "", http.StatusOK, &got)
	if lr := got.LatestResult; lr == nil || !lr.Blind || lr.BlindSince == nil || !lr.BlindSince.Equal(since) {
		t.Fatalf("latestResult = %+v, want blind since %v", lr, since)
	}
}

func TestListVerdictsNewestFirstWithLimit(t *testing.T) {
	h := newHarness(t)
	v := h.create(`{"name":"a","url":"https://a.example/mcp"}`)
	for i := range 3 {
		state := msg.StateUp
		if i == 2 {
			state = msg.StateDown
		}
		if _, err := h.store.RecordVerdict(t.Context(), msg.Verdict{Schema: 1, EndpointID: v.ID,
			Window: t0.Add(time.Duration(i-3) * time.Minute), WindowSecs: 60, State: state, Results: 1}); err != nil {
			t.Fatal(err)
		}
	}
	var out struct{ Verdicts []apiv1.VerdictView }
	h.mustJSON("GET", "/v1/endpoints/"+v.ID+"/verdicts?limit=2", "", http.StatusOK, &out)
	if len(out.Verdicts) != 2 || out.Verdicts[0].State != msg.StateDown || !out.Verdicts[0].Window.After(out.Verdicts[1].Window) {
		t.Fatalf("verdicts = %+v, want the 2 newest, newest first", out.Verdicts)
	}
	h.mustJSON("GET", "/v1/endpoints/"+v.ID+"/verdicts", "", http.StatusOK, &out)
	if len(out.Verdicts) != 3 {
		t.Fatalf("default limit returned %d verdicts, want 3", len(out.Verdicts))
	}
}

func TestRequestLogLine(t *testing.T) {
	h := newHarness(t)
	h.do("GET", "/v1/incidents?endpoint=abc&state=open", "", "")
	var line map[string]any
	for _, l := range strings.Split(strings.TrimSpace(h.logs.String()), "\n") {
		if strings.Contains(l, `"msg":"request"`) {
			if err := json.Unmarshal([]byte(l), &line); err != nil {
				t.Fatal(err)
			}
		}
	}
	if line == nil {
		t.Fatalf("no request log line in %s", h.logs.String())
	}
	if line["method"] != "GET" || line["path"] != "/v1/incidents" || line["status"] != float64(200) || line["duration"] == nil {
		t.Errorf("request log line %v", line)
	}
	if strings.Contains(h.logs.String(), "state=open") {
		t.Error("query string logged")
	}
}

func TestSchedulerErrorDoesNotFailTheRequest(t *testing.T) {
	h := newHarness(t, func(o *api.Options) { o.Scheduler = failingScheduler{} })
	h.create(`{"name":"a","url":"https://a.example/mcp"}`)
	if !strings.Contains(h.logs.String(), "scheduling endpoint failed") {
		t.Error("scheduler failure not logged")
	}
}

type failingScheduler struct{}

func (failingScheduler) Upsert(model.Endpoint) error { return errors.New("boom") }
func (failingScheduler) Remove(string)               {}

func TestPatchChecksTargetOnlyWhenURLChanges(t *testing.T) {
	allowPrivate := true
	h := newHarness(t, func(o *api.Options) {
		o.TargetValidator = func(raw string) error {
			if !allowPrivate && strings.Contains(raw, "10.0.0.") {
				return errors.New("blocked target: private address")
			}
			return nil
		}
	})
	v := h.create(`{"name":"a","url":"http://10.0.0.5/mcp"}`)
	allowPrivate = false // the operator tightened the policy since
	h.mustJSON("PATCH", "/v1/endpoints/"+v.ID, `{"paused":true}`, http.StatusOK, nil)
	resp, b := h.do("PATCH", "/v1/endpoints/"+v.ID, "", `{"url":"http://10.0.0.6/mcp"}`)
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), "blocked target") {
		t.Fatalf("PATCH to another private URL = %d %s, want 400 from the target validator", resp.StatusCode, b)
	}
}

func TestPatchIfMatch(t *testing.T) {
	h := newHarness(t)
	v := h.create(`{"name":"a","url":"https://a.example/mcp"}`)
	resp, _ := h.do("GET", "/v1/endpoints/"+v.ID, "", "")
	tag := resp.Header.Get("ETag")
	if tag != `"1"` {
		t.Fatalf("ETag = %q, want \"1\"", tag)
	}
	patch := func(ifMatch, body string) (*http.Response, []byte) {
		req, _ := http.NewRequestWithContext(t.Context(), "PATCH", h.srv.URL+"/v1/endpoints/"+v.ID, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/merge-patch+json")
		req.Header.Set("If-Match", ifMatch)
		resp, err := h.srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, b
	}
	resp, b := patch(tag, `{"name":"b"}`)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("ETag") != `"2"` {
		t.Fatalf("PATCH with current If-Match = %d %s (ETag %q)", resp.StatusCode, b, resp.Header.Get("ETag"))
	}
	// A client still holding version 1 must not overwrite version 2.
	resp, b = patch(tag, `{"name":"c"}`)
	if resp.StatusCode != http.StatusPreconditionFailed || !strings.Contains(string(b), apiv1.TypeVersionConflict) {
		t.Fatalf("PATCH with stale If-Match = %d %s, want 412", resp.StatusCode, b)
	}
	if stored, _ := h.store.GetEndpoint(t.Context(), v.ID); stored.Name != "b" {
		t.Fatalf("stale PATCH changed the name to %q", stored.Name)
	}
	if resp, _ := patch(`*`, `{"name":"d"}`); resp.StatusCode != http.StatusOK {
		t.Fatalf("If-Match: * = %d", resp.StatusCode)
	}
}
