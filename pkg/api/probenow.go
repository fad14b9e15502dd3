package api

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"

	apiv1 "github.com/mcpmon/mcpmon/pkg/api/v1"
	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/msg"
)

// ProbeRequester asks for one probe of an endpoint outside its schedule.
// *scheduler.Scheduler implements it: the command goes to the same
// commands queues (one per due region) a scheduled slot's does.
type ProbeRequester interface {
	ProbeNow(ctx context.Context, ep model.Endpoint, slot time.Time) error
}

const (
	// probeWaitMargin is what POST /v1/endpoints/{id}/probe waits beyond
	// the endpoint's timeout for the result: the command's time in the
	// queue and the prober's store write.
	probeWaitMargin = 5 * time.Second
	// probePollFirst and probePollMax pace the reads of the latest result
	// while the probe runs: soon for a fast target, then at most this
	// often, so one waiting request costs a handful of store reads a second.
	// probeWriteSlack is the time left to write the answer after the wait.
	probeWriteSlack = 10 * time.Second
	probePollFirst  = 25 * time.Millisecond
	probePollMax    = 500 * time.Millisecond
)

// probeEndpoint serves POST /v1/endpoints/{id}/probe: it asks for a probe
// of the tenant's endpoint for the current whole second, through the
// pipeline a scheduled slot takes, and waits (the endpoint's timeout plus
// probeWaitMargin at most) until the latest result carries that slot's run
// ID. 200 with the result, or 202 with the run ID and the endpoint's
// Location to read it from later. The run ID is the slot's, so two calls in
// one second ask for one probe and both see its result.
func (s *server) probeEndpoint(w http.ResponseWriter, r *http.Request) {
	id := chi.URLParam(r, "id")
	if p := s.readNoInput(w, r); p != nil {
		writeProblem(w, r, p)
		return
	}
	e, p := s.endpointOf(r, id)
	if p != nil {
		writeProblem(w, r, p)
		return
	}
	if e.Paused {
		writeProblem(w, r, problemf(http.StatusConflict, apiv1.TypeEndpointPaused,
			"endpoint %s is paused; resume it (PATCH {\"paused\": false}) to probe it", id))
		return
	}
	if s.probes == nil {
		writeProblem(w, r, problemf(http.StatusServiceUnavailable, "", "this server cannot probe on demand"))
		return
	}
	slot := s.clock.Now().UTC().Truncate(time.Second)
	runID := msg.ProbeRunID(e.ID, slot)
	if err := s.probes.ProbeNow(r.Context(), e, slot); err != nil {
		s.log.Warn("probe on demand not queued", "endpoint", id, "err", err)
		writeProblem(w, r, problemf(http.StatusServiceUnavailable, "", "the probe of endpoint %s could not be queued; try again", id))
		return
	}
	wait := e.Timeout
	if wait <= 0 {
		wait = apiv1.DefaultTimeout // a record stored without one is probed with the default
	}
	wait += probeWaitMargin
	// The wait may outlast the server's write timeout (--http-write-timeout,
	// 60 s by default; an endpoint's timeout is up to 2 m): this response
	// gets its own deadline. A writer that cannot set one keeps the server's.
	_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(wait + probeWriteSlack))
	res, err := s.awaitResult(r.Context(), id, runID, wait)
	switch {
	case err == nil:
		writeJSON(w, http.StatusOK, resultView(res))
	case errors.Is(err, context.DeadlineExceeded):
		loc := "/v1/endpoints/" + id
		w.Header().Set("Location", loc)
		writeJSON(w, http.StatusAccepted, apiv1.ProbeAccepted{ProbeRunID: runID, Slot: slot, Location: loc})
	case r.Context().Err() != nil:
		// The client hung up; the probe goes on without it.
	default:
		writeProblem(w, r, s.storeProblem(r, err, "latest result of endpoint "+id))
	}
}

// awaitResult reads the endpoint's latest result until it carries runID,
// for at most wait: context.DeadlineExceeded when it did not arrive.
func (s *server) awaitResult(ctx context.Context, id, runID string, wait time.Duration) (msg.ProbeResult, error) {
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	delay := probePollFirst
	t := time.NewTimer(delay)
	defer t.Stop()
	for {
		res, err := s.store.LatestResult(ctx, id)
		switch {
		case err == nil && res.ProbeRunID == runID:
			return res, nil
		case err != nil && !errors.Is(err, model.ErrNotFound) && ctx.Err() == nil:
			return msg.ProbeResult{}, err
		}
		select {
		case <-ctx.Done():
			return msg.ProbeResult{}, ctx.Err()
		case <-t.C:
		}
		delay = min(2*delay, probePollMax)
		t.Reset(delay)
	}
}
