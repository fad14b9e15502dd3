package prober

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/mcpmon/mcpmon/pkg/msg"
	"github.com/mcpmon/mcpmon/pkg/queue"
	"github.com/mcpmon/mcpmon/pkg/store"
)

// EndpointSource loads an endpoint; store.Endpoints satisfies it.
type EndpointSource interface {
	GetEndpoint(ctx context.Context, id string) (store.Endpoint, error)
}

// ResultPublisher sends a result to the results queue; *queue.Publisher
// satisfies it.
type ResultPublisher interface {
	Publish(ctx context.Context, in queue.SendInput) (string, error)
}

// LatestResultStore keeps each endpoint's latest result: the previous one
// tells the probe which era to try first and whether the protocol version
// changed. store.Results satisfies it.
type LatestResultStore interface {
	LatestResult(ctx context.Context, endpointID string) (msg.ProbeResult, error)
	PutLatestResult(ctx context.Context, r msg.ProbeResult) error
}

// WorkerOptions configure a Worker.
type WorkerOptions struct {
	// Latest is optional: without it there are no version-change events and
	// every auto probe starts with server/discover.
	Latest LatestResultStore
	Logger *slog.Logger
}

// Worker turns commands from the commands queue into results on the results
// queue.
type Worker struct {
	p         *Prober
	endpoints EndpointSource
	pub       ResultPublisher
	latest    LatestResultStore
	log       *slog.Logger
}

// NewWorker returns a Worker.
func NewWorker(p *Prober, endpoints EndpointSource, pub ResultPublisher, opts WorkerOptions) *Worker {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	return &Worker{p: p, endpoints: endpoints, pub: pub, latest: opts.Latest, log: opts.Logger.With("component", "prober-worker")}
}

// Handle is a queue.Handler for the commands queue. It returns nil when the
// command is done (probed and published, or its endpoint deleted) and an
// error to leave it for redelivery. A redelivered command probes again and
// publishes under the same dedup ID (<endpointId>-<probeRunId>, the run ID
// derived from the command), so the results queue drops the duplicate.
func (w *Worker) Handle(ctx context.Context, m queue.Message) error {
	var cmd msg.ProbeCommand
	if err := msg.Decode(m.Body, &cmd); err != nil {
		return fmt.Errorf("prober: command message %s: %w", m.ID, err)
	}
	ep, err := w.endpoints.GetEndpoint(ctx, cmd.EndpointID)
	if errors.Is(err, store.ErrNotFound) {
		w.log.Info("endpoint deleted; dropping probe command", "endpoint", cmd.EndpointID, "slot", cmd.Slot)
		return nil
	}
	if err != nil {
		return fmt.Errorf("prober: load endpoint %s: %w", cmd.EndpointID, err)
	}
	if ep.Paused {
		w.log.Debug("endpoint paused; dropping probe command", "endpoint", ep.ID, "slot", cmd.Slot)
		return nil
	}
	var prev *msg.ProbeResult
	if w.latest != nil {
		pr, err := w.latest.LatestResult(ctx, ep.ID)
		switch {
		case err == nil && pr.Slot.Before(cmd.Slot):
			prev = &pr
		case err != nil && !errors.Is(err, store.ErrNotFound):
			w.log.Warn("read latest result failed; probing without history", "endpoint", ep.ID, "err", err)
		}
	}
	res := w.p.ProbeAfter(ctx, ep, cmd, prev)
	if err := ctx.Err(); err != nil {
		// Shutting down mid-probe: the outcome says nothing about the
		// endpoint. Leave the command for redelivery.
		return fmt.Errorf("prober: probe of %s interrupted: %w", ep.ID, err)
	}
	// The latest result is stored before publishing so the API shows it no
	// later than the aggregator sees it; a redelivery overwrites it.
	if w.latest != nil {
		if err := w.latest.PutLatestResult(ctx, res); err != nil {
			w.log.Warn("store latest result failed", "endpoint", ep.ID, "err", err)
		}
	}
	if _, err := w.pub.Publish(ctx, queue.SendInput{GroupID: res.GroupID(), DedupID: res.DedupID(), Body: res.Body()}); err != nil {
		return fmt.Errorf("prober: publish result %s: %w", res.DedupID(), err)
	}
	return nil
}

// Run consumes the commands queue until ctx is done.
func (w *Worker) Run(ctx context.Context, q queue.Queue, opts queue.ConsumerOptions) error {
	if opts.Logger == nil {
		opts.Logger = w.log
	}
	return queue.Consume(ctx, q, w.Handle, opts)
}
