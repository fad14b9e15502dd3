package prober

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpmon/mcpmon/pkg/conformance"
	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/msg"
)

// confServer is a raw MCP server of one era (2025-11-25, or 2026-07-28
// stateless) that conforms to every rule but those named by broken (a
// comma-separated list of rule IDs, or breakNoDescription), which it breaks
// and nothing else. broken can change while it serves (a deploy, a
// restart).
type confServer struct {
	era    string
	broken atomic.Value // string
	lists  atomic.Int64
}

// breakNoDescription makes confServer list a tool without a description,
// which the schema allows and the official suite's tools-list check does not.
const breakNoDescription = "tool-without-description"

func newConfServer(t testing.TB, era, broken string) (*confServer, *httptest.Server) {
	s := &confServer{era: era}
	s.broken.Store(broken)
	return s, serve(t, s)
}

func (s *confServer) breaks(rule string) bool {
	return slices.Contains(strings.Split(s.broken.Load().(string), ","), rule)
}

// loopback reports whether hostport names this machine: the DNS-rebinding
// protection a local server owes, on Host and Origin alike.
func loopback(hostport string) bool {
	h := hostport
	if host, _, err := net.SplitHostPort(hostport); err == nil {
		h = host
	}
	return h == "127.0.0.1" || h == "localhost" || h == "::1"
}

func (s *confServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodDelete {
		w.WriteHeader(http.StatusOK)
		return
	}
	if r.Method != http.MethodPost {
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	b, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	rpcErr := func(status int, id json.RawMessage, code int, m string, data ...any) {
		e := map[string]any{"code": code, "message": m}
		if len(data) > 0 {
			e["data"] = data[0]
		}
		writeJSON(w, status, map[string]any{"jsonrpc": "2.0", "id": id, "error": e})
	}
	if !s.breaks(conformance.RuleForeignOrigin) {
		o := r.Header.Get("Origin")
		u, err := url.Parse(o)
		if !loopback(r.Host) || (o != "" && (err != nil || !loopback(u.Host))) {
			http.Error(w, "forbidden origin", http.StatusForbidden)
			return
		}
	}
	if len(b) > 0 && b[0] == '[' {
		if !s.breaks(conformance.RuleBatchRefused) {
			rpcErr(http.StatusBadRequest, nil, -32600, "batching is not supported")
			return
		}
		var batch []struct {
			ID json.RawMessage `json:"id"`
		}
		_ = json.Unmarshal(b, &batch)
		var out []any
		for _, m := range batch {
			out = append(out, result(m.ID, s.stamp(map[string]any{})))
		}
		writeJSON(w, http.StatusOK, out)
		return
	}
	var m struct {
		Method string          `json:"method"`
		ID     json.RawMessage `json:"id"`
	}
	_ = json.Unmarshal(b, &m)
	if v := r.Header.Get("Mcp-Protocol-Version"); v != "" && !slices.Contains(versions[:], v) {
		switch {
		case s.era == Version20260728 && s.breaks(conformance.RuleUnsupportedVersion):
			rpcErr(http.StatusBadRequest, m.ID, -32600, "unsupported protocol version")
			return
		case s.era == Version20260728:
			rpcErr(http.StatusBadRequest, m.ID, -32022, "unsupported protocol version",
				map[string]any{"requested": v, "supported": []string{Version20260728}})
			return
		case !s.breaks(conformance.RuleVersionHeader):
			rpcErr(http.StatusBadRequest, m.ID, -32600, "unsupported MCP-Protocol-Version")
			return
		}
	}
	if s.era == Version20260728 {
		if h := r.Header.Get("Mcp-Method"); h != m.Method && !s.breaks(conformance.RuleHeaderMismatch) {
			code := -32020
			if s.breaks(conformance.RuleHeaderMismatchCode) {
				code = -32600
			}
			rpcErr(http.StatusBadRequest, m.ID, code, "header mismatch")
			return
		}
		if s.breaks(conformance.RuleNoSession) {
			w.Header().Set("Mcp-Session-Id", "s-1")
		}
		removed := map[string]string{"ping": conformance.RulePingRemoved, "logging/setLevel": conformance.RuleSetLevelRemoved}
		if rule, ok := removed[m.Method]; ok {
			if s.breaks(rule) {
				writeJSON(w, 200, result(m.ID, s.stamp(map[string]any{})))
			} else {
				rpcErr(http.StatusNotFound, m.ID, -32601, "method not found")
			}
			return
		}
	}
	switch {
	case m.Method == "initialize" && s.era != Version20260728:
		sid := "s-1"
		if s.breaks(conformance.RuleSessionIDASCII) {
			sid = "s 1"
		}
		w.Header().Set("Mcp-Session-Id", sid)
		ir := initResult(s.era)
		if s.breaks(conformance.RuleInitializeSchema) {
			delete(ir, "serverInfo")
		}
		writeJSON(w, 200, result(m.ID, ir))
	case m.Method == "notifications/initialized":
		w.WriteHeader(http.StatusAccepted)
	case m.Method == "ping" && s.breaks(conformance.RulePingAnswered):
		rpcErr(200, m.ID, -32601, "method not found")
	case m.Method == "ping":
		writeJSON(w, 200, result(m.ID, map[string]any{}))
	case m.Method == "server/discover" && s.era == Version20260728:
		dr := s.stamp(map[string]any{
			"supportedVersions": []string{Version20260728},
			"capabilities":      map[string]any{"tools": map[string]any{}},
			"_meta":             map[string]any{"io.modelcontextprotocol/serverInfo": map[string]any{"name": "raw", "version": "0.1"}},
		})
		if s.breaks(conformance.RuleDiscoverSchema) {
			dr["instructions"] = 5
		}
		writeJSON(w, 200, result(m.ID, dr))
	case m.Method == "tools/list":
		tools := []any{
			map[string]any{"name": "alpha", "description": "The first tool.", "inputSchema": map[string]any{"type": "object"}},
			map[string]any{"name": "beta", "description": "The second tool.", "inputSchema": map[string]any{"type": "object"}},
		}
		if s.lists.Add(1)%2 == 0 && s.breaks(conformance.RuleToolsOrderStable) {
			slices.Reverse(tools)
		}
		if s.breaks(conformance.RuleToolsListSchema) {
			tools[1] = map[string]any{"name": "beta", "description": "The second tool.", "inputSchema": map[string]any{"properties": map[string]any{}}}
		}
		if s.breaks(breakNoDescription) {
			delete(tools[1].(map[string]any), "description")
		}
		lr := s.stamp(map[string]any{"tools": tools})
		if s.breaks(conformance.RuleCacheFields) {
			delete(lr, "ttlMs")
		}
		if s.breaks(conformance.RuleResultType) {
			delete(lr, "resultType")
		}
		writeJSON(w, 200, result(m.ID, lr))
	default:
		rpcErr(400, m.ID, -32000, "Server not initialized")
	}
}

// stamp adds the 2026-07-28 result fields to a result of that era.
func (s *confServer) stamp(res map[string]any) map[string]any {
	if s.era == Version20260728 {
		res["resultType"], res["ttlMs"], res["cacheScope"] = "complete", 60000, "public"
	}
	return res
}

// probeTwice probes ep twice, the second probe an hour later with the
// first as its previous result (so the order rule has something to compare
// and the active rules are due again), and returns the second result.
func probeTwice(t *testing.T, p *Prober, ep model.Endpoint) msg.ProbeResult {
	t.Helper()
	first := p.Run2(ep, testSlot, nil)
	return p.Run2(ep, testSlot.Add(time.Hour), &first)
}

// Run2 is Run for a slot, without memory.
func (p *Prober) Run2(ep model.Endpoint, slot time.Time, prev *msg.ProbeResult) msg.ProbeResult {
	res, _ := p.Run(context.Background(), ep, msg.NewProbeCommand(ep.ID, slot), prev)
	return res
}

// assertConforms checks every rule of res's era is in res, and that the
// rules failing are exactly want.
func assertConforms(t *testing.T, res msg.ProbeResult, era string, want ...string) {
	t.Helper()
	assertOutcomes(t, res, era, nil, want...)
}

// assertOutcomes is assertConforms with the rules of na expected n/a.
func assertOutcomes(t *testing.T, res msg.ProbeResult, era string, na []string, want ...string) {
	t.Helper()
	if res.Status != msg.StatusUp || res.Class != ClassOK {
		t.Fatalf("status %s class %s (%s): conformance must not change the verdict", res.Status, res.Class, res.Error)
	}
	c := res.Conformance
	if c == nil || c.Era != era {
		t.Fatalf("conformance %+v, want era %s", c, era)
	}
	for _, rule := range conformance.Rules() {
		r, ok := c.Rule(rule.ID)
		if !rule.Applies(era) {
			if ok {
				t.Errorf("rule %s is not of %s but in the result", rule.ID, era)
			}
			continue
		}
		wantOutcome := msg.ConformancePass
		switch {
		case slices.Contains(want, rule.ID):
			wantOutcome = msg.ConformanceFail
		case slices.Contains(na, rule.ID):
			wantOutcome = msg.ConformanceNA
		}
		if r.Outcome != wantOutcome {
			t.Errorf("rule %s: %s %q, want %s", rule.ID, r.Outcome, r.Detail, wantOutcome)
		}
	}
}

// TestHealthyServersOfEveryEraPassEveryRule: go-sdk servers of each era,
// behind the cross-origin protection the SDK documents, pass every rule of
// their era; and so does the raw fixture the rule tests break.
func TestHealthyServersOfEveryEraPassEveryRule(t *testing.T) {
	protect := func(h http.Handler) http.Handler { return http.NewCrossOriginProtection().Handler(h) }
	for _, tc := range []struct {
		era    string
		pin    string
		opts   mcp.StreamableHTTPOptions
		legacy bool
	}{
		{era: Version20241105, legacy: true},
		{era: Version20250326, pin: Version20250326},
		{era: Version20250618, pin: Version20250618, opts: mcp.StreamableHTTPOptions{JSONResponse: true}},
		{era: Version20251125},
		{era: Version20260728, opts: mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true}},
		{era: Version20260728 + " SSE", opts: mcp.StreamableHTTPOptions{Stateless: true}},
	} {
		t.Run("go-sdk "+tc.era, func(t *testing.T) {
			s := sdkServer()
			var h http.Handler = mcp.NewSSEHandler(func(*http.Request) *mcp.Server { return s }, nil)
			if !tc.legacy {
				h = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &tc.opts)
			}
			ep := endpoint(serve(t, protect(h)).URL)
			ep.ProtocolVersion = tc.pin
			assertConforms(t, probeTwice(t, testProber(t, nil), ep), strings.Fields(tc.era)[0])
		})
	}
	for _, era := range []string{Version20251125, Version20260728} {
		t.Run("raw "+era, func(t *testing.T) {
			_, srv := newConfServer(t, era, "")
			assertConforms(t, probeTwice(t, testProber(t, nil), endpoint(srv.URL)), era)
		})
	}
}

// TestEachRuleDetectsTheServerThatBreaksIt: a raw server that breaks one
// rule fails that rule (and, where one rule implies another, that one),
// passes every other, and stays up.
func TestEachRuleDetectsTheServerThatBreaksIt(t *testing.T) {
	cases := []struct {
		rule string
		era  string
		also []string // rules the same break fails too
		// url, when set, starts the fixture instead of a confServer; na
		// are the rules it leaves n/a.
		url func(t *testing.T) string
		na  []string
	}{
		{rule: conformance.RuleInitializeSchema, era: Version20251125},
		{rule: conformance.RuleDiscoverSchema, era: Version20260728},
		{rule: conformance.RuleToolsListSchema, era: Version20251125},
		{rule: conformance.RuleToolsListSchema, era: Version20260728},
		{rule: conformance.RuleCacheFields, era: Version20260728, also: []string{conformance.RuleToolsListSchema}},
		{rule: conformance.RuleResultType, era: Version20260728, also: []string{conformance.RuleToolsListSchema}},
		{rule: conformance.RuleSessionIDASCII, era: Version20251125},
		{rule: conformance.RuleNoSession, era: Version20260728},
		{rule: conformance.RulePingAnswered, era: Version20251125},
		{rule: conformance.RuleToolsOrderStable, era: Version20260728},
		{rule: conformance.RuleBatchRefused, era: Version20251125},
		{rule: conformance.RuleBatchRefused, era: Version20260728},
		{rule: conformance.RuleForeignOrigin, era: Version20251125},
		{rule: conformance.RuleForeignOrigin, era: Version20260728},
		{rule: conformance.RuleVersionHeader, era: Version20251125},
		{rule: conformance.RuleHeaderMismatch, era: Version20260728, also: []string{conformance.RuleHeaderMismatchCode}},
		{rule: conformance.RuleHeaderMismatchCode, era: Version20260728},
		{rule: conformance.RulePingRemoved, era: Version20260728},
		{rule: conformance.RuleSetLevelRemoved, era: Version20260728},
		{rule: conformance.RuleUnsupportedVersion, era: Version20260728},
		// A go-sdk server of 2025-06-18 behind the HTTP+SSE transport:
		// the legacy stream has no session and takes no extra requests.
		{rule: conformance.RuleStreamableHTTP, era: Version20250618, url: func(t *testing.T) string {
			return legacySSE(t, sdkServer(Version20250618)).URL
		}, na: []string{conformance.RuleSessionIDASCII, conformance.RuleBatchRefused, conformance.RuleVersionHeader}},
	}
	covered := map[string]bool{}
	for _, tc := range cases {
		covered[tc.rule] = true
		t.Run(tc.rule+" "+tc.era, func(t *testing.T) {
			var u string
			if tc.url != nil {
				u = tc.url(t)
			} else {
				_, srv := newConfServer(t, tc.era, tc.rule)
				u = srv.URL
			}
			res := probeTwice(t, testProber(t, nil), endpoint(u))
			assertOutcomes(t, res, tc.era, tc.na, append([]string{tc.rule}, tc.also...)...)
			if r, _ := res.Conformance.Rule(tc.rule); r.Detail == "" {
				t.Errorf("%s failed without a detail", tc.rule)
			}
		})
	}
	for _, r := range conformance.Rules() {
		if !covered[r.ID] {
			t.Errorf("rule %s has no fixture that breaks it", r.ID)
		}
	}
}

// TestConformanceRegressionRaisesOneEventAndRestoreOne: a server that
// starts answering batches after a restart raises one
// conformance_regressed, however many probes see it, stays up, keeps its
// conformance across an outage, and raises one conformance_restored when
// fixed.
func TestConformanceRegressionRaisesOneEventAndRestoreOne(t *testing.T) {
	s, srv := newConfServer(t, Version20251125, "")
	p := testProber(t, nil)
	ep := endpoint(srv.URL)
	var prev *msg.ProbeResult
	kinds := map[string]int{}
	step := func(h int) msg.ProbeResult {
		res := p.Run2(ep, testSlot.Add(time.Duration(h)*time.Hour), prev)
		for _, e := range res.Events {
			kinds[e.Kind]++
		}
		prev = &res
		return res
	}
	if res := step(0); res.Conformance == nil {
		t.Fatal("no conformance")
	}
	s.broken.Store(conformance.RuleBatchRefused) // the deploy after the restart
	for h := 1; h <= 3; h++ {
		res := step(h)
		if res.Status != msg.StatusUp {
			t.Fatalf("status %s: a non-conforming server that answers is up", res.Status)
		}
		if r, _ := res.Conformance.Rule(conformance.RuleBatchRefused); r.Outcome != msg.ConformanceFail {
			t.Fatalf("hour %d: batch rule %+v", h, r)
		}
	}
	if kinds[model.EventConformanceRegressed] != 1 || kinds[model.EventConformanceRestored] != 0 {
		t.Fatalf("events %v, want one regression", kinds)
	}
	// Not due (same hour): the failure is carried, no event.
	if res := p.Run2(ep, prev.Slot.Add(time.Second), prev); len(res.Events) != 0 || res.Conformance.ActiveAt != prev.Conformance.ActiveAt {
		t.Errorf("a probe between checks: events %v, activeAt %v", res.Events, res.Conformance.ActiveAt)
	}
	srv.Close()
	before := prev.Conformance
	down := step(4)
	if down.Status != msg.StatusDown || down.Conformance == nil || !down.Conformance.CheckedAt.Equal(before.CheckedAt) {
		t.Fatalf("a down probe: status %s conformance %+v, want the previous one carried", down.Status, down.Conformance)
	}
	if r, _ := down.Conformance.Rule(conformance.RuleBatchRefused); r.Outcome != msg.ConformanceFail {
		t.Errorf("a down probe lost the conformance it carried: %+v", r)
	}
	srv2 := serve(t, s)
	ep.URL = srv2.URL
	s.broken.Store("")
	step(5)
	step(6)
	if kinds[model.EventConformanceRegressed] != 1 || kinds[model.EventConformanceRestored] != 1 {
		t.Errorf("events %v, want one regression and one restore", kinds)
	}
}

// TestActiveChecksAreNotTheServersLatency: the extra requests are left out
// of the probe's total.
func TestActiveChecksAreNotTheServersLatency(t *testing.T) {
	s, _ := newConfServer(t, Version20251125, "")
	slow := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Origin") != "" {
			time.Sleep(300 * time.Millisecond) // a slow extra answer, the thing measured
		}
		s.ServeHTTP(w, r)
	}))
	res := testProber(t, nil).Run2(endpoint(slow.URL), testSlot, nil)
	if res.Conformance.ActiveAt.IsZero() {
		t.Fatal("active checks did not run")
	}
	if total := res.Phases[msg.PhaseTotal]; total >= 0.3 {
		t.Errorf("total %.3fs includes the active checks", total)
	}
}

// BenchmarkConformanceCPURatio runs probers with conformance on and off
// alternately against the same go-sdk server (a tool to list, JSON
// answers), each carrying its previous result as the worker does, and
// reports the CPU per probe of each and their ratio (target ≤ 1.10). With
// the default period the active requests are sent by the first probe
// only: the steady state, which is what a fleet pays. active/… is a probe
// that sends them, once an hour per endpoint.
//
//	go test ./prober -run '^$' -bench 'ConformanceCPURatio' -benchtime 2000x
func BenchmarkConformanceCPURatio(b *testing.B) {
	url := benchServer(b) + "/tools"
	on, off := testProber(b, nil), testProber(b, func(o *Options) { o.ConformanceEvery = -1 })
	active := testProber(b, func(o *Options) { o.ConformanceEvery = time.Nanosecond })
	ep := endpoint(url)
	ep.Transport = TransportStreamableHTTP
	run := func(p *Prober, prev *msg.ProbeResult, slot time.Time) *msg.ProbeResult {
		res, _ := p.Run(context.Background(), ep, msg.NewProbeCommand(ep.ID, slot), prev)
		if res.Class != ClassOK || res.ToolCount != 1 {
			b.Fatalf("probe: %s %s tools %d", res.Class, res.Error, res.ToolCount)
		}
		return &res
	}
	seed := &msg.ProbeResult{Status: msg.StatusUp, ProtocolVersion: Version20251125, Transport: TransportStreamableHTTP}
	prevOn, prevOff, prevActive := run(on, seed, testSlot), run(off, seed, testSlot), run(active, seed, testSlot)
	if prevOn.Conformance == nil || prevOff.Conformance != nil {
		b.Fatal("conformance not on and off")
	}
	rounds := max(b.N, 300)
	var tOn, tOff, tActive time.Duration
	for i := range rounds {
		slot := testSlot.Add(time.Duration(i+1) * time.Second)
		t0 := cpuTime()
		prevOn = run(on, prevOn, slot)
		t1 := cpuTime()
		prevOff = run(off, prevOff, slot)
		t2 := cpuTime()
		prevActive = run(active, prevActive, slot)
		tOn, tOff, tActive = tOn+t1-t0, tOff+t2-t1, tActive+cpuTime()-t2
	}
	b.ReportMetric(float64(tOn)/float64(rounds), "on-cpu-ns/probe")
	b.ReportMetric(float64(tOff)/float64(rounds), "off-cpu-ns/probe")
	b.ReportMetric(float64(tOn)/float64(tOff), "ratio")
	b.ReportMetric(float64(tActive)/float64(tOff), "active/off")
}
