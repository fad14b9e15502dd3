package conformance

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/msg"
)

var slot = time.Date(2026, 11, 29, 13, 0, 0, 0, time.UTC)

func TestRuleCatalogIsWellFormed(t *testing.T) {
	seen := map[string]bool{}
	for _, r := range Rules() {
		switch {
		case seen[r.ID]:
			t.Errorf("rule %s twice", r.ID)
		case r.ID == "" || strings.ToLower(r.ID) != r.ID || strings.ContainsAny(r.ID, " ,@:|"):
			t.Errorf("rule ID %q is not a lower-case token", r.ID)
		case len(r.Eras) == 0 || r.Title == "" || r.check == nil:
			t.Errorf("rule %s lacks eras, a title or a check", r.ID)
		case !strings.HasPrefix(r.Spec, specBase):
			t.Errorf("rule %s links %q, not a spec section", r.ID, r.Spec)
		}
		seen[r.ID] = true
		for _, e := range r.Eras {
			if !HasSchema(e, DefListToolsResult) {
				t.Errorf("rule %s names era %s, which has no schema", r.ID, e)
			}
		}
	}
	if len(seen) > msg.MaxConformanceRules {
		t.Errorf("%d rules, over msg.MaxConformanceRules", len(seen))
	}
}

func healthy2026() Observation {
	return Observation{
		Era:         Era20260728,
		Discover:    []byte(validResult(Era20260728, DefDiscoverResult)),
		ToolPages:   []json.RawMessage{json.RawMessage(validResult(Era20260728, DefListToolsResult))},
		ToolsListed: true,
	}
}

// TestEvaluateCarriesActiveRulesBetweenTheirChecks: a probe that sends no
// extra requests keeps the active rules' last outcomes and ActiveAt, and
// judges the passive ones afresh; another era starts them over.
func TestEvaluateCarriesActiveRulesBetweenTheirChecks(t *testing.T) {
	o := healthy2026()
	o.ToolPages = nil
	o.Active = &Active{Batch: Answer{Sent: true, Status: 200, ContentType: "application/json", Body: []byte(`[{"jsonrpc":"2.0","id":1,"result":{}}]`)}}
	first := Evaluate(o, slot)
	if r, _ := first.Rule(RuleBatchRefused); r.Outcome != msg.ConformanceFail {
		t.Fatalf("batch answered with a batch: %+v", r)
	}
	if r, _ := first.Rule(RuleHeaderMismatch); r.Outcome != msg.ConformanceNA {
		t.Errorf("a request not sent: %+v", r)
	}
	next := healthy2026()
	next.Prev = &first
	second := Evaluate(next, slot.Add(time.Minute))
	if r, _ := second.Rule(RuleBatchRefused); r.Outcome != msg.ConformanceFail || !second.ActiveAt.Equal(slot) {
		t.Errorf("not carried: %+v, activeAt %v", r, second.ActiveAt)
	}
	if r, _ := second.Rule(RuleToolsListSchema); r.Outcome != msg.ConformancePass {
		t.Errorf("passive rule not judged afresh: %+v", r)
	}
	other := Observation{Era: Era20251125, Initialize: []byte(validResult(Era20251125, DefInitializeResult)), Prev: &first}
	third := Evaluate(other, slot.Add(2*time.Minute))
	if r, _ := third.Rule(RuleBatchRefused); r.Outcome != msg.ConformanceNA || !third.ActiveAt.IsZero() {
		t.Errorf("carried across eras: %+v", r)
	}
	if _, ok := third.Rule(RuleDiscoverSchema); ok {
		t.Error("a rule of another era is in the result")
	}
}

func TestToolOrderIsComparedOnlyForTheSameTools(t *testing.T) {
	page := func(names ...string) json.RawMessage {
		var b strings.Builder
		b.WriteString(`{"resultType":"complete","ttlMs":0,"cacheScope":"public","tools":[`)
		for i, n := range names {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(`{"name":"` + n + `","inputSchema":{"type":"object"}}`)
		}
		b.WriteString(`]}`)
		return json.RawMessage(b.String())
	}
	eval := func(prev *msg.Conformance, pages ...json.RawMessage) msg.Conformance {
		o := healthy2026()
		o.ToolPages, o.Prev = pages, prev
		return Evaluate(o, slot)
	}
	outcome := func(c msg.Conformance) string { r, _ := c.Rule(RuleToolsOrderStable); return r.Outcome }
	a := eval(nil, page("a", "b"), page("c"))
	if outcome(a) != msg.ConformanceNA {
		t.Errorf("first listing: %s", outcome(a))
	}
	if c := eval(&a, page("a"), page("b", "c")); outcome(c) != msg.ConformancePass {
		t.Errorf("same order, other pages: %s", outcome(c))
	}
	if c := eval(&a, page("c", "a", "b")); outcome(c) != msg.ConformanceFail {
		t.Errorf("same tools reordered: %s", outcome(c))
	}
	if c := eval(&a, page("d", "a")); outcome(c) != msg.ConformanceNA {
		t.Errorf("other tools: %s", outcome(c))
	}
}

func TestEventsOnRegressionAndRestore(t *testing.T) {
	c := func(outcomes ...string) *msg.Conformance {
		ids := []string{RuleBatchRefused, RuleCacheFields, RuleNoSession}
		out := &msg.Conformance{Era: Era20260728}
		for i, o := range outcomes {
			out.Rules = append(out.Rules, msg.RuleResult{ID: ids[i], Outcome: o, Detail: "why " + ids[i]})
		}
		return out
	}
	P, F, N := msg.ConformancePass, msg.ConformanceFail, msg.ConformanceNA
	for _, tc := range []struct {
		name      string
		prev, cur *msg.Conformance
		want      map[string]string // kind → rule IDs
	}{
		{"no previous", nil, c(F, F, F), nil},
		{"steady", c(P, F, N), c(P, F, N), nil},
		{"one regressed", c(P, P, P), c(F, P, P), map[string]string{model.EventConformanceRegressed: RuleBatchRefused}},
		{"two regressed one restored", c(P, P, F), c(F, F, P), map[string]string{model.EventConformanceRegressed: RuleBatchRefused + "," + RuleCacheFields, model.EventConformanceRestored: RuleNoSession}},
		{"n/a to fail is not a regression", c(N, P, P), c(F, P, P), nil},
		{"fail to n/a is not a restore", c(F, P, P), c(N, P, P), nil},
		{"a rule new to the result", c(P), c(P, F), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			evs := Events("run1", tc.prev, tc.cur)
			got := map[string]string{}
			for _, e := range evs {
				got[e.Kind] = strings.TrimSuffix(e.Fingerprint, "@run1")
				if e.Severity != EventSeverity || !model.IsEventKind(e.Kind) || !strings.Contains(e.Message, Era20260728) {
					t.Errorf("event %+v", e)
				}
			}
			if len(got) != len(tc.want) {
				t.Fatalf("events %v, want %v", got, tc.want)
			}
			for k, v := range tc.want {
				if got[k] != v {
					t.Errorf("%s names %q, want %q", k, got[k], v)
				}
			}
		})
	}
}

func TestDueOncePerPeriod(t *testing.T) {
	prev := &msg.Conformance{Era: Era20251125, ActiveAt: slot, Results: "r1"}
	if !Due("ep", nil, Era20251125, "", slot, time.Hour) || !Due("ep", &msg.Conformance{Era: Era20251125}, Era20251125, "", slot, time.Hour) {
		t.Error("never checked: due")
	}
	if !Due("ep", prev, Era20260728, "", slot.Add(time.Minute), time.Hour) {
		t.Error("another era: due")
	}
	if Due("ep", prev, Era20251125, "", slot, -1) {
		t.Error("disabled: due")
	}
	due := 0
	for m := 1; m <= 60; m++ {
		at := slot.Add(time.Duration(m) * time.Minute)
		if Due("ep", prev, Era20251125, "r1", at, time.Hour) {
			due++
			prev = &msg.Conformance{Era: Era20251125, ActiveAt: at, Results: "r1"}
		}
	}
	if due != 1 {
		t.Errorf("due %d times in an hour of minutely probes, want 1", due)
	}
}

// TestDueSoonAfterTheAnswersChange: a deploy changes what the server
// answers, and the active rules (batches, Origin, version headers) are
// checked within minutes of it rather than at the next period; a server
// whose answers change on every probe is checked at most RecheckDivisor
// times a period.
func TestDueSoonAfterTheAnswersChange(t *testing.T) {
	every := time.Hour
	prev := &msg.Conformance{Era: Era20251125, ActiveAt: slot, Results: "before"}
	if Due("ep", prev, Era20251125, "after", slot.Add(every/RecheckDivisor-time.Second), every) {
		t.Error("due before every/RecheckDivisor has passed")
	}
	// For "ep" no period boundary falls in these five minutes: unchanged
	// answers are not due, changed ones are.
	at := slot.Add(every / RecheckDivisor)
	if Due("ep", prev, Era20251125, "before", at, every) {
		t.Fatalf("unchanged answers due %s after the last active round", every/RecheckDivisor)
	}
	if !Due("ep", prev, Era20251125, "after", at, every) {
		t.Errorf("answers changed %s after the last active round: not due", every/RecheckDivisor)
	}
	if Due("ep", prev, Era20251125, "", at, every) || Due("ep", &msg.Conformance{Era: Era20251125, ActiveAt: slot}, Era20251125, "after", at, every) {
		t.Error("due with no digest to compare")
	}
	due := 0
	for m := 1; m <= 60; m++ {
		at := slot.Add(time.Duration(m) * time.Minute)
		if Due("ep", prev, Era20251125, fmt.Sprint("answers-", m), at, every) {
			due++
			prev = &msg.Conformance{Era: Era20251125, ActiveAt: at, Results: fmt.Sprint("answers-", m)}
		}
	}
	if due > RecheckDivisor+1 {
		t.Errorf("due %d times in an hour with answers changing every minute, want at most %d", due, RecheckDivisor+1)
	}
}

func TestBoundScrubsThenCuts(t *testing.T) {
	c := &msg.Conformance{Rules: []msg.RuleResult{{ID: "x", Detail: "token s3cr3t " + strings.Repeat("é", 300)}}}
	Bound(c, func(s string) string { return strings.ReplaceAll(s, "s3cr3t", "[REDACTED]") })
	d := c.Rules[0].Detail
	if strings.Contains(d, "s3cr3t") || !strings.Contains(d, "[REDACTED]") || len(d) > msg.MaxConformanceDetail || !strings.HasSuffix(d, "…") {
		t.Errorf("detail %q (%d bytes)", d, len(d))
	}
}

// TestSchemaRulesAreCarriedWhileTheResultsAreTheSame: validation is the
// costly part, so the same bytes are not validated twice; other bytes are.
func TestSchemaRulesAreCarriedWhileTheResultsAreTheSame(t *testing.T) {
	o := healthy2026()
	first := Evaluate(o, slot)
	if r, _ := first.Rule(RuleToolsListSchema); r.Outcome != msg.ConformancePass || first.Results == "" {
		t.Fatalf("first: %+v, results %q", r, first.Results)
	}
	// A previous outcome that validation would not give shows it was carried.
	marked := first
	marked.Rules = append([]msg.RuleResult(nil), first.Rules...)
	for i := range marked.Rules {
		if marked.Rules[i].ID == RuleToolsListSchema {
			marked.Rules[i] = msg.RuleResult{ID: RuleToolsListSchema, Outcome: msg.ConformanceFail, Detail: "carried"}
		}
	}
	o.Prev = &marked
	second := Evaluate(o, slot.Add(time.Minute))
	if r, _ := second.Rule(RuleToolsListSchema); r.Detail != "carried" {
		t.Errorf("same results validated again: %+v", r)
	}
	o.ToolPages = []json.RawMessage{json.RawMessage(`{"resultType":"complete","ttlMs":1,"cacheScope":"public","tools":[]}`)}
	third := Evaluate(o, slot.Add(time.Minute))
	if r, _ := third.Rule(RuleToolsListSchema); r.Outcome != msg.ConformancePass {
		t.Errorf("other results not validated: %+v", r)
	}
}

// TestLargeChangingResultsAreValidatedAtMostEverySchemaRecheck: results
// over SchemaRecheckBytes that change at every probe (a nonce) run the
// validator once per SchemaRecheck, their outcomes carried between with
// the digest of the results they judged; small ones are validated at every
// change. The validator ran at every probe, over 300 ms of CPU for two
// pages of giant schemas.
func TestLargeChangingResultsAreValidatedAtMostEverySchemaRecheck(t *testing.T) {
	page := func(nonce int, size int) json.RawMessage {
		props := make([]string, 0, size/24)
		for i := 0; len(props)*24 < size; i++ {
			props = append(props, fmt.Sprintf(`"p%d":{"type":"string"}`, i))
		}
		return json.RawMessage(fmt.Sprintf(`{"resultType":"complete","ttlMs":1,"cacheScope":"public","n":%d,"tools":[{"name":"a","inputSchema":{"type":"object","properties":{%s}}}]}`,
			nonce, strings.Join(props, ",")))
	}
	for _, tc := range []struct {
		name      string
		size      int
		validated []bool // at minutes 0, 1, 4, 5, 6
	}{
		{"large", 2 * SchemaRecheckBytes, []bool{true, false, false, true, false}},
		{"small", 1024, []bool{true, true, true, true, true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var prev *msg.Conformance
			for i, m := range []int{0, 1, 4, 5, 6} {
				o := healthy2026()
				o.ToolPages = []json.RawMessage{page(m, tc.size)}
				if prev != nil {
					// An outcome validation would not give shows a carry.
					marked := *prev
					marked.Rules = append([]msg.RuleResult(nil), prev.Rules...)
					for i := range marked.Rules {
						if marked.Rules[i].ID == RuleToolsListSchema {
							marked.Rules[i].Detail = "carried"
						}
					}
					o.Prev = &marked
				}
				at := slot.Add(time.Duration(m) * time.Minute)
				c := Evaluate(o, at)
				r, _ := c.Rule(RuleToolsListSchema)
				if validated := r.Detail != "carried"; validated != tc.validated[i] {
					t.Fatalf("minute %d: validated %v (%+v), want %v", m, validated, r, tc.validated[i])
				}
				if r.Detail != "carried" && (r.Outcome != msg.ConformancePass || !c.SchemaAt.Equal(at) || c.Results != ResultsDigest(o)) {
					t.Fatalf("minute %d: validated %+v, schemaAt %v, results %s; want pass at %v over these results", m, r, c.SchemaAt, c.Results, at)
				}
				if r.Detail == "carried" && (c.Results != prev.Results || !c.SchemaAt.Equal(prev.SchemaAt)) {
					t.Fatalf("minute %d: carried with results %s at %v, want the validated %s at %v", m, c.Results, c.SchemaAt, prev.Results, prev.SchemaAt)
				}
				prev = &c
			}
		})
	}
}

// TestDeprecatedFeatureAndErrorCodeRules judges the answers the rules of
// removed methods and fixed error codes read, as a table.
func TestDeprecatedFeatureAndErrorCodeRules(t *testing.T) {
	js := func(status int, body string) Answer {
		return Answer{Sent: true, Status: status, ContentType: "application/json", Body: []byte(body)}
	}
	sse := func(status int, body string) Answer {
		return Answer{Sent: true, Status: status, ContentType: "text/event-stream", Body: []byte("id: 1\ndata:\n\nevent: message\ndata: " + body + "\n")}
	}
	notFound := js(404, `{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"method not found"}}`)
	answered := sse(200, `{"jsonrpc":"2.0","id":1,"result":{}}`)
	mismatch := js(400, `{"jsonrpc":"2.0","id":1,"error":{"code":-32020,"message":"header mismatch"}}`)
	future := js(400, `{"jsonrpc":"2.0","id":1,"error":{"code":-32022,"message":"unsupported","data":{"requested":"2099-01-01","supported":["2025-11-25","2026-07-28"]}}}`)
	P, F, N := msg.ConformancePass, msg.ConformanceFail, msg.ConformanceNA
	for _, tc := range []struct {
		name, rule string
		active     Active
		want       string
	}{
		{"ping not found", RulePingRemoved, Active{Ping: notFound}, P},
		{"ping answered", RulePingRemoved, Active{Ping: answered}, F},
		{"ping refused at HTTP", RulePingRemoved, Active{Ping: js(400, `bad request`)}, P},
		{"ping not sent", RulePingRemoved, Active{}, N},
		{"setLevel not found", RuleSetLevelRemoved, Active{SetLevel: notFound}, P},
		{"setLevel answered", RuleSetLevelRemoved, Active{SetLevel: answered}, F},
		{"mismatch -32020", RuleHeaderMismatchCode, Active{HeaderMismatch: mismatch}, P},
		{"mismatch another code", RuleHeaderMismatchCode, Active{HeaderMismatch: js(400, `{"jsonrpc":"2.0","id":1,"error":{"code":-32600,"message":"x"}}`)}, F},
		{"mismatch plain text", RuleHeaderMismatchCode, Active{HeaderMismatch: js(400, `Bad Request`)}, F},
		{"mismatch no answer", RuleHeaderMismatchCode, Active{HeaderMismatch: Answer{Sent: true, Err: "timeout"}}, N},
		{"future -32022", RuleUnsupportedVersion, Active{BadMetaVersion: future}, P},
		{"future -32022 over 200", RuleUnsupportedVersion, Active{BadMetaVersion: js(200, string(future.Body))}, F},
		{"future without data", RuleUnsupportedVersion, Active{BadMetaVersion: js(400, `{"jsonrpc":"2.0","id":1,"error":{"code":-32022,"message":"x"}}`)}, F},
		{"future answered", RuleUnsupportedVersion, Active{BadMetaVersion: answered}, F},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := healthy2026()
			o.Active = &tc.active
			c := Evaluate(o, slot)
			r, _ := c.Rule(tc.rule)
			if r.Outcome != tc.want {
				t.Errorf("%s: %s %q, want %s", tc.rule, r.Outcome, r.Detail, tc.want)
			}
		})
	}
	legacy := Observation{Era: Era20250618, Initialize: []byte(validResult(Era20250618, DefInitializeResult)), LegacySSE: true}
	c := Evaluate(legacy, slot)
	if r, _ := c.Rule(RuleStreamableHTTP); r.Outcome != F {
		t.Errorf("a 2025-06-18 server over HTTP+SSE: %+v", r)
	}
	legacy.LegacySSE = false
	c = Evaluate(legacy, slot)
	if r, _ := c.Rule(RuleStreamableHTTP); r.Outcome != P {
		t.Errorf("a 2025-06-18 server over Streamable HTTP: %+v", r)
	}
}
