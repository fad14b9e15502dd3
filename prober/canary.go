package prober

// canary.go owns the prober's view of its own network: every Interval it
// sends one GET to each of the operator's canary URLs (--canary-url), and a
// round in which none of them gave any HTTP answer is a failed round.
// DecideBlindness folds the rounds into blind or sighted with hysteresis;
// the Canary around it runs the rounds, tells the worker (worker.go marks
// results blind) and owes the operator one notice when a spell starts and
// one when it ends.

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"github.com/mcpmon/mcpmon/pkg/clock"
	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/msg"
	"github.com/mcpmon/mcpmon/pkg/netguard"
)

// Canary defaults.
const (
	DefaultCanaryInterval = 30 * time.Second
	DefaultCanaryTimeout  = 5 * time.Second
	// DefaultBlindAfter failed rounds in a row make the prober blind; a
	// single lost round (one canary restarting while the other times out)
	// must not silence every owner's alerts.
	DefaultBlindAfter = 3
	// DefaultSightedAfter rounds in a row that reach a canary end a spell,
	// so a network that flaps does not send a notice per flap.
	DefaultSightedAfter = 2
	// maxOwedNotices bounds the notices kept while the notifier fails.
	maxOwedNotices = 16
)

// Blindness is the state DecideBlindness folds rounds into.
type Blindness struct {
	Blind bool
	// Since is the first failed round of the current run of failures:
	// the spell's start while Blind, else when the prober began to fail
	// (zero while the last round reached a canary).
	Since time.Time
	// Failed and Reached count the rounds in a row that failed and that
	// reached a canary; one of them is always zero.
	Failed, Reached int
}

// Suspect: the last round failed but not yet enough in a row to be blind.
func (b Blindness) Suspect() bool { return !b.Blind && b.Failed > 0 }

// changing: the last round may be the first of a change (the prober
// beginning to fail, or a blind one reaching a canary again), so the next
// round should come soon.
func (b Blindness) changing() bool { return b.Suspect() || (b.Blind && b.Reached > 0) }

// BlindChange is what a round changed.
type BlindChange int

const (
	NoChange BlindChange = iota
	WentBlind
	Recovered
)

// DecideBlindness folds the round finished at at (reached: some canary gave
// an HTTP answer) into b: blind after blindAfter failed rounds in a row,
// sighted again after sightedAfter reaching rounds in a row.
func DecideBlindness(b Blindness, reached bool, at time.Time, blindAfter, sightedAfter int) (Blindness, BlindChange) {
	blindAfter, sightedAfter = max(blindAfter, 1), max(sightedAfter, 1)
	if !reached {
		b.Reached = 0
		b.Failed++
		if b.Failed == 1 && !b.Blind {
			b.Since = at
		}
		if !b.Blind && b.Failed >= blindAfter {
			b.Blind = true
			return b, WentBlind
		}
		return b, NoChange
	}
	b.Failed = 0
	b.Reached++
	switch {
	case !b.Blind:
		b.Since = time.Time{}
	case b.Reached >= sightedAfter:
		return Blindness{Reached: b.Reached}, Recovered
	}
	return b, NoChange
}

// BlindNotifier tells the operator about a spell: once with Until zero when
// it starts, once with Until set when it ends. An error keeps the notice
// owed; it is tried again after the next round.
type BlindNotifier interface {
	NotifyBlindness(ctx context.Context, s msg.BlindSpell) error
}

// CanaryOptions configure a Canary. URLs is required.
type CanaryOptions struct {
	URLs     []string
	Interval time.Duration // default DefaultCanaryInterval
	Timeout  time.Duration // one round, default DefaultCanaryTimeout
	// Recheck is the pause between rounds while the state may be
	// changing (the last round failed while sighted, or reached a canary
	// while blind) and while a worker waits for the canaries' word
	// (default the smaller of Interval and 2s): blindness and recovery are
	// told within a few rounds, not a few intervals.
	Recheck      time.Duration
	BlindAfter   int           // default DefaultBlindAfter
	SightedAfter int           // default DefaultSightedAfter
	Notifier     BlindNotifier // nil: no notices
	Metrics      *CanaryMetrics
	Logger       *slog.Logger
}

// ErrCanaryURL reports a canary URL that cannot be checked.
var ErrCanaryURL = errors.New("invalid canary URL")

// Canary runs the canary rounds of one prober (one region) and keeps its
// blindness. Blind and Settle may be called from any goroutine.
type Canary struct {
	opts   CanaryOptions
	region string
	clk    clock.Clock
	log    *slog.Logger
	check  func(ctx context.Context, rawURL string) error

	mu sync.Mutex
	b  Blindness
	// lastStart is when the last finished round started; done is closed
	// and replaced when a round finishes.
	lastStart time.Time
	done      chan struct{}
	owed      []msg.BlindSpell
	kick      chan struct{}
}

// NewCanary returns the canary of prober p: its rounds go through p's SSRF
// guard (so a canary on a private address needs --allow-private-targets,
// as a target does), resolver and User-Agent, and its notices name p's
// region.
func NewCanary(p *Prober, opts CanaryOptions) (*Canary, error) {
	if len(opts.URLs) == 0 {
		return nil, fmt.Errorf("%w: none given", ErrCanaryURL)
	}
	for _, raw := range opts.URLs {
		if err := checkCanaryURL(p.guard, raw); err != nil {
			return nil, err
		}
	}
	if opts.Interval <= 0 {
		opts.Interval = DefaultCanaryInterval
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultCanaryTimeout
	}
	if opts.Recheck <= 0 {
		opts.Recheck = min(opts.Interval, 2*time.Second)
	}
	if opts.BlindAfter <= 0 {
		opts.BlindAfter = DefaultBlindAfter
	}
	if opts.SightedAfter <= 0 {
		opts.SightedAfter = DefaultSightedAfter
	}
	if opts.Logger == nil {
		opts.Logger = p.opts.Logger
	}
	c := &Canary{
		opts: opts, region: p.opts.Region, clk: p.clock,
		log:  opts.Logger.With("component", "canary", "region", p.opts.Region),
		done: make(chan struct{}), kick: make(chan struct{}, 1),
	}
	c.check = newCanaryCheck(p, opts.Timeout)
	opts.Metrics.Precreate(c.region)
	return c, nil
}

// checkCanaryURL refuses a URL that is not absolute http(s) or whose host
// the guard refuses as written (the dialer checks resolved addresses).
func checkCanaryURL(g netguard.Guard, raw string) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%w: %q: want an absolute http or https URL", ErrCanaryURL, model.RedactURL(raw))
	}
	if err := g.CheckURL(u); err != nil {
		return fmt.Errorf("%w: %s: %w", ErrCanaryURL, model.RedactURL(raw), err)
	}
	return nil
}

// newCanaryCheck is one canary GET: nil for any HTTP answer (a 500 or a
// redirect is a network that works), the transport error otherwise.
func newCanaryCheck(p *Prober, timeout time.Duration) func(ctx context.Context, rawURL string) error {
	d := &net.Dialer{Timeout: timeout, KeepAlive: -1, Resolver: p.opts.Resolver, Control: p.guard.Control}
	client := &http.Client{
		Transport: &http.Transport{
			DialContext:            d.DialContext,
			TLSClientConfig:        &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: p.opts.RootCAs},
			DisableKeepAlives:      true, // each round measures a fresh path
			TLSHandshakeTimeout:    timeout,
			MaxResponseHeaderBytes: headerBudget,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	ua := p.opts.ClientName + "/" + p.opts.ClientVersion
	return func(ctx context.Context, rawURL string) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
		if err != nil {
			return err
		}
		req.Header.Set("User-Agent", ua)
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		_, _ = io.CopyN(io.Discard, resp.Body, 4096)
		return resp.Body.Close()
	}
}

// Blind reports whether the prober is blind, and since when.
func (c *Canary) Blind() (since time.Time, blind bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.b.Since, c.b.Blind
}

// Settle waits until the canaries have had their word on a failure seen at
// after: a round started after it has finished and the prober is
// either blind or not suspect. It asks for a round at once instead of
// waiting out the interval. A worker holds a result that failed at the
// network level here, so that the results of the seconds before blindness
// is established are marked blind too instead of reaching the aggregator
// as down. ctx bounds the wait; when it ends Settle answers with what is
// known.
func (c *Canary) Settle(ctx context.Context, after time.Time) (since time.Time, blind bool) {
	for {
		c.mu.Lock()
		b, last, done := c.b, c.lastStart, c.done
		c.mu.Unlock()
		if b.Blind || (last.After(after) && !b.Suspect()) {
			return b.Since, b.Blind
		}
		select {
		case c.kick <- struct{}{}:
		default:
		}
		select {
		case <-done:
		case <-ctx.Done():
			return b.Since, b.Blind
		}
	}
}

// SettleBound is the longest a worker waits in Settle: BlindAfter rounds
// with a pause between each, and one more round for the one in flight.
func (c *Canary) SettleBound() time.Duration {
	n := time.Duration(c.opts.BlindAfter + 1)
	return n*c.opts.Timeout + n*c.opts.Recheck
}

// Run runs rounds until ctx is done: every Interval, every Recheck while
// the last round failed, and at once (at most once per Recheck) when a
// worker waits in Settle.
func (c *Canary) Run(ctx context.Context) error {
	t := time.NewTimer(c.opts.Interval)
	defer t.Stop()
	for {
		start := c.clk.Now()
		reached := c.round(ctx)
		if ctx.Err() != nil {
			return nil
		}
		soon := c.fold(start, reached)
		c.deliver(ctx)
		wait := c.opts.Interval
		if soon {
			wait = c.opts.Recheck
		}
		t.Reset(wait)
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		case <-c.kick:
			t.Stop()
			// At most one round per Recheck, however many workers wait.
			if rest := c.opts.Recheck - c.clk.Now().Sub(start); rest > 0 {
				t.Reset(rest)
				select {
				case <-ctx.Done():
					return nil
				case <-t.C:
				}
			}
		}
	}
}

// round checks every canary at once; true when any gave an HTTP answer.
func (c *Canary) round(ctx context.Context) bool {
	rctx, cancel := context.WithTimeout(ctx, c.opts.Timeout)
	defer cancel()
	began := time.Now()
	results := make(chan error, len(c.opts.URLs))
	for _, u := range c.opts.URLs {
		go func() { results <- c.check(rctx, u) }()
	}
	reached := false
	var errs []error
	for range c.opts.URLs {
		if err := <-results; err != nil {
			errs = append(errs, err)
		} else if !reached {
			reached = true
			cancel() // one answer is enough
		}
	}
	c.opts.Metrics.observe(c.region, reached, time.Since(began))
	if !reached && ctx.Err() == nil {
		c.log.Debug("no canary answered", "err", errors.Join(errs...))
	}
	return reached
}

// fold decides the round and records what it owes; soon says the next
// round should come after Recheck rather than Interval.
func (c *Canary) fold(start time.Time, reached bool) (soon bool) {
	c.mu.Lock()
	prev := c.b
	next, change := DecideBlindness(prev, reached, start.UTC(), c.opts.BlindAfter, c.opts.SightedAfter)
	c.b, c.lastStart = next, start
	switch change {
	case WentBlind:
		c.owe(msg.BlindSpell{Region: c.region, Since: next.Since})
	case Recovered:
		c.owe(msg.BlindSpell{Region: c.region, Since: prev.Since, Until: start.UTC()})
	}
	close(c.done)
	c.done = make(chan struct{})
	c.mu.Unlock()

	c.opts.Metrics.setBlind(c.region, next.Blind)
	switch change {
	case WentBlind:
		c.log.Warn("mcpmon is blind: no canary answered; results are marked blind and their windows are no_data", "since", next.Since, "rounds", next.Failed)
	case Recovered:
		c.log.Info("mcpmon sees again: a canary answered", "blind_since", prev.Since)
	}
	return next.changing()
}

// owe queues a notice; called with mu held.
func (c *Canary) owe(s msg.BlindSpell) {
	if c.opts.Notifier == nil {
		return
	}
	if len(c.owed) == maxOwedNotices {
		c.log.Warn("blindness notices are not getting through; dropping the oldest", "spell", c.owed[0].ID())
		c.owed = c.owed[1:]
	}
	c.owed = append(c.owed, s)
}

// deliver sends the owed notices in order, stopping at the first failure
// (the rest keep their order for the next round).
func (c *Canary) deliver(ctx context.Context) {
	for {
		c.mu.Lock()
		if len(c.owed) == 0 {
			c.mu.Unlock()
			return
		}
		s := c.owed[0]
		c.mu.Unlock()
		if err := c.opts.Notifier.NotifyBlindness(ctx, s); err != nil {
			c.log.Warn("blindness notice not delivered; tried again after the next round", "spell", s.ID(), "err", err)
			return
		}
		c.mu.Lock()
		c.owed = c.owed[1:]
		c.mu.Unlock()
	}
}

// CanaryMetrics are the canaries' series, by the prober's region (bounded
// by the region set).
type CanaryMetrics struct {
	blind    *prometheus.GaugeVec
	checks   *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

// Outcomes of a canary round, the outcome label of mcpmon_canary_rounds_total.
const (
	CanaryReached     = "reached"
	CanaryUnreachable = "unreachable"
)

// NewCanaryMetrics registers the canary metrics with reg.
func NewCanaryMetrics(reg prometheus.Registerer) *CanaryMetrics {
	f := promauto.With(reg)
	return &CanaryMetrics{
		blind: f.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: "mcpmon", Name: "prober_blind",
			Help: "1 while the region's prober is blind (every canary failed BlindAfter rounds in a row), else 0.",
		}, []string{"region"}),
		checks: f.NewCounterVec(prometheus.CounterOpts{
			Namespace: "mcpmon", Name: "canary_rounds_total",
			Help: "Canary rounds, by outcome (reached: some canary gave an HTTP answer; unreachable: none did).",
		}, []string{"region", "outcome"}),
		duration: f.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "mcpmon", Name: "canary_round_seconds",
			Help:    "Duration of a canary round: until the first answer, or until every canary failed.",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}, []string{"region"}),
	}
}

// Precreate makes region's series exist from the start (mcpmon_prober_blind
// at 0): a prober without canaries is never blind, and says so.
func (m *CanaryMetrics) Precreate(region string) {
	if m == nil {
		return
	}
	m.blind.WithLabelValues(region)
	m.checks.WithLabelValues(region, CanaryReached)
	m.checks.WithLabelValues(region, CanaryUnreachable)
	m.duration.WithLabelValues(region)
}

func (m *CanaryMetrics) observe(region string, reached bool, d time.Duration) {
	if m == nil {
		return
	}
	outcome := CanaryUnreachable
	if reached {
		outcome = CanaryReached
	}
	m.checks.WithLabelValues(region, outcome).Inc()
	m.duration.WithLabelValues(region).Observe(d.Seconds())
}

func (m *CanaryMetrics) setBlind(region string, blind bool) {
	if m == nil {
		return
	}
	v := 0.0
	if blind {
		v = 1
	}
	m.blind.WithLabelValues(region).Set(v)
}
