package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-chi/chi/v5"

	apiv1 "github.com/mcpmon/mcpmon/pkg/api/v1"
	"github.com/mcpmon/mcpmon/pkg/auth"
	"github.com/mcpmon/mcpmon/pkg/clock"
	"github.com/mcpmon/mcpmon/pkg/conformance"
	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/msg"
	"github.com/mcpmon/mcpmon/pkg/queue"
	"github.com/mcpmon/mcpmon/pkg/schedule"
	"github.com/mcpmon/mcpmon/pkg/store"
)

// Agents (`mcpmon agent`) probe from inside their owner's network and talk
// to nothing but this API. An agent is an API key of scope agent bound to
// one location of one tenant; the location is the region "loc-NAME" that
// endpoints name to be probed there (schedule.Location). /v1/agents
// manages those keys (write scope); /v1/agent/commands and
// /v1/agent/results are the only routes an agent key opens, and they open
// for no other key.
//
// Commands come from the scheduler's location buffer (AgentCommandSource)
// for the key's tenant and location only. A posted result is checked
// against the tenant's endpoint, which must name the key's location, is
// stamped with that location as its region, and is published to the
// results queue under its usual deduplication ID
// (<endpointId>-<probeRunId>-<region>): the aggregator cannot tell it from
// a central prober's, so every verdict rule applies unchanged.

// AgentCommandSource is where agents' commands wait; *scheduler.Locations
// implements it.
type AgentCommandSource interface {
	Take(ctx context.Context, tenant, location string, limit int, wait time.Duration) []msg.ProbeCommand
	Release(tenant, location string, cmds []msg.ProbeCommand)
	Done(tenant, location, endpointID string, slot time.Time)
}

// ResultPublisher sends a result to the results queue; *queue.Publisher
// implements it.
type ResultPublisher interface {
	Publish(ctx context.Context, in queue.SendInput) (string, error)
}

// latestResults is the optional store capability of keeping an endpoint's
// latest result, so GET /v1/endpoints/{id} shows an agent's as it shows a
// central prober's. Every store backend has it.
type latestResults interface {
	PutLatestResult(ctx context.Context, r msg.ProbeResult) error
}

// Bounds of an agent's result: the body cap bounds the whole post, these
// each field the aggregator and the API show.
const (
	maxResultText   = 2048 // error, event message
	maxResultName   = 256  // class, transport, server name and version, event kind
	maxResultPhases = 16
	maxResultEvents = 32
	// A result's slot may be this old when posted (a probe timeout plus
	// retries through a server restart) ...
	maxResultAge = 15 * time.Minute
	// ... and never more than this ahead of the server's clock: a slot is
	// the time an API replica's scheduler (or probe on demand) issued its
	// command, so only the skew between replicas' clocks can put it ahead.
	// A slot further ahead was never issued, and would pin the endpoint's
	// latest result until the clock caught up with it.
	maxSlotAhead = 5 * time.Second
	// An agent's own times (startedAt, finishedAt) are read from its
	// clock: they may be this far off the server's.
	maxResultAhead = time.Minute
	// No phase of a result the API takes can be longer than the slot may
	// be old: a probe's deadline is its timeout (apiv1.MaxTimeout at most)
	// after its slot.
	maxResultPhase = msg.MaxPhase
)

// agentRoutes serves /v1/agents: the tenant's agent keys.
func (s *server) agentRoutes(r chi.Router) {
	r.Use(s.requireScope(auth.ScopeWrite))
	r.Get("/", s.listAgents)
	r.Post("/", s.createAgent)
	r.Get("/{id}", s.getAgent)
	r.Delete("/{id}", s.revokeAgent)
}

// agentExchangeRoutes serves /v1/agent: what an agent key may do. It is
// mounted apart from /v1's audit log: a poll changes nothing and a result
// is the pipeline's data, not a configuration change.
func (s *server) agentExchangeRoutes(r chi.Router) {
	r.Use(s.authenticateFor(func(*http.Request) auth.Scope { return auth.ScopeAgent }))
	r.Use(s.limitAgentRate)
	r.Get("/commands", s.agentCommands)
	r.Post("/results", s.agentResults)
}

// newAgentRateLimiter is the bucket per agent key: agents post and poll
// at the pace of their locations' schedules, so they are costed per
// request on a bucket sized for a location (apiv1.AgentRatePerSecond), not
// on their tenant's --rate-limit, which people and scripts share and which
// 50 agents would exhaust. Off when the API's rate limit is off.
func newAgentRateLimiter(on bool, clk clock.Clock) *rateLimiter {
	if !on {
		return nil
	}
	return newRateLimiter(Quotas{RatePerSecond: apiv1.AgentRatePerSecond, Burst: apiv1.AgentRateBurst}, clk)
}

// limitAgentRate answers 429 with Retry-After when the request's agent key
// is past its rate. It follows authenticate, so the key is known.
func (s *server) limitAgentRate(next http.Handler) http.Handler {
	if s.agentLimiter == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, _ := auth.FromContext(r.Context())
		ok, wait := s.agentLimiter.allow(p.KeyID)
		if !ok {
			secs := max(1, int(math.Ceil(wait.Seconds())))
			w.Header().Set("Retry-After", strconv.Itoa(secs))
			writeProblem(w, r, problemf(http.StatusTooManyRequests, apiv1.TypeRateLimited,
				"this agent key is over its request rate (%d per second, bursts of %d); retry in %d s", apiv1.AgentRatePerSecond, apiv1.AgentRateBurst, secs))
			return
		}
		next.ServeHTTP(w, r)
	})
}

func (s *server) agentView(k auth.Key, now time.Time) apiv1.AgentView {
	kv := keyView(k, now)
	v := apiv1.AgentView{ID: k.ID, Name: k.Name, Location: k.Location, Region: schedule.Location(k.Location), Status: kv.Status,
		Created: k.Created, Expires: kv.Expires, Revoked: kv.Revoked}
	if st, ok := s.seen.get(k.ID); ok && !st.LastSeen.IsZero() {
		at := st.LastSeen
		v.LastSeen, v.Version, v.ProbesPerMinute = &at, st.Version, st.PerMinute(now)
		v.Online = st.Online(now, s.offlineAfter)
		if st.Offline(now, s.offlineAfter) {
			v.OfflineSince = &at
		}
		if st.ClockSkew != nil {
			secs := st.ClockSkew.Seconds()
			v.ClockSkewSeconds = &secs
		}
	}
	return v
}

// agentKeys are the tenant's agent keys.
func (s *server) agentKeys(r *http.Request) ([]auth.Key, error) {
	keys, err := s.keys.List(r.Context(), auth.TenantFrom(r.Context()))
	return slices.DeleteFunc(keys, func(k auth.Key) bool { return k.Scope != auth.ScopeAgent }), err
}

func (s *server) createAgent(w http.ResponseWriter, r *http.Request) {
	if s.keysOff(w, r) {
		return
	}
	body, p := s.readBody(w, r, false)
	if p != nil {
		writeProblem(w, r, p)
		return
	}
	var req apiv1.AgentInput
	if p := decodeStrict(body, &req); p != nil {
		writeProblem(w, r, p)
		return
	}
	now := s.clock.Now().UTC()
	var errs []apiv1.FieldError
	if err := auth.ValidateName(req.Name); err != nil {
		errs = append(errs, apiv1.FieldError{Pointer: "#/name", Detail: err.Error()})
	}
	if !schedule.ValidLocation(req.Location) {
		errs = append(errs, apiv1.FieldError{Pointer: "#/location", Detail: "must be 1-28 of [a-z0-9-], starting with a letter or digit"})
	}
	expires, expErrs := keyExpiry(req.Expires, req.ExpiresIn, now)
	if errs = append(errs, expErrs...); len(errs) > 0 {
		writeProblem(w, r, invalid(errs...))
		return
	}
	if limit := s.quotas.MaxAgents; limit > 0 {
		// Counted from the list, not in the create's transaction: two
		// creates racing on two replicas may pass it together, by one.
		keys, err := s.agentKeys(r)
		if err != nil {
			writeProblem(w, r, s.storeProblem(r, err, "agents"))
			return
		}
		if live := slices.DeleteFunc(keys, func(k auth.Key) bool { return k.Status(now) != "active" }); len(live) >= limit {
			writeProblem(w, r, quotaProblem("agents", "--max-agents-per-tenant", limit))
			return
		}
	}
	secret, key, err := s.keys.Create(r.Context(), auth.NewKey{Name: req.Name, Tenant: auth.TenantFrom(r.Context()), Scope: auth.ScopeAgent,
		Location: req.Location, Expires: expires})
	if err != nil {
		writeProblem(w, r, s.createKeyProblem(r, err, req.Name))
		return
	}
	s.log.Info("agent created", "key_id", key.ID, "name", key.Name, "tenant", key.Tenant, "location", key.Location, "by", principalID(r))
	v := s.agentView(key, now)
	v.Key = secret
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Location", "/v1/agents/"+key.ID)
	writeJSON(w, http.StatusCreated, v)
}

func (s *server) listAgents(w http.ResponseWriter, r *http.Request) {
	if s.keysOff(w, r) {
		return
	}
	keys, err := s.agentKeys(r)
	if err != nil {
		writeProblem(w, r, s.storeProblem(r, err, "agents"))
		return
	}
	s.seen.load(r.Context(), s.store, keys)
	now := s.clock.Now()
	out := apiv1.AgentList{Agents: make([]apiv1.AgentView, len(keys))}
	for i, k := range keys {
		out.Agents[i] = s.agentView(k, now)
	}
	writeJSON(w, http.StatusOK, out)
}

// agentOf finds the tenant's agent by ID or name; 404 otherwise.
func (s *server) agentOf(w http.ResponseWriter, r *http.Request) (auth.Key, bool) {
	if s.keysOff(w, r) {
		return auth.Key{}, false
	}
	keys, err := s.agentKeys(r)
	if err != nil {
		writeProblem(w, r, s.storeProblem(r, err, "agents"))
		return auth.Key{}, false
	}
	ref := chi.URLParam(r, "id")
	if i := slices.IndexFunc(keys, func(k auth.Key) bool { return k.ID == ref }); i >= 0 {
		return keys[i], true
	}
	var named []auth.Key
	for _, k := range keys {
		if k.Name == ref && k.Revoked.IsZero() {
			named = append(named, k)
		}
	}
	if len(named) == 1 {
		return named[0], true
	}
	writeProblem(w, r, problemf(http.StatusNotFound, "", "no such agent"))
	return auth.Key{}, false
}

func (s *server) getAgent(w http.ResponseWriter, r *http.Request) {
	k, ok := s.agentOf(w, r)
	if !ok {
		return
	}
	s.seen.load(r.Context(), s.store, []auth.Key{k})
	writeJSON(w, http.StatusOK, s.agentView(k, s.clock.Now()))
}

// revokeAgent revokes the agent's key: this replica refuses its next poll
// and answers one held open with 401 (agentCommands asks again), every
// other replica within the keyring's cache TTL (seconds).
func (s *server) revokeAgent(w http.ResponseWriter, r *http.Request) {
	k, ok := s.agentOf(w, r)
	if !ok {
		return
	}
	key, err := s.keys.Revoke(r.Context(), auth.TenantFrom(r.Context()), k.ID)
	if err != nil {
		writeProblem(w, r, s.storeProblem(r, err, "agent "+k.ID))
		return
	}
	if err := s.seen.forget(r.Context(), s.store, key); err != nil {
		// The agent watcher then reports the revoked agent offline once.
		s.log.Warn("agent revoked: its last-seen record stays", "key_id", key.ID, "err", err)
	}
	s.log.Info("agent revoked", "key_id", key.ID, "name", key.Name, "tenant", key.Tenant, "location", key.Location, "by", principalID(r))
	writeJSON(w, http.StatusOK, s.agentView(key, s.clock.Now()))
}

// agentPrincipal is the request's agent key; without one (authentication
// off) there is no location to serve.
func agentPrincipal(w http.ResponseWriter, r *http.Request) (auth.Principal, bool) {
	p, ok := auth.FromContext(r.Context())
	if !ok || p.Scope != auth.ScopeAgent || p.Location == "" {
		writeProblem(w, r, problemf(http.StatusNotFound, "", "agents need API keys: this server runs with --auth none"))
		return auth.Principal{}, false
	}
	return p, true
}

// agentCommands serves GET /v1/agent/commands?wait=25s&limit=100: the
// location's due probes, waiting up to wait for one. Each poll is the
// agent's heartbeat.
func (s *server) agentCommands(w http.ResponseWriter, r *http.Request) {
	p, ok := agentPrincipal(w, r)
	if !ok {
		return
	}
	wait, limit, prob := agentPollParams(r)
	if prob != nil {
		writeProblem(w, r, prob)
		return
	}
	now := s.clock.Now()
	var skew *time.Duration
	if d, ok := model.AgentSkew(r.Header.Get(apiv1.AgentTimeHeader), now); ok {
		skew = &d
	}
	s.seen.poll(r.Context(), s.store, p, agentVersion(r), skew, now)
	out := apiv1.AgentCommands{Commands: []apiv1.AgentCommand{}, Agent: p.Name}
	if s.agentCmds == nil {
		writeJSON(w, http.StatusOK, out)
		return
	}
	loc := schedule.Location(p.Location)
	taken := s.agentCmds.Take(r.Context(), p.Tenant, loc, limit, wait)
	if !s.stillAuthenticated(w, r) {
		// The key was revoked or expired while the poll waited: its
		// commands (with their central secrets) go to the location's
		// other agents, at once.
		s.agentCmds.Release(p.Tenant, loc, taken)
		return
	}
	for _, cmd := range taken {
		ep, err := s.store.GetEndpointOf(r.Context(), p.Tenant, cmd.EndpointID)
		switch {
		case errors.Is(err, model.ErrNotFound):
			s.agentCmds.Done(p.Tenant, loc, cmd.EndpointID, cmd.Slot)
			continue
		case err != nil:
			// Left leased: handed out again when the lease ends.
			s.log.Warn("agent command: endpoint not loaded", "endpoint", cmd.EndpointID, "err", err)
			continue
		case ep.Paused || !slices.Contains(ep.Regions, loc):
			s.agentCmds.Done(p.Tenant, loc, cmd.EndpointID, cmd.Slot)
			continue
		case hasCentralSecrets(ep) && r.TLS == nil && !s.agentPlain:
			out.Withheld++
			continue
		}
		out.Commands = append(out.Commands, apiv1.AgentCommand{EndpointID: ep.ID, Slot: cmd.Slot, Endpoint: agentEndpoint(ep)})
	}
	if out.Withheld > 0 {
		s.log.Warn("agent commands withheld: their endpoints carry secrets and the agent polls over plain HTTP; serve the API over TLS",
			"tenant", p.Tenant, "location", p.Location, "withheld", out.Withheld)
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, out)
}

// stillAuthenticated asks again, after a long poll's wait, whether the
// request's key is valid; if not it has answered as a fresh request with
// that key is answered (401).
func (s *server) stillAuthenticated(w http.ResponseWriter, r *http.Request) bool {
	if s.authn == nil {
		return true
	}
	_, ok := s.keyPrincipal(w, r, auth.ClientAddress(r.RemoteAddr))
	return ok
}

// agentPollParams reads ?wait= (a Go duration up to apiv1.MaxAgentWait)
// and ?limit= (1 to apiv1.MaxAgentCommands).
func agentPollParams(r *http.Request) (time.Duration, int, *apiv1.Problem) {
	wait, limit := apiv1.DefaultAgentWait, apiv1.MaxAgentCommands
	var errs []apiv1.FieldError
	if raw := r.URL.Query().Get("wait"); raw != "" {
		d, err := time.ParseDuration(raw)
		if err != nil || d < 0 || d > apiv1.MaxAgentWait {
			errs = append(errs, apiv1.FieldError{Pointer: "?wait", Detail: fmt.Sprintf("must be a duration from 0s to %s", apiv1.MaxAgentWait)})
		}
		wait = d
	}
	if raw := r.URL.Query().Get("limit"); raw != "" {
		n, err := strconv.Atoi(raw)
		if err != nil || n < 1 || n > apiv1.MaxAgentCommands {
			errs = append(errs, apiv1.FieldError{Pointer: "?limit", Detail: fmt.Sprintf("must be 1 to %d", apiv1.MaxAgentCommands)})
		}
		limit = n
	}
	if len(errs) > 0 {
		return 0, 0, invalid(errs...)
	}
	return wait, limit, nil
}

// agentVersion is the version an agent's User-Agent names, bounded.
func agentVersion(r *http.Request) string {
	v, ok := strings.CutPrefix(r.UserAgent(), apiv1.AgentUserAgent)
	if !ok {
		return ""
	}
	v, _, _ = strings.Cut(v, " ")
	if len(v) > 64 || textProblem(v) != "" {
		return ""
	}
	return v
}

// hasCentralSecrets reports whether an endpoint's probe needs a secret the
// server keeps: a value that is only agent-side references
// (model.AgentOnly) is not one, so its command may go over plain HTTP.
func hasCentralSecrets(ep model.Endpoint) bool { return model.CentralSecrets(ep) }

// agentEndpoint is the endpoint as an agent's prober needs it, central
// secrets in clear (the caller decided the connection may carry them) and
// agent-side references as written: the agent fills those in.
func agentEndpoint(ep model.Endpoint) apiv1.AgentEndpoint {
	v := apiv1.AgentEndpoint{ID: ep.ID, URL: ep.URL, Transport: ep.Transport, ProtocolVersion: ep.ProtocolVersion, Schedule: ep.Schedule,
		Timeout: ep.Timeout.String(), Headers: ep.Headers, Version: ep.Version}
	if ep.LatencyThreshold > 0 {
		v.LatencyThreshold = ep.LatencyThreshold.String()
	}
	var deep apiv1.EndpointInput
	deepCheckInput(ep, &deep)
	v.ToolCheck, v.OAuth, v.CredentialWarning = deep.ToolCheck, deep.OAuth, deep.CredentialWarning
	return v
}

// agentResults serves POST /v1/agent/results: up to
// apiv1.MaxAgentResults results, each checked on its own before any is
// published. A result refused (invalid, another location's endpoint, no
// such endpoint) is listed with its reason and nothing of it is published;
// the others are. A post whose every result is refused is answered with
// the first refusal's problem, as a post of one result always was. A failed
// publish fails the whole post (503): the agent posts it again, and what
// was published already is republished under the same deduplication IDs,
// which the results queue keeps once.
func (s *server) agentResults(w http.ResponseWriter, r *http.Request) {
	p, ok := agentPrincipal(w, r)
	if !ok {
		return
	}
	body, prob := s.readBodyWithin(w, r, false, agentResultsLimits)
	if prob != nil {
		writeProblem(w, r, prob)
		return
	}
	var req apiv1.AgentResults
	if prob := decodeStrict(body, &req); prob != nil {
		writeProblem(w, r, prob)
		return
	}
	switch n := len(req.Results); {
	case n == 0:
		writeProblem(w, r, invalid(apiv1.FieldError{Pointer: "#/results", Detail: "is empty"}))
		return
	case n > apiv1.MaxAgentResults:
		writeProblem(w, r, invalid(apiv1.FieldError{Pointer: "#/results", Detail: fmt.Sprintf("at most %d results per request", apiv1.MaxAgentResults)}))
		return
	}
	if s.agentPub == nil {
		writeProblem(w, r, problemf(http.StatusServiceUnavailable, "", "this server publishes no agent results"))
		return
	}
	loc := schedule.Location(p.Location)
	now := s.clock.Now()
	var accepted []msg.ProbeResult
	var refused []apiv1.AgentResultRefused
	for i := range req.Results {
		res := &req.Results[i]
		ref, err := s.checkPostedResult(r.Context(), p, res, now)
		switch {
		case err != nil:
			writeProblem(w, r, s.storeProblem(r, err, fmt.Sprintf("endpoint of results[%d]", i)))
			return
		case ref != nil:
			ref.Index = i
			if ref.Pointer != "" {
				ref.Pointer = fmt.Sprintf("#/results/%d/%s", i, ref.Pointer)
			}
			refused = append(refused, *ref)
			continue
		}
		res.Region = loc
		accepted = append(accepted, *res)
	}
	if len(accepted) == 0 {
		first := refused[0]
		if first.Status == http.StatusForbidden {
			w.Header().Set("WWW-Authenticate", `Bearer realm="mcpmon", error="insufficient_scope"`)
		}
		if first.Pointer != "" {
			writeProblem(w, r, invalid(apiv1.FieldError{Pointer: first.Pointer, Detail: first.Detail}))
		} else {
			writeProblem(w, r, problemf(first.Status, "", "results[%d]: %s", first.Index, first.Detail))
		}
		return
	}
	if err := s.publishAgentResults(r.Context(), p, loc, accepted); err != nil {
		writeProblem(w, r, problemf(http.StatusServiceUnavailable, "", "the results queue is unavailable; post the results again"))
		return
	}
	if len(refused) > 0 {
		s.log.Warn("agent results refused", "tenant", p.Tenant, "location", p.Location, "refused", len(refused), "first", refused[0].Detail)
	}
	s.seen.results(p, len(accepted), now)
	writeJSON(w, http.StatusOK, apiv1.AgentResultsAccepted{Accepted: len(accepted), Refused: refused})
}

// checkPostedResult decides one posted result: nil to publish it (its
// text cleaned), a refusal (its index unset) to refuse it alone, or the
// store's error.
func (s *server) checkPostedResult(ctx context.Context, p auth.Principal, res *msg.ProbeResult, now time.Time) (*apiv1.AgentResultRefused, error) {
	ep, err := s.store.GetEndpointOf(ctx, p.Tenant, res.EndpointID)
	switch {
	case errors.Is(err, model.ErrNotFound):
		return &apiv1.AgentResultRefused{Status: http.StatusNotFound, Detail: fmt.Sprintf("endpoint %q not found", boundedID(res.EndpointID))}, nil
	case err != nil:
		return nil, err
	case !slices.Contains(ep.Regions, schedule.Location(p.Location)):
		// The key's location is its scope: it does not cover this endpoint.
		return &apiv1.AgentResultRefused{Status: http.StatusForbidden, Detail: fmt.Sprintf("endpoint %s is not probed from location %s", ep.ID, p.Location)}, nil
	}
	if fe := checkAgentResult(res, now); fe != nil {
		return &apiv1.AgentResultRefused{Status: http.StatusBadRequest, Detail: fe.Detail, Pointer: fe.Pointer}, nil
	}
	cleanAgentResult(res)
	return nil, nil
}

// boundedID is an endpoint ID from a post, cut short for a refusal.
func boundedID(id string) string {
	if len(id) > maxResultName {
		return id[:maxResultName] + "…"
	}
	return id
}

// publishAgentResults stores each result as its endpoint's latest and
// publishes it, then marks its command done: the endpoints' results at
// once, so the publisher sends them in one batch, each endpoint's in the
// order posted (its message group's order). The first failed publish is
// the error; what was published before it stays so.
func (s *server) publishAgentResults(ctx context.Context, p auth.Principal, loc string, results []msg.ProbeResult) error {
	byEndpoint := map[string][]msg.ProbeResult{}
	for _, res := range results {
		byEndpoint[res.EndpointID] = append(byEndpoint[res.EndpointID], res)
	}
	var mu sync.Mutex
	var errs []error
	var wg sync.WaitGroup
	for _, rs := range byEndpoint {
		wg.Go(func() {
			for _, res := range rs {
				if err := s.publishAgentResult(ctx, p, loc, res); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
					return
				}
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

func (s *server) publishAgentResult(ctx context.Context, p auth.Principal, loc string, res msg.ProbeResult) error {
	if ls, ok := s.store.(latestResults); ok {
		if err := ls.PutLatestResult(ctx, res); err != nil {
			s.log.Debug("store an agent's latest result failed", "endpoint", res.EndpointID, "err", err)
		}
	}
	sent := res.WithoutConformance() // stored just above with it
	if _, err := queue.SendValue(ctx, s.agentPub, res.GroupID(), res.DedupID(), sent, sent.Body); err != nil {
		s.log.Warn("publish an agent's result failed", "dedup_id", res.DedupID(), "err", err)
		return err
	}
	if s.agentCmds != nil {
		s.agentCmds.Done(p.Tenant, loc, res.EndpointID, res.Slot)
	}
	return nil
}

// checkAgentResult checks a posted result's identity and bounds its
// fields; the problem's pointer is relative to the result.
func checkAgentResult(res *msg.ProbeResult, now time.Time) *apiv1.FieldError {
	bad := func(ptr, format string, args ...any) *apiv1.FieldError {
		return &apiv1.FieldError{Pointer: ptr, Detail: fmt.Sprintf(format, args...)}
	}
	switch {
	case res.Schema != msg.SchemaVersion:
		return bad("schema", "must be %d", msg.SchemaVersion)
	case res.Slot.IsZero() || !res.Slot.Equal(res.Slot.Truncate(time.Second)):
		return bad("slot", "must be the command's slot")
	case res.Slot.Before(now.Add(-maxResultAge)) || res.Slot.After(now.Add(maxSlotAhead)):
		return bad("slot", "is more than %s old or %s ahead of the server: post the slot of a command this server issued", maxResultAge, maxSlotAhead)
	case res.ProbeRunID != msg.ProbeRunID(res.EndpointID, res.Slot):
		return bad("probeRunId", "is not the run ID of the endpoint's slot")
	case res.Status != msg.StatusUp && res.Status != msg.StatusDegraded && res.Status != msg.StatusDown:
		return bad("status", "must be up, degraded or down")
	case !msg.KnownClass(res.Class):
		return bad("class", "must be a failure class (docs/reference/failure-classes.md)")
	case res.Status != msg.StatusOf(res.Class):
		return bad("status", "must be %s, the status of class %s", msg.StatusOf(res.Class), res.Class)
	case len(res.Error) > maxResultText:
		return bad("error", "is longer than %d bytes", maxResultText)
	case len(res.Phases) > maxResultPhases:
		return bad("phases", "at most %d phases", maxResultPhases)
	case len(res.Events) > maxResultEvents:
		return bad("events", "at most %d events", maxResultEvents)
	case res.HTTPStatus != 0 && (res.HTTPStatus < 100 || res.HTTPStatus > 599):
		return bad("httpStatus", "must be 0 (none) or 100 to 599")
	case res.ToolCount < 0:
		return bad("toolCount", "must not be negative")
	case res.StartedAt.Before(res.Slot.Add(-maxResultAhead)) || res.StartedAt.After(now.Add(maxResultAhead)):
		return bad("startedAt", "must be within %s of the slot and not after the server's clock", maxResultAhead)
	case res.FinishedAt.Before(res.StartedAt) || res.FinishedAt.After(now.Add(maxResultAhead)):
		return bad("finishedAt", "must not be before startedAt nor after the server's clock")
	}
	if c := res.Conformance; c != nil {
		if ptr, why := conformance.Malformed(*c); ptr != "" {
			return bad("conformance/"+ptr, "%s", why)
		}
	}
	for name, v := range map[string]string{"class": res.Class, "transport": res.Transport, "protocolVersion": res.ProtocolVersion,
		"serverName": res.ServerName, "serverVersion": res.ServerVersion, "catalogFingerprint": res.CatalogFingerprint} {
		if len(v) > maxResultName {
			return bad(name, "is longer than %d bytes", maxResultName)
		}
	}
	for phase, secs := range res.Phases {
		if !msg.KnownPhase(phase) {
			return bad("phases", "a phase must be one of %s, %s, %s", strings.Join(msg.Phases(), ", "), msg.PhaseToolCall, msg.PhaseAuthToken)
		}
		if math.IsNaN(secs) || math.IsInf(secs, 0) || secs < 0 || secs > maxResultPhase.Seconds() {
			return bad("phases/"+phase, "must be 0 to %g seconds", maxResultPhase.Seconds())
		}
	}
	for i, e := range res.Events {
		if len(e.Kind) > maxResultName || len(e.Message) > maxResultText || len(e.Fingerprint) > maxResultName {
			return bad(fmt.Sprintf("events/%d", i), "kind and fingerprint are at most %d bytes, message %d", maxResultName, maxResultText)
		}
		if !slices.Contains(model.ResultEventKinds(), e.Kind) {
			return bad(fmt.Sprintf("events/%d/kind", i), "must be one of %s", strings.Join(model.ResultEventKinds(), ", "))
		}
		if !msg.KnownEventSeverity(e.Severity) {
			return bad(fmt.Sprintf("events/%d/severity", i), "must be one of %s", strings.Join(msg.EventSeverities(), ", "))
		}
	}
	return nil
}

// cleanAgentResult makes a checked result's free text safe to store and
// show, as the prober makes a target's (model.DisplayLine): an agent's
// words reach incidents, the API's answers and operators' terminals.
// checkAgentResult has bounded every field, so nothing here is cut.
func cleanAgentResult(res *msg.ProbeResult) {
	res.Error = model.DisplayLine(res.Error, maxResultText)
	for _, f := range []*string{&res.Transport, &res.ProtocolVersion, &res.ServerName, &res.ServerVersion, &res.CatalogFingerprint} {
		*f = model.DisplayLine(*f, maxResultName)
	}
	for i := range res.Events {
		e := &res.Events[i]
		e.Fingerprint = model.DisplayLine(e.Fingerprint, maxResultName)
		e.Message = model.DisplayLine(e.Message, maxResultText)
	}
	if c := res.Conformance; c != nil {
		for i := range c.Rules {
			c.Rules[i].Detail = model.DisplayLine(c.Rules[i].Detail, msg.MaxConformanceDetail)
		}
	}
}

// agentSeen is what agents' polls told this replica, and what other
// replicas wrote of it: a model.AgentSeen per agent. It is written to the
// store (store.KindAgentSeen) at most every agentSeenWrite per agent, so
// a poll costs no store write and GET /v1/agents on any replica shows a
// poll of seconds ago. A poll that is not written is written
// agentSeenWrite after the last write (a trailing write), so the record
// catches up with an agent's last poll: the agent watcher, which judges
// the record, then says "offline since" the poll this replica shows, and
// at the moment this replica shows it offline, not up to agentSeenWrite
// earlier.
type agentSeen struct {
	mu sync.Mutex
	m  map[string]*agentState // key ID →
	// writes orders a trailing write with forget, so a revoked agent's
	// record is not written again after it was deleted.
	writes sync.Mutex
	// metrics, when set, exports each agent's series (agentstatus.go).
	metrics *AgentMetrics
}

// agentState is one agent's record and when this replica last wrote it.
type agentState struct {
	model.AgentSeen
	written time.Time
	// trailing is the pending write of the polls since written, due at
	// trailingAt.
	trailing   *time.Timer
	trailingAt time.Time
}

const agentSeenWrite = 15 * time.Second

// trailingWriteTimeout bounds a trailing write, which runs outside any
// request.
const trailingWriteTimeout = 10 * time.Second

func (a *agentSeen) get(id string) (model.AgentSeen, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	st, ok := a.m[id]
	if !ok {
		return model.AgentSeen{}, false
	}
	return st.AgentSeen, true
}

func (a *agentSeen) state(id string) *agentState {
	if a.m == nil {
		a.m = map[string]*agentState{}
	}
	st := a.m[id]
	if st == nil {
		st = &agentState{}
		a.m[id] = st
	}
	return st
}

// poll records a poll received at now, with the agent's clock skew when
// it sent a valid time, and writes the record when it is due (else
// schedules its trailing write).
func (a *agentSeen) poll(ctx context.Context, st Store, p auth.Principal, version string, skew *time.Duration, now time.Time) {
	a.mu.Lock()
	_, known := a.m[p.KeyID]
	a.mu.Unlock()
	if !known {
		// The first poll this replica serves (after a restart, or an
		// agent moving from another replica) starts from the stored
		// record, so its write keeps the results counted there.
		a.load(ctx, st, []auth.Key{{ID: p.KeyID}})
	}
	a.mu.Lock()
	s := a.state(p.KeyID)
	s.Tenant, s.Location, s.Name = p.Tenant, p.Location, p.Name
	s.LastSeen, s.Version = now.UTC(), version
	if skew != nil {
		s.ClockSkew = skew
	}
	due := now.Sub(s.written) >= agentSeenWrite
	switch {
	case due:
		s.written = now
		if s.trailing != nil {
			s.trailing.Stop()
			s.trailing = nil
		}
	case s.trailing == nil:
		at := s.written.Add(agentSeenWrite)
		s.trailingAt = at
		s.trailing = time.AfterFunc(at.Sub(now), func() { a.writeTrailing(st, p.KeyID, s, at) })
	}
	doc, _ := json.Marshal(s.AgentSeen)
	rec := s.AgentSeen
	a.mu.Unlock()
	a.metrics.polled(p.KeyID, rec)
	if due {
		// Advisory, like a key's last use: a failed write costs other
		// replicas a stale lastSeen (and the agent watcher a late
		// "back online"), nothing else.
		_ = st.PutObject(ctx, store.KindAgentSeen, p.KeyID, doc)
	}
}

// writeTrailing writes s, the record of agent id, as of at (by the
// server's clock, agentSeenWrite after its last write), unless the
// agent was forgotten or its record written since (the write due at at
// is no longer pending), or another replica stored a newer poll: the
// agent moved there, and this replica's record is up to agentSeenWrite
// older. (A read, then a write: two replicas writing in the same
// milliseconds can still cross, a gap of one poll, not of 15 s.)
func (a *agentSeen) writeTrailing(st Store, id string, s *agentState, at time.Time) {
	a.writes.Lock()
	defer a.writes.Unlock()
	a.mu.Lock()
	if a.m[id] != s || s.trailing == nil || !s.trailingAt.Equal(at) {
		a.mu.Unlock()
		return
	}
	s.trailing, s.written = nil, at
	ours := s.LastSeen
	a.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), trailingWriteTimeout)
	defer cancel()
	// load takes the stored record where it is newer (forget, which
	// would drop s, waits for writes).
	a.load(ctx, st, []auth.Key{{ID: id}})
	a.mu.Lock()
	if !s.LastSeen.Equal(ours) {
		a.mu.Unlock()
		return
	}
	doc, _ := json.Marshal(s.AgentSeen)
	a.mu.Unlock()
	_ = st.PutObject(ctx, store.KindAgentSeen, id, doc) // advisory, as in poll
}

func (a *agentSeen) results(p auth.Principal, n int, now time.Time) {
	a.mu.Lock()
	a.state(p.KeyID).CountResults(n, now)
	a.mu.Unlock()
	a.metrics.posted(p.KeyID, p.Location, n)
}

// forget drops a revoked agent's record, here and in the store, so the
// agent watcher does not report its silence.
func (a *agentSeen) forget(ctx context.Context, st Store, k auth.Key) error {
	a.writes.Lock()
	defer a.writes.Unlock()
	a.mu.Lock()
	if s := a.m[k.ID]; s != nil && s.trailing != nil {
		s.trailing.Stop()
		s.trailing = nil
	}
	delete(a.m, k.ID)
	a.mu.Unlock()
	a.metrics.forget(k.ID, k.Location)
	if err := st.DeleteObject(ctx, store.KindAgentSeen, k.ID); err != nil && !errors.Is(err, model.ErrNotFound) {
		return err
	}
	return nil
}

// load takes what other replicas wrote of keys' agents, where it is
// newer than what this replica saw.
func (a *agentSeen) load(ctx context.Context, st Store, keys []auth.Key) {
	for _, k := range keys {
		doc, err := st.GetObject(ctx, store.KindAgentSeen, k.ID)
		if err != nil {
			continue
		}
		var stored model.AgentSeen
		if json.Unmarshal(doc, &stored) != nil {
			continue
		}
		a.mu.Lock()
		if s := a.state(k.ID); stored.LastSeen.After(s.LastSeen) {
			s.AgentSeen = stored
		}
		a.mu.Unlock()
	}
}
