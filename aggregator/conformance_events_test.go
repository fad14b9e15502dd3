package aggregator

import (
	"strings"
	"testing"
	"time"

	"github.com/mcpmon/mcpmon/pkg/conformance"
	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/msg"
	"github.com/mcpmon/mcpmon/pkg/store"
)

// TestConformanceEventsBecomeDurableAsTheProberRaisedThem: a result's
// conformance_regressed is one change event of that kind and severity,
// the same for a redelivered result, another for the next regression of
// the same rule.
func TestConformanceEventsBecomeDurableAsTheProberRaisedThem(t *testing.T) {
	pass := &msg.Conformance{Era: conformance.Era20251125, Rules: []msg.RuleResult{{ID: conformance.RuleBatchRefused, Outcome: msg.ConformancePass}}}
	fail := &msg.Conformance{Era: conformance.Era20251125, Rules: []msg.RuleResult{{ID: conformance.RuleBatchRefused, Outcome: msg.ConformanceFail, Detail: "a batch was answered HTTP 200 with a batch of responses"}}}
	result := func(run string, slot time.Time) msg.ProbeResult {
		return msg.ProbeResult{EndpointID: "ep", ProbeRunID: run, Slot: slot, Status: msg.StatusUp, Conformance: fail, Events: conformance.Events(run, pass, fail)}
	}
	first := ChangeEvents(result("run1", w0), 0)
	if len(first) != 1 || first[0].Kind != model.EventConformanceRegressed || first[0].Severity != conformance.EventSeverity ||
		!strings.Contains(string(first[0].Details), conformance.RuleBatchRefused) || !strings.Contains(first[0].Message, "batch") {
		t.Fatalf("events %+v", first)
	}
	if again := ChangeEvents(result("run1", w0), 0); again[0].Fingerprint != first[0].Fingerprint {
		t.Error("a redelivered result is another event")
	}
	if later := ChangeEvents(result("run9", w0.Add(time.Hour)), 0); later[0].Fingerprint == first[0].Fingerprint {
		t.Error("the next regression of the same rule is the same event")
	}
}

// TestWindowKeepsNoConformance: a result that still carries its
// conformance (a prober of before) is folded into its window without it
// — the latest result is its home — and everything a verdict reads stays.
func TestWindowKeepsNoConformance(t *testing.T) {
	e := newAenv(t)
	r := res("", msg.StatusUp, "ok", 0)
	r.Phases = map[string]float64{"total": 0.25}
	r.Conformance = &msg.Conformance{Era: conformance.Era20251125, Rules: []msg.RuleResult{{ID: conformance.RulePingAnswered, Outcome: msg.ConformancePass}}}
	e.sendResult(r)
	e.consume()
	got, err := e.st.WindowResults(e.ctx, store.WindowRef{EndpointID: "ep", Window: w0})
	if err != nil || len(got) != 1 {
		t.Fatalf("window results %+v %v, want one", got, err)
	}
	if got[0].Conformance != nil {
		t.Errorf("the window kept the conformance: %+v", got[0].Conformance)
	}
	if got[0].ProbeRunID != r.ProbeRunID || got[0].Phases["total"] != 0.25 || got[0].Status != msg.StatusUp {
		t.Errorf("window result %+v, want the result's run, status and phases", got[0])
	}
}
