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
// An unreachable or failing server is waited out with backoff; a refused
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
	"net"
	"net/http"
	"net/url"
	"strconv"
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
	Token  model.Secret
	// AllowPrivateTargets turns the agent's SSRF guard off: it may probe
	// private and loopback addresses, as an agent inside a network must.
	AllowPrivateTargets bool
	// Concurrency bounds the probes in flight (default 16).
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
}

// Backoff bounds: the wait after a failed poll or post doubles from
// MinBackoff to MaxBackoff and starts over after a success.
const (
	MinBackoff = 500 * time.Millisecond
	MaxBackoff = 30 * time.Second
)

// Validate checks the options a command line gives.
func (o Options) Validate() error {
	u, err := url.Parse(o.Server)
	switch {
	case o.Server == "":
		return errors.New("--server is required: the mcpmon API's URL")
	case err != nil || u.Host == "" || u.User != nil || (u.Scheme != "https" && u.Scheme != "http"):
		return fmt.Errorf("--server %q: want https://host[:port]", o.Server)
	case u.Scheme == "http" && !loopback(u.Hostname()):
		return fmt.Errorf("--server %q: an agent talks to the API over HTTPS only (plain http only to a loopback address)", o.Server)
	case o.Token == "":
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
	base   string
	log    *slog.Logger
	worker *prober.Worker
	eps    *endpoints
	// refused is closed once the server refuses the key.
	refused     chan struct{}
	refusedOnce sync.Once
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
	o.Concurrency = cmp.Or(max(o.Concurrency, 0), 16)
	o.Wait = cmp.Or(max(min(o.Wait, apiv1.MaxAgentWait), 0), apiv1.DefaultAgentWait)
	o.Version = cmp.Or(o.Version, "dev")
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
	a := &agent{o: o, base: trimSlash(o.Server), log: o.Logger.With("component", "agent"), eps: &endpoints{m: map[string]model.Endpoint{}},
		refused: make(chan struct{})}
	po := prober.Options{AllowPrivateTargets: o.AllowPrivateTargets, Logger: o.Logger, Clock: o.Clock,
		ClientName: "mcpmon-agent", ClientVersion: o.Version}
	if o.Prober != nil {
		o.Prober(&po)
	}
	a.worker = prober.NewWorker(prober.New(po), a.eps, poster{a}, prober.WorkerOptions{Latest: newLatest(), Logger: o.Logger, Clock: o.Clock})

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
			o.Sleep(ctx, backoff(failures)) // a done ctx ends the loop's next turn
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
			a.eps.put(ep)
			select {
			case slots <- struct{}{}:
			case <-ctx.Done():
				continue
			}
			cmd := msg.NewProbeCommand(c.EndpointID, c.Slot)
			wg.Go(func() {
				defer func() { <-slots }()
				if err := a.worker.Handle(ctx, queue.Message{ID: cmd.ProbeRunID(), Body: cmd.Body()}); err != nil && ctx.Err() == nil {
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

func trimSlash(s string) string {
	for len(s) > 0 && s[len(s)-1] == '/' {
		s = s[:len(s)-1]
	}
	return s
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
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.base+"/v1/agent/commands?"+q.Encode(), nil)
	if err != nil {
		return nil, err
	}
	body, err := a.do(req)
	if err != nil {
		return nil, err
	}
	var out apiv1.AgentCommands
	if err := json.Unmarshal(body, &out); err != nil {
		return nil, fmt.Errorf("decode commands: %w", err)
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

// do sends req with the key and returns the body of a 2xx answer. A 401
// or 403 marks the key refused.
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
	if resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden {
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

// poster is the worker's ResultPublisher: it posts each result, retrying
// with backoff while the server is unreachable or failing, until the
// result is accepted or the agent stops.
type poster struct{ a *agent }

func (p poster) Publish(ctx context.Context, in queue.SendInput) (string, error) {
	body := make([]byte, 0, len(in.Body)+16)
	body = append(append(append(body, `{"results":[`...), in.Body...), "]}"...)
	for n := 1; ; n++ {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.a.base+"/v1/agent/results", bytes.NewReader(body))
		if err != nil {
			return "", err
		}
		req.Header.Set("Content-Type", "application/json")
		_, err = p.a.do(req)
		switch {
		case err == nil:
			return in.DedupID, nil
		case p.a.isRefused() || !retryable(err):
			return "", fmt.Errorf("post result %s: %w", in.DedupID, err)
		case n == 1:
			p.a.log.Warn("posting a result failed; retrying with backoff", "dedup_id", in.DedupID, "err", err)
		}
		if !p.a.o.Sleep(ctx, backoff(n)) {
			return "", fmt.Errorf("post result %s: %w", in.DedupID, ctx.Err())
		}
	}
}

// endpoints are the endpoints of the commands received, the worker's
// EndpointSource. An endpoint is kept while commands for it come; the
// server stops sending them when it is deleted or paused.
type endpoints struct {
	mu sync.Mutex
	m  map[string]model.Endpoint
}

func (e *endpoints) put(ep model.Endpoint) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.m[ep.ID] = ep
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
