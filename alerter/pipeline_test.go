package alerter

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/mcpmon/mcpmon/aggregator"
	"github.com/mcpmon/mcpmon/alerter/notify"
	"github.com/mcpmon/mcpmon/pkg/metrics"
	"github.com/mcpmon/mcpmon/pkg/msg"
	"github.com/mcpmon/mcpmon/pkg/queue"
)

// queueSender publishes verdicts straight to the verdicts queue.
type queueSender struct{ q queue.Queue }

func (s queueSender) Publish(ctx context.Context, in queue.SendInput) (string, error) {
	res, err := s.q.Send(ctx, []queue.SendInput{in})
	if err != nil {
		return "", err
	}
	return res[0].MessageID, res[0].Err
}

// pipeline wires results → aggregator → verdicts → alerter on the env's
// store and queues.
type pipeline struct {
	*env
	results queue.Queue
	agg     *aggregator.Aggregator
	alr     *Alerter
	reg     *prometheus.Registry
}

func newPipeline(t *testing.T) *pipeline { return newPipelineOn(t, newEnv(t)) }

func newPipelineOn(t *testing.T, e *env) *pipeline {
	reg := prometheus.NewRegistry()
	delay := metrics.NewPipelineDelay(reg) // one per process, as the daemon builds it
	agg, err := aggregator.New(aggregator.Options{Store: e.st, Publisher: queueSender{e.q}, Window: time.Minute, Grace: 10 * time.Second,
		Clock: e.clk, Metrics: aggregator.NewMetrics(reg, delay)})
	if err != nil {
		t.Fatal(err)
	}
	p := &pipeline{env: e, results: e.broker.Queue(msg.QueueResults), agg: agg, reg: reg}
	p.alr = e.alerter("a", func(o *Options) { o.Metrics = NewMetrics(reg, delay) })
	return p
}

func result(ep, region string, window int, status msg.Status) msg.ProbeResult {
	slot := win(window).Add(5 * time.Second)
	r := msg.ProbeResult{Schema: msg.SchemaVersion, EndpointID: ep, ProbeRunID: msg.ProbeRunID(ep, slot), Slot: slot, Region: region,
		StartedAt: slot, FinishedAt: slot.Add(time.Second), Status: status, Class: "ok"}
	if region != "" {
		// The results queue dedups on <endpointId>-<probeRunId>: probers in
		// several regions must make their run IDs differ, or SQS keeps only
		// the first region's result for five minutes.
		r.ProbeRunID += "-" + region
	}
	if status == msg.StatusDown {
		r.Class, r.Error = "timeout", "deadline exceeded"
	}
	return r
}

func (p *pipeline) sendResult(r msg.ProbeResult) {
	p.t.Helper()
	res, err := p.results.Send(p.ctx, []queue.SendInput{{GroupID: r.GroupID(), DedupID: r.DedupID(), Body: r.Body()}})
	if err != nil || res[0].Err != nil {
		p.t.Fatal(err, res)
	}
}

// window runs one window through the pipeline: results in, clock past the
// window's end and grace, aggregator tick, alerter.
func (p *pipeline) window(i int, rs ...msg.ProbeResult) {
	p.t.Helper()
	for _, r := range rs {
		p.sendResult(r)
	}
	if errs := p.pumpQ(p.results, p.agg.Handle); errs != nil {
		p.t.Fatal(errs)
	}
	p.clk.Set(win(i + 1).Add(10 * time.Second))
	if err := p.agg.Tick(p.ctx); err != nil {
		p.t.Fatal(err)
	}
	if errs := p.pump(p.alr.Handle); errs != nil {
		p.t.Fatal(errs)
	}
}

func TestRegions(t *testing.T) { testRegions(t, newPipeline(t)) }

func testRegions(t *testing.T, p *pipeline) {
	p.endpoint("ep1", nil, nil)
	for i := range 5 { // two of three regions up: regional, no incident
		p.window(i, result("ep1", "eu", i, msg.StatusUp), result("ep1", "us", i, msg.StatusUp), result("ep1", "ap", i, msg.StatusDown))
	}
	if n := len(p.incidents("ep1")); n != 0 || len(p.rcv.kinds()) != 0 {
		t.Fatalf("%d incidents, alerts %v with two of three regions up, want none", n, p.rcv.kinds())
	}
	last, err := p.st.LastVerdict(p.ctx, "ep1")
	if err != nil || last.State != msg.StateRegional || !slices.Equal(last.FailingRegions, []string{"ap"}) {
		t.Fatalf("last verdict %+v %v, want regional naming ap", last, err)
	}
	for i := 5; i < 10; i++ { // two of three down: one incident
		p.window(i, result("ep1", "eu", i, msg.StatusDown), result("ep1", "us", i, msg.StatusUp), result("ep1", "ap", i, msg.StatusDown))
	}
	if incs := p.incidents("ep1"); len(incs) != 1 || incs[0].ID != msg.IncidentID("ep1", win(6)) {
		t.Fatalf("incidents %+v, want one opened at window 6", incs)
	}
	if got := p.rcv.kinds(); !slices.Equal(got, []string{"open"}) {
		t.Fatalf("alerts %v, want one open", got)
	}
	if err := metrics.Lint(p.reg); err != nil {
		t.Fatal(err)
	}
	if got := testutil.ToFloat64(p.alr.m.Alerts.WithLabelValues("hook", "open", notify.OutcomeSent)); got != 1 {
		t.Fatalf("alerts_total{sent} = %v, want 1", got)
	}
}

// TestBeyondTheDedupWindow re-sends a result and a verdict with their
// original dedup IDs more than five minutes later: the queue accepts both as
// new messages, and neither has a second effect.
func TestBeyondTheDedupWindow(t *testing.T) { testBeyondTheDedupWindow(t, newPipeline(t)) }

func testBeyondTheDedupWindow(t *testing.T, p *pipeline) {
	p.endpoint("ep1", nil, nil)
	r0, r1 := result("ep1", "", 0, msg.StatusDown), result("ep1", "", 1, msg.StatusDown)
	p.window(0, r0)
	p.window(1, r1)
	if got := p.rcv.kinds(); !slices.Equal(got, []string{"open"}) {
		t.Fatalf("alerts %v, want [open]", got)
	}
	v1, err := p.st.LastVerdict(p.ctx, "ep1")
	if err != nil {
		t.Fatal(err)
	}

	p.clk.Advance(queue.DedupWindow + time.Minute)
	p.sendResult(r1)
	res, err := p.q.Send(p.ctx, []queue.SendInput{{GroupID: v1.GroupID(), DedupID: v1.DedupID(), Body: v1.Body()}})
	if err != nil || res[0].Err != nil {
		t.Fatal(err, res)
	}
	if errs := p.pumpQ(p.results, p.agg.Handle); errs != nil {
		t.Fatal(errs)
	}
	if err := p.agg.Tick(p.ctx); err != nil {
		t.Fatal(err)
	}
	if errs := p.pump(p.alr.Handle); errs != nil {
		t.Fatal(errs)
	}
	hist, err := p.st.ListVerdicts(p.ctx, "ep1", 10)
	if err != nil || len(hist) != 2 {
		t.Fatalf("verdict history %d %v, want still 2: no second verdict", len(hist), err)
	}
	if got := p.rcv.kinds(); !slices.Equal(got, []string{"open"}) {
		t.Fatalf("alerts %v, want still one open: no second alert", got)
	}
	if got := testutil.ToFloat64(p.agg.Metrics().ResultsLate); got != 1 {
		t.Fatalf("results_late_total = %v, want 1", got)
	}
}
