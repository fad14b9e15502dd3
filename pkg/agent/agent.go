// Package agent is `mcpmon agent`: a prober that runs inside its owner's
// network and only dials out, to the mcpmon API, so it works behind NAT and
// firewalls with no queue or store credentials and no inbound port.
//
// Commands enter by long poll (GET /v1/agent/commands; every poll is the
// agent's heartbeat), are probed by the central prober's own code
// (prober.Worker: the superseded-slot rule, the probe deadline, the
// handshake of every era), and leave as results posted to
// POST /v1/agent/results, which the server publishes to the results queue
// under the usual deduplication ID: a result posted twice (a retry after a
// lost answer, a command redelivered after the agent was killed) is kept
// once. The SSRF guard is the agent's own: --allow-private-targets lets it
// probe the private servers it is there for.
//
// Agent-side secrets (secrets.go) fill in the ${agent:NAME} references a
// command's endpoint makes just before it is probed; a reference the agent
// cannot fill in fails the probe as secret_missing without sending
// anything, and the values are scrubbed from a result's text before it is
// posted. So those secrets never leave the agent's network.
//
// An agent may be given several servers, the API replicas of one
// deployment: it keeps to one until a request to it fails on the network
// or with a 5xx, 429 or 408, then moves to the next (servers.go). An
// unreachable or failing server is waited out with backoff; a refused
// key (401 or 403: revoked, expired, unknown) ends Run with ErrRefused, so
// the process exits non-zero and its supervisor shows why.
package agent

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	apiv1 "github.com/mcpmon/mcpmon/pkg/api/v1"
	"github.com/mcpmon/mcpmon/pkg/clock"
	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/msg"
	"github.com/mcpmon/mcpmon/pkg/queue"
	"github.com/mcpmon/mcpmon/prober"
)

// ErrRefused: the server refused the agent's key. Retrying cannot help.
var ErrRefused = errors.New("the server refused the agent key (revoked, expired or unknown); create a new one with `mcpmon agents create`")

// Options configure Run. Server and Token are required.
type Options struct {
	// Server is the API's base URL: https, or http to a loopback address.
	Server string
	// Failover are more base URLs of the same deployment (its other API
	// replicas), tried in order after Server when the one in use fails.
	Failover []string
	Token    model.Secret
	// AllowPrivateTargets turns the agent's SSRF guard off: it may probe
	// private and loopback addresses, as an agent inside a network must.
	AllowPrivateTargets bool
	// AllowedNetworks are the private networks the agent may probe while
	// every other blocked address stays refused (--allow-target-networks):
	// an agent with them cannot be pointed at its network's other
	// services or the cloud metadata address by whoever may register
	// endpoints.
	AllowedNetworks []netip.Prefix
	// Concurrency bounds the probes in flight (default DefaultConcurrency).
	Concurrency int
	// Wait is the long poll's wait (default apiv1.DefaultAgentWait).
	Wait time.Duration
	// Version is sent in the User-Agent and as the probes' client version.
	Version string
	// HTTPClient talks to the server (default: a client with timeouts).
	HTTPClient *http.Client
	Logger     *slog.Logger
	Clock      clock.Clock
	// Sleep waits d or until ctx ends (false then); the backoff's waits go
	// through it so a test steps them. Default: a timer.
	Sleep func(ctx context.Context, d time.Duration) bool
	// Prober adjusts the prober's options (tests: a resolver, root CAs).
	Prober func(*prober.Options)
	// FlushInterval is the longest a result waits to be posted with the
	// ones after it (default and at most MaxFlushInterval); a post carries
	// up to apiv1.MaxAgentResults.
	FlushInterval time.Duration
	// Secrets fill in agent-side secret references (nil: none; *Secrets
	// reads --secrets-file and MCPMON_AGENT_SECRET_*).
	Secrets SecretSource
}

// SecretSource holds the agent-side secrets; *Secrets is one.
type SecretSource interface {
	Lookup(name string) (model.Secret, bool)
}

// Backoff bounds: the wait after a failed poll or post doubles from
// MinBackoff to MaxBackoff and starts over after a success.
const (
	MinBackoff = 500 * time.Millisecond
	MaxBackoff = 30 * time.Second
)

// DefaultConcurrency is the probes in flight of an agent by default.
const DefaultConcurrency = 16

// MaxFlushInterval bounds how long a result waits for others to share
// its post: one post a second per agent instead of one per result.
const MaxFlushInterval = time.Second

// maxPending bounds the results waiting to be posted; past it a finished
// probe waits for room, so a server that refuses posts for long holds the
// probes back instead of filling memory.
const maxPending = 10 * apiv1.MaxAgentResults

// Validate checks the options a command line gives.
func (o Options) Validate() error {
	if o.Server == "" {
		return errors.New("--server is required: the mcpmon API's URL")
	}
	for _, s := range append([]string{o.Server}, o.Failover...) {
		u, err := url.Parse(s)
		switch {
		case err != nil || u.Host == "" || u.User != nil || (u.Scheme != "https" && u.Scheme != "http"):
			return fmt.Errorf("--server %q: want https://host[:port]", s)
		case u.Scheme == "http" && !loopback(u.Hostname()):
			return fmt.Errorf("--server %q: an agent talks to the API over HTTPS only (plain http only to a loopback address)", s)
		}
	}
	if o.Token == "" {
		return errors.New("no agent key: give --token-file FILE or MCPMON_AGENT_TOKEN (`mcpmon agents create` makes one)")
	}
	return nil
}

func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// agent is one Run's state.
type agent struct {
	o      Options
	srv    *servers // servers.go
	log    *slog.Logger
	worker *prober.Worker
	// secretWorker probes the endpoints that carry agent-side secrets,
	// through a guard confined to the agent's networks (Options.
	// AllowedNetworks, or private addresses with AllowPrivateTargets):
	// whoever may register an endpoint for the location cannot have the
	// secrets sent to a host of theirs, a public one included.
	secretWorker *prober.Worker
	eps          *endpoints
	// pending carries the worker's results to the poster's batches.
	pending chan queue.SendInput
	// refused is closed once the server refuses the key.
	refused     chan struct{}
	refusedOnce sync.Once
	// name is the agent's key's name, as the server's polls tell it.
	name atomic.Pointer[string]
	// missing is the secrets last reported missing per endpoint, so a
	// missing secret is logged as a warning once, not every probe.
	missingMu sync.Mutex
	missing   map[string]string
	// skewed: the last answer's Date was off by more than MaxClockSkew.
	skewed atomic.Bool
}

// Run polls for commands and probes them until ctx is done (nil) or the
// server refuses the key (ErrRefused). Probes in flight when ctx ends are
// abandoned: the server hands their commands out again when their lease
// ends.
func Run(ctx context.Context, o Options) error {
	if err := o.Validate(); err != nil {
		return err
	}
	o.Concurrency = cmp.Or(max(o.Concurrency, 0), DefaultConcurrency)
	o.Wait = cmp.Or(max(min(o.Wait, apiv1.MaxAgentWait), 0), apiv1.DefaultAgentWait)
	o.Version = cmp.Or(o.Version, "dev")
	if o.FlushInterval <= 0 || o.FlushInterval > MaxFlushInterval {
		o.FlushInterval = MaxFlushInterval
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Clock == nil {
		o.Clock = clock.Real{}
	}
	if o.Sleep == nil {
		o.Sleep = clock.Sleep
	}
	if o.HTTPClient == nil {
		// The poll waits up to Wait for an answer; the timeout leaves it
		// room and still ends a connection that went silent.
		o.HTTPClient = &http.Client{Timeout: o.Wait + 30*time.Second}
	}
	a := &agent{o: o, srv: newServers(o.Server, o.Failover), log: o.Logger.With("component", "agent"), eps: &endpoints{m: map[string]model.Endpoint{}},
		refused: make(chan struct{}), missing: map[string]string{},
		pending: make(chan queue.SendInput, maxPending)}
	po := prober.Options{AllowPrivateTargets: o.AllowPrivateTargets, AllowedNetworks: o.AllowedNetworks, Logger: o.Logger, Clock: o.Clock,
		ClientName: "mcpmon-agent", ClientVersion: o.Version}
	if o.Prober != nil {
		o.Prober(&po)
	}
	lat := newLatest()
	a.eps.latest = lat
	worker := func(po prober.Options) *prober.Worker {
		return prober.NewWorker(prober.New(po), a.eps, poster{a}, prober.WorkerOptions{Latest: lat, Logger: o.Logger, Clock: o.Clock,
			KeepConformance: true}) // the API stores the latest result from the post
	}
	a.worker = worker(po)
	po.ConfineTargets = true
	a.secretWorker = worker(po)

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-a.refused:
			cancel()
		case <-ctx.Done():
		}
	}()
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() { a.postBatches(ctx) })
	slots := make(chan struct{}, o.Concurrency)
	failures := 0
	for {
		cmds, err := a.poll(ctx)
		switch {
		case a.isRefused():
			return ErrRefused
		case ctx.Err() != nil:
			return nil
		case err != nil:
			if failures == 0 {
				a.log.Warn("polling the server failed; retrying with backoff", "err", err)
			}
			failures++
			// A server that fails is left for the next at once; the
			// backoff waits once each server has failed in turn.
			if n := a.srv.len(); !retryable(err) || failures%n == 0 {
				o.Sleep(ctx, backoff(max(failures/n, 1))) // a done ctx ends the loop's next turn
			}
			continue
		}
		if failures > 0 {
			a.log.Info("polling the server again", "failed_attempts", failures)
			failures = 0
		}
		for _, c := range cmds {
			ep, err := toModel(c.Endpoint)
			if err != nil {
				a.log.Warn("command with an endpoint the prober cannot use; skipped", "endpoint", c.EndpointID, "err", err)
				continue
			}
			ep, values, missing, err := model.ResolveAgentRefs(ep, a.lookup)
			if err != nil {
				a.log.Warn("command with a malformed agent secret reference; skipped", "endpoint", c.EndpointID, "err", err)
				continue
			}
			select {
			case slots <- struct{}{}:
			case <-ctx.Done():
				continue
			}
			cmd := msg.NewProbeCommand(c.EndpointID, c.Slot)
			if len(missing) > 0 {
				wg.Go(func() {
					defer func() { <-slots }()
					a.secretMissing(ctx, cmd, missing)
				})
				continue
			}
			a.noteMissing(cmd.EndpointID, nil)
			a.eps.put(ep, values, o.Clock.Now())
			w := a.worker
			if len(values) > 0 {
				w = a.secretWorker
			}
			wg.Go(func() {
				defer func() { <-slots }()
				if err := w.Handle(ctx, queue.Message{ID: cmd.ProbeRunID(), Body: cmd.Body()}); err != nil && ctx.Err() == nil {
					a.log.Warn("probe not reported", "endpoint", cmd.EndpointID, "slot", cmd.Slot, "err", err)
				}
			})
		}
	}
}

// MaxClockSkew is how far the server's clock (its Date header) may be
// from the agent's before the agent warns: probe deadlines and slots are
// the server's times, measured on the agent's clock.
const MaxClockSkew = 30 * time.Second

// checkClock compares the server's Date with the agent's clock, warning
// once when they drift apart by more than MaxClockSkew and once when they
// agree again. Date has whole seconds; an unparsable one is ignored.
func (a *agent) checkClock(date string) {
	if date == "" || len(date) > 64 {
		return
	}
	server, err := http.ParseTime(date)
	if err != nil {
		return
	}
	skew := a.o.Clock.Now().Sub(server)
	off := skew > MaxClockSkew || skew < -MaxClockSkew
	if a.skewed.Swap(off) == off {
		return
	}
	if off {
		a.log.Warn("this machine's clock differs from the server's; probe deadlines and slots will be off: sync it (NTP)",
			"skew", skew.Round(time.Second).String(), "server_date", date, "max", MaxClockSkew.String())
		return
	}
	a.log.Info("this machine's clock agrees with the server's again", "skew", skew.Round(time.Second).String())
}

// backoff is the wait after the n-th failure in a row.
func backoff(n int) time.Duration {
	return min(MinBackoff<<min(n-1, 10), MaxBackoff)
}

func (a *agent) refuse() { a.refusedOnce.Do(func() { close(a.refused) }) }

func (a *agent) isRefused() bool {
	select {
	case <-a.refused:
		return true
	default:
		return false
	}
}

// maxCommandsBody bounds a poll's answer: a full batch of commands with
// endpoints at the API's own caps fits well within it.
const maxCommandsBody = 16 << 20

// poll is one long poll.
func (a *agent) poll(ctx context.Context) ([]apiv1.AgentCommand, error) {
	q := url.Values{"wait": {a.o.Wait.String()}}
	base := a.srv.current()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/v1/agent/commands?"+q.Encode(), nil)
	if err != nil {
		return nil, err
	}
	body, err := a.do(req)
	if err != nil {
		a.failedOver(ctx, base, err)
		return nil, err
	}
	var out apiv1.AgentCommands
	if err := json.Unmarshal(body, &out); err != nil {
		return nil, fmt.Errorf("decode commands: %w", err)
	}
	if out.Agent != "" {
		a.name.Store(&out.Agent)
	}
	if out.Withheld > 0 {
		a.log.Warn("the server withheld commands whose endpoints carry secrets: it sends them only over TLS", "withheld", out.Withheld)
	}
	return out.Commands, nil
}

// statusError is a non-2xx answer.
type statusError struct {
	status int
	detail string
}

func (e *statusError) Error() string {
	if e.detail != "" {
		return fmt.Sprintf("server answered %d: %s", e.status, e.detail)
	}
	return fmt.Sprintf("server answered %d", e.status)
}

// retryable: the server may answer differently later.
func retryable(err error) bool {
	var se *statusError
	if errors.As(err, &se) {
		return se.status >= 500 || se.status == http.StatusTooManyRequests || se.status == http.StatusRequestTimeout
	}
	return true // the network
}

// do sends req with the key and returns the body of a 2xx answer. A 401,
// or a 403 to a poll, marks the key refused.
func (a *agent) do(req *http.Request) ([]byte, error) {
	req.Header.Set("Authorization", "Bearer "+a.o.Token.Reveal())
	req.Header.Set("User-Agent", apiv1.AgentUserAgent+a.o.Version)
	req.Header.Set("Accept", "application/json")
	req.Header.Set(apiv1.AgentTimeHeader, a.o.Clock.Now().UTC().Format(time.RFC3339Nano))
	resp, err := a.o.HTTPClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	a.checkClock(resp.Header.Get("Date"))
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxCommandsBody+1))
	if err != nil {
		return nil, fmt.Errorf("read answer: %w", err)
	}
	if len(body) > maxCommandsBody {
		return nil, fmt.Errorf("answer larger than %d bytes", maxCommandsBody)
	}
	if resp.StatusCode/100 == 2 {
		return body, nil
	}
	// A 403 to a post is about its results (another location's endpoint),
	// not the key: the poll, which carries no results, decides that.
	if resp.StatusCode == http.StatusUnauthorized || (resp.StatusCode == http.StatusForbidden && req.Method == http.MethodGet) {
		a.refuse()
	}
	var p apiv1.Problem
	_ = json.Unmarshal(body, &p)
	detail := p.Detail
	if len(detail) > 200 {
		detail = detail[:200]
	}
	return nil, &statusError{status: resp.StatusCode, detail: strconv.Quote(detail)}
}

// poster is the worker's ResultPublisher: it hands each result to the
// batches postBatches sends, waiting only while maxPending are waiting.
type poster struct{ a *agent }

func (p poster) Publish(ctx context.Context, in queue.SendInput) (string, error) {
	in.Body = p.a.scrub(in.Body)
	select {
	case p.a.pending <- in:
		return in.DedupID, nil
	case <-ctx.Done():
		return "", fmt.Errorf("post result %s: %w", in.DedupID, ctx.Err())
	}
}

// postBatches posts the pending results until ctx ends: a batch is what
// is waiting FlushInterval after its first result, or
// apiv1.MaxAgentResults if that many come sooner. Results still waiting
// when ctx ends are abandoned with the probes in flight: the server hands
// their commands out again when their lease ends, and a result posted
// twice is kept once.
func (a *agent) postBatches(ctx context.Context) {
	for {
		var batch []queue.SendInput
		select {
		case in := <-a.pending:
			batch = append(batch, in)
		case <-ctx.Done():
			return
		}
		timer := time.NewTimer(a.o.FlushInterval)
	fill:
		for len(batch) < apiv1.MaxAgentResults {
			select {
			case in := <-a.pending:
				batch = append(batch, in)
			case <-timer.C:
				break fill
			case <-ctx.Done():
				timer.Stop()
				return
			}
		}
		timer.Stop()
		if err := a.postBatch(ctx, batch); err != nil && ctx.Err() == nil {
			a.log.Warn("results not reported", "results", len(batch), "err", err)
		}
	}
}

// postBatch posts one batch, retrying the whole batch with backoff while
// the server is unreachable or failing (what it published already it
// keeps once), until it answers or the agent stops. Results the server
// refuses are logged and dropped: posting them again cannot help.
func (a *agent) postBatch(ctx context.Context, batch []queue.SendInput) error {
	body := []byte(`{"results":[`)
	for i, in := range batch {
		if i > 0 {
			body = append(body, ',')
		}
		body = append(body, in.Body...)
	}
	body = append(body, "]}"...)
	for n := 1; ; n++ {
		base := a.srv.current()
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/agent/results", bytes.NewReader(body))
		if err != nil {
			return err
		}
		req.Header.Set("Content-Type", "application/json")
		answer, err := a.do(req)
		switch {
		case err == nil:
			var out apiv1.AgentResultsAccepted
			_ = json.Unmarshal(answer, &out)
			for _, r := range out.Refused {
				if r.Index >= 0 && r.Index < len(batch) {
					a.log.Warn("the server refused a result", "dedup_id", batch[r.Index].DedupID, "status", r.Status, "detail", r.Detail, "pointer", r.Pointer)
				}
			}
			return nil
		case ctx.Err() != nil:
			return fmt.Errorf("post %d results: %w", len(batch), ctx.Err())
		case a.isRefused() || !retryable(err):
			return fmt.Errorf("post %d results (first %s): %w", len(batch), batch[0].DedupID, err)
		case n == 1:
			a.log.Warn("posting results failed; retrying with backoff", "results", len(batch), "err", err)
		}
		a.failedOver(ctx, base, err)
		// Each server is tried once before the backoff's wait.
		if n%a.srv.len() == 0 && !a.o.Sleep(ctx, backoff(n/a.srv.len())) {
			return fmt.Errorf("post %d results: %w", len(batch), ctx.Err())
		}
		if ctx.Err() != nil {
			return fmt.Errorf("post %d results: %w", len(batch), ctx.Err())
		}
	}
}

// endpoints are the endpoints of the commands received, the worker's
// EndpointSource. An endpoint is kept while commands for it come; the
// server stops sending them when it is deleted or paused, and one not
// commanded for endpointKeptFor is forgotten with its latest result. Past
// maxKept endpoints the least recently commanded go first, so a server
// that names ever new endpoints cannot grow the agent without bound.
type endpoints struct {
	mu sync.Mutex
	m  map[string]model.Endpoint
	// values are the agent-side secret values each endpoint was given,
	// scrubbed from its results' text.
	values map[string][]string
	seen   map[string]time.Time // when each was last commanded
	latest *latest              // forgotten with its endpoint; nil: none
	max    int                  // 0: maxKeptEndpoints
	swept  time.Time
}

// How long an endpoint no command names is kept, and how many are kept
// at most: a location's endpoints, with room to spare.
const (
	endpointKeptFor  = 24 * time.Hour
	maxKeptEndpoints = 10_000
)

// forget drops the endpoints not commanded for endpointKeptFor (looked at
// once a minute) and, past the cap, the least recently commanded. Called
// with e.mu held.
func (e *endpoints) forget(now time.Time) {
	limit := cmp.Or(e.max, maxKeptEndpoints)
	if len(e.m) <= limit && now.Sub(e.swept) < time.Minute {
		return
	}
	e.swept = now
	for id, t := range e.seen {
		if now.Sub(t) >= endpointKeptFor {
			e.drop(id)
		}
	}
	if over := len(e.m) - limit; over > 0 {
		ids := slices.Collect(maps.Keys(e.seen))
		slices.SortFunc(ids, func(a, b string) int { return e.seen[a].Compare(e.seen[b]) })
		for _, id := range ids[:over] {
			e.drop(id)
		}
	}
}

func (e *endpoints) drop(id string) {
	delete(e.m, id)
	delete(e.values, id)
	delete(e.seen, id)
	if e.latest != nil {
		e.latest.forget(id)
	}
}

// put keeps ep, probed with the agent-side secret values given, as
// commanded at now.
func (e *endpoints) put(ep model.Endpoint, values []string, now time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.m[ep.ID] = ep
	if e.seen == nil {
		e.seen = map[string]time.Time{}
	}
	e.seen[ep.ID] = now
	defer e.forget(now)
	if e.values == nil {
		e.values = map[string][]string{}
	}
	var keep []string
	for _, v := range values {
		// As the prober's scrubber: replacing "1" everywhere would
		// garble every message and protect nothing.
		if len(v) >= minScrubLen {
			keep = append(keep, v)
		}
	}
	if len(keep) == 0 {
		delete(e.values, ep.ID)
	} else {
		e.values[ep.ID] = keep
	}
}

// secretValues are the agent-side secret values endpoint id was given.
func (e *endpoints) secretValues(id string) []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.values[id]
}

func (e *endpoints) GetEndpoint(_ context.Context, id string) (model.Endpoint, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	ep, ok := e.m[id]
	if !ok {
		return model.Endpoint{}, model.ErrNotFound
	}
	return ep, nil
}

// latest keeps each endpoint's latest result in memory: the next probe's
// era hint and version-change baseline.
type latest struct {
	mu sync.Mutex
	m  map[string]msg.ProbeResult
}

func newLatest() *latest { return &latest{m: map[string]msg.ProbeResult{}} }

func (l *latest) LatestResult(_ context.Context, id string) (msg.ProbeResult, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	r, ok := l.m[id]
	if !ok {
		return msg.ProbeResult{}, model.ErrNotFound
	}
	return r, nil
}

func (l *latest) forget(id string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.m, id)
}

func (l *latest) PutLatestResult(_ context.Context, r msg.ProbeResult) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.m[r.EndpointID] = r
	return nil
}

// toModel is the endpoint of a command as the prober takes it.
func toModel(in apiv1.AgentEndpoint) (model.Endpoint, error) {
	ep := model.Endpoint{ID: in.ID, URL: in.URL, Transport: in.Transport, ProtocolVersion: in.ProtocolVersion, Schedule: in.Schedule,
		Headers: in.Headers, Version: in.Version}
	for _, d := range []struct {
		raw string
		dst *time.Duration
	}{{in.Timeout, &ep.Timeout}, {in.LatencyThreshold, &ep.LatencyThreshold}, {in.CredentialWarning, &ep.CredentialWarning}} {
		if d.raw == "" {
			continue
		}
		v, err := time.ParseDuration(d.raw)
		if err != nil {
			return model.Endpoint{}, fmt.Errorf("duration %q: %w", d.raw, err)
		}
		*d.dst = v
	}
	if tc := in.ToolCheck; tc != nil {
		ep.ToolCheck = &model.ToolCheck{Name: tc.Name, Arguments: tc.Arguments}
		if x := tc.Expect; x != nil {
			ep.ToolCheck.Expect = &model.ToolExpect{Contains: x.Contains, JSONPath: x.JSONPath, Equals: x.Equals}
		}
	}
	if o := in.OAuth; o != nil {
		ep.OAuth = &model.OAuthClient{TokenURL: o.TokenURL, ClientID: o.ClientID, ClientSecret: o.ClientSecret, Scopes: o.Scopes, Audience: o.Audience}
	}
	if ep.ID == "" || ep.URL == "" {
		return model.Endpoint{}, errors.New("endpoint without ID or URL")
	}
	return ep, nil
}

// lookup is the model's view of the agent's secrets, for the substitution
// only: the value goes straight into the endpoint the prober sends.
func (a *agent) lookup(name string) (string, bool) {
	if a.o.Secrets == nil {
		return "", false
	}
	v, ok := a.o.Secrets.Lookup(name)
	return v.Reveal(), ok
}

// agentName is the agent as its messages name it.
func (a *agent) agentName() string {
	if n := a.name.Load(); n != nil && *n != "" && len(*n) <= 64 {
		return "agent " + *n
	}
	return "this agent"
}

// Bounds of a result's text the API checks (pkg/api checkAgentResult):
// scrubbing may lengthen a text, so it is cut again after.
const (
	maxResultText = 2048
	minScrubLen   = 4
)

// MissingSecretText is the error of a probe the agent could not send for
// lack of the secrets missing (sorted names): which agent, which secrets,
// and what to set. It names no value.
func MissingSecretText(agent string, missing []string) string {
	const show = 8
	names, vars := missing, make([]string, 0, min(len(missing), show))
	more := ""
	if len(names) > show {
		more = fmt.Sprintf(" (and %d more)", len(names)-show)
		names = names[:show]
	}
	for _, n := range names {
		vars = append(vars, model.SecretEnvVar(n))
	}
	if len(names) == 1 && more == "" {
		return fmt.Sprintf("%s has no secret %s: set %s or add it to --secrets-file", agent, names[0], vars[0])
	}
	return fmt.Sprintf("%s has no secrets %s%s: set %s or add them to --secrets-file", agent, strings.Join(names, ", "), more, strings.Join(vars, ", "))
}

// secretMissing posts the result of a probe of cmd that was not sent: the
// agent lacks the secrets missing. The target sees nothing.
func (a *agent) secretMissing(ctx context.Context, cmd msg.ProbeCommand, missing []string) {
	now := a.o.Clock.Now().UTC()
	res := msg.ProbeResult{Schema: msg.SchemaVersion, EndpointID: cmd.EndpointID, ProbeRunID: cmd.ProbeRunID(), Slot: cmd.Slot,
		StartedAt: now, FinishedAt: now, Status: msg.StatusDown, Class: prober.ClassSecretMissing,
		Error: MissingSecretText(a.agentName(), missing)}
	a.noteMissing(cmd.EndpointID, missing)
	if _, err := (poster{a}).Publish(ctx, queue.SendInput{GroupID: res.GroupID(), DedupID: res.DedupID(), Body: res.Body()}); err != nil && ctx.Err() == nil {
		a.log.Warn("probe not reported", "endpoint", cmd.EndpointID, "slot", cmd.Slot, "err", err)
	}
}

// noteMissing logs the secrets an endpoint lacks when they change: a
// warning once, then at debug while they stay missing.
func (a *agent) noteMissing(endpointID string, missing []string) {
	key := strings.Join(missing, ",")
	a.missingMu.Lock()
	prev, seen := a.missing[endpointID]
	if key == "" {
		delete(a.missing, endpointID)
	} else {
		a.missing[endpointID] = key
	}
	a.missingMu.Unlock()
	switch {
	case key == "" && seen:
		a.log.Info("the endpoint's agent-side secrets are all set again", "endpoint", endpointID)
	case key == "":
	case !seen || prev != key:
		a.log.Warn("an endpoint refers to agent-side secrets this agent lacks; its probes fail as secret_missing until they are set",
			"endpoint", endpointID, "missing", missing)
	default:
		a.log.Debug("agent-side secrets still missing", "endpoint", endpointID, "missing", missing)
	}
}

// scrub replaces the agent-side secret values of the result's endpoint in
// the result's text (what the target sent back may quote them) before it
// leaves the agent. A body that does not decode is the worker's and is
// left as it is.
func (a *agent) scrub(body []byte) []byte {
	var res msg.ProbeResult
	if msg.Decode(body, &res) != nil {
		return body
	}
	values := a.eps.secretValues(res.EndpointID)
	if len(values) == 0 {
		return body
	}
	cut := func(s string, limit int) string {
		if s = model.Scrub(s, values...); len(s) > limit {
			s = strings.ToValidUTF8(s[:limit], "") // drops a rune cut in two
		}
		return s
	}
	res.Error = cut(res.Error, maxResultText)
	res.ServerName, res.ServerVersion = cut(res.ServerName, 256), cut(res.ServerVersion, 256)
	for i := range res.Events {
		res.Events[i].Message = cut(res.Events[i].Message, maxResultText)
	}
	if c := res.Conformance; c != nil {
		for i := range c.Rules {
			c.Rules[i].Detail = cut(c.Rules[i].Detail, msg.MaxConformanceDetail)
		}
	}
	return res.Body()
}
