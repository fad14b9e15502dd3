package daemon

import (
	"context"
	"fmt"
	"slices"

	"github.com/mcpmon/mcpmon/alerter"
	"github.com/mcpmon/mcpmon/pkg/config"
	"github.com/mcpmon/mcpmon/pkg/msg"
	"github.com/mcpmon/mcpmon/pkg/queue"
	"github.com/mcpmon/mcpmon/pkg/scheduler"
	"github.com/mcpmon/mcpmon/prober"
)

// Regions in a process. The region set is configured (--regions, the same
// on every role); see README-snippet.md for why configuration, not
// heartbeats, decides which queues exist. Without a set there is one
// commands queue, "commands", consumed by every prober whatever its
// --region label, exactly as before regions existed.

// commandQueues are the commands queues of a region set: one per region,
// or the single one without a set.
func commandQueues(regions []string) []string {
	if len(regions) == 0 {
		return []string{msg.CommandsQueue("")}
	}
	qs := make([]string, 0, len(regions))
	for _, r := range regions {
		qs = append(qs, msg.CommandsQueue(r))
	}
	return qs
}

// sendsCommands reports whether use sends to a commands queue (the
// API/scheduler role).
func sendsCommands(use RoleQueues, regions []string) bool {
	return slices.ContainsFunc(commandQueues(regions), func(q string) bool { return use.Sends[q] })
}

// proberRegion is one in-process prober: the region label it puts on its
// results and the commands queue it consumes.
type proberRegion struct {
	region, queue string
}

// proberRegions are the probers role r runs: with a region set, `run`
// runs one per region and `prober` one for its --region; without one a
// single prober labelled region consumes the one commands queue.
func proberRegions(r Role, regions []string, region string) []proberRegion {
	switch {
	case len(regions) == 0:
		return []proberRegion{{region: region, queue: msg.CommandsQueue("")}}
	case r == RoleAll:
		out := make([]proberRegion, 0, len(regions))
		for _, reg := range regions {
			out = append(out, proberRegion{region: reg, queue: msg.CommandsQueue(reg)})
		}
		return out
	}
	return []proberRegion{{region: region, queue: msg.CommandsQueue(region)}}
}

// checkRegions refuses a prober whose --region is outside the set: it
// would consume a queue nobody sends to.
func checkRegions(role Role, o config.Options) error {
	if role == RoleProber && len(o.Regions) > 0 && !slices.Contains(o.Regions, o.Region) {
		return usageError{fmt.Errorf("--region %q is not in --regions %v: a prober consumes its own region's commands queue, so give it one of them", o.Region, o.Regions)}
	}
	return nil
}

// newScheduler builds the API role's scheduler: publishing to the one
// commands queue, or fanning each slot out to every due region's queue,
// and agent locations' slots to locs (agents.go).
func (d *Daemon) newScheduler(qm *queue.Metrics, locs scheduler.LocationSink) *scheduler.Scheduler {
	opts := scheduler.Options{Clock: d.clk, Logger: d.log, Metrics: scheduler.NewMetrics(d.reg), Locations: locs}
	if len(d.opts.Regions) == 0 {
		return scheduler.New(d.publisher(msg.CommandsQueue(""), qm), opts)
	}
	for _, r := range d.opts.Regions {
		opts.Regions = append(opts.Regions, scheduler.Region{Name: r, Sender: d.publisher(msg.CommandsQueue(r), qm)})
	}
	return scheduler.New(nil, opts)
}

// startProbers starts the role's probers (proberRegions), each consuming
// its region's commands queue and labelling its results with its region,
// and, with --canary-url, each prober's canary (canary.go).
// They share one set of metrics: a registry takes each family once.
func (d *Daemon) startProbers(ctx context.Context, qm *queue.Metrics, fold queue.Handler) error {
	o := d.opts
	pm := forgetting(&d.prune, prober.NewMetrics(d.reg))
	wm := prober.NewWorkerMetrics(d.reg)
	cm := prober.NewCanaryMetrics(d.reg)
	var notices prober.BlindNotifier
	if len(o.CanaryURLs) > 0 {
		var err error
		if notices, err = d.blindNotices(); err != nil {
			return err
		}
	}
	if err := d.startTracing(ctx); err != nil {
		return err
	}
	results := d.resultsPublisher(qm, fold)
	prs := proberRegions(d.role, o.Regions, o.Region)
	if len(o.Regions) > 0 {
		var names []string
		for _, pr := range prs {
			names = append(names, pr.region)
		}
		d.loop(ctx, "prober heartbeat", func(ctx context.Context) error { return d.beat(ctx, names) })
	}
	for _, pr := range prs {
		po := prober.Options{
			AllowPrivateTargets: o.AllowPrivateTargets,
			AllowedNetworks:     o.TargetNetworks(),
			Region:              pr.region,
			RegionalMemory:      len(o.Regions) > 0,
			Logger:              d.log,
			Metrics:             pm,
			Clock:               d.clk,
			Catalogs:            d.st,
			ClientName:          "mcpmon",
			ClientVersion:       Version,
			Tracer:              d.tracing.Provider(),
		}
		if d.proberOpts != nil {
			d.proberOpts(pr.region, &po)
		}
		p := prober.New(po)
		wo := prober.WorkerOptions{Latest: d.st, Logger: d.log, Clock: d.clk, Metrics: wm, Slots: o.ProbeConcurrency}
		cm.Precreate(pr.region)
		if len(o.CanaryURLs) > 0 {
			c, err := prober.NewCanary(p, prober.CanaryOptions{URLs: o.CanaryURLs, Interval: o.CanaryInterval, Timeout: o.CanaryTimeout,
				Notifier: notices, Metrics: cm, Logger: d.log})
			if err != nil {
				return usageError{fmt.Errorf("--canary-url: %w", err)}
			}
			wo.Canary = c
			d.loop(ctx, "canary "+pr.region, c.Run)
		}
		w := prober.NewWorker(p, d.st, results, wo)
		d.consume(ctx, pr.queue, w.Handle, o.ProbeConcurrency, qm)
	}
	return nil
}

// resultsPublisher is where the probers' results go, and the API's
// agent results (agentResults): the results queue, or, in a process that
// also aggregates (fold is its handler) on the embedded queue, the
// aggregator's handler itself (queue.Handoff), the queue only when that
// fails. The embedded queue lives in the store's
// file, so a result through it cost a send, a receive and a delete on top
// of the fold's one write. On SQS every result goes through the queue,
// which is what spreads the folding over the aggregator replicas.
func (d *Daemon) resultsPublisher(qm *queue.Metrics, fold queue.Handler) prober.ResultPublisher {
	pub := d.publisher(msg.QueueResults, qm)
	if fold == nil || d.qs.remote {
		return pub
	}
	if d.wrap != nil {
		fold = d.wrap(msg.QueueResults, fold)
	}
	return queue.Handoff{Queue: msg.QueueResults, Handler: fold, Fallback: pub, Metrics: qm, Logger: d.log, Now: d.clk.Now}
}

// blindNotices is where a blind prober's notices go: the operator's
// global sinks, through an alerter of this process's own (a prober-only
// process has no other), sharing the store's ledger with every alerter.
// nil without global sinks.
func (d *Daemon) blindNotices() (prober.BlindNotifier, error) {
	set, err := d.sinks()
	if err != nil {
		return nil, usageError{err}
	}
	if len(set.global) == 0 {
		return nil, nil
	}
	al, err := alerter.New(alerter.Options{Store: d.st, Sinks: set.global, Clock: d.clk, Logger: d.log,
		Owner: d.opts.ReplicaID, Lease: d.opts.ClaimLease, GiveUpAfter: d.opts.SinkGiveUpAfter})
	if err != nil {
		return nil, fmt.Errorf("blindness notices: %w", err)
	}
	return al, nil
}
