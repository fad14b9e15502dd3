// Package hostcheck owns the DNS side of status page hosts: the lookup of
// the TXT record that proves a page's custom host (LookupChallenge, which
// the API's verify-host uses too) and the re-check of hosts already
// served (Checker), so a host whose proof has gone is not served on the
// strength of a record seen once.
//
// Data enters from the store (every status page, store.KindStatusPage)
// and from DNS; it leaves as status pages written back with what their
// re-check found (model.StatusPage.RecheckHost decides; this package only
// looks up and writes), a log line per host failing or released, and
// mcpmon_status_page_host_checks_total.
package hostcheck

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"github.com/mcpmon/mcpmon/pkg/clock"
	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/store"
)

// Resolver is what proving a host needs of DNS: the TXT records at a
// name. *net.Resolver satisfies it.
type Resolver interface {
	LookupTXT(ctx context.Context, name string) ([]string, error)
}

// ResolverAt is a resolver that asks only the DNS server at addr
// (host:port), over UDP and, for an answer too big for it, TCP: the
// deployment's choice (--status-page-host-resolver) of whose view of DNS
// proves a host, instead of whatever the machine's resolver answers
// (a split-horizon view, a search list, a cache).
func ResolverAt(addr string) *net.Resolver {
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}}
}

// DefaultLookupTimeout bounds one lookup of a host's record.
const DefaultLookupTimeout = 5 * time.Second

// LookupChallenge reads the TXT records at host's challenge name within
// timeout. A name without TXT records is no records, not an error. The
// resolver bounds what it reads (a DNS message is at most 64 KiB);
// model.CheckChallenge bounds what is interpreted of it.
func LookupChallenge(ctx context.Context, r Resolver, host string, timeout time.Duration) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	// Rooted, so the resolver's search domains add no queries.
	records, err := r.LookupTXT(ctx, model.ChallengeName(host)+".")
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) && dnsErr.IsNotFound {
		return nil, nil
	}
	return records, err
}

// Store is what the re-check needs of the store.
type Store interface {
	ListObjects(ctx context.Context, kind string) (map[string][]byte, error)
	GetObject(ctx context.Context, kind, id string) ([]byte, error)
	SwapObject(ctx context.Context, kind, id string, old, doc []byte) error
}

// Metrics are the re-check's.
type Metrics struct {
	Checks *prometheus.CounterVec // by model.HostCheckOutcome
}

// NewMetrics registers the re-check's metrics on reg, every outcome at 0.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{Checks: promauto.With(reg).NewCounterVec(prometheus.CounterOpts{
		Name: "mcpmon_status_page_host_checks_total",
		Help: "Re-checks of status page hosts already served, by outcome: proven, unproven (record missing, within the grace), released (missing for the grace: no longer served), lookup_fail.",
	}, []string{"outcome"})}
	for _, o := range model.HostCheckOutcomes() {
		m.Checks.WithLabelValues(string(o))
	}
	return m
}

// Defaults of Options.
const (
	DefaultEvery = time.Minute
	DefaultBatch = 10
)

// Options configure a Checker. Store, Resolver and NewToken are required.
type Options struct {
	Store    Store
	Resolver Resolver
	Policy   model.HostRecheck
	// Batch bounds the hosts one round looks up (default DefaultBatch),
	// so a round's work is bounded whatever the number of pages: the
	// most overdue go first, the rest wait for the next rounds.
	Batch   int
	Timeout time.Duration // of one lookup (default DefaultLookupTimeout)
	// NewToken issues the token of a grandfathered host's first re-check.
	NewToken func() string
	Clock    clock.Clock
	Logger   *slog.Logger
	Metrics  *Metrics // nil: not counted
}

// Checker re-checks status page hosts, a bounded batch per round.
type Checker struct {
	o   Options
	log *slog.Logger
}

// New returns a Checker of o.
func New(o Options) *Checker {
	o.Batch = cmp.Or(max(o.Batch, 0), DefaultBatch)
	o.Timeout = cmp.Or(max(o.Timeout, 0), DefaultLookupTimeout)
	if o.Clock == nil {
		o.Clock = clock.Real{}
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Checker{o: o, log: log.With("component", "hostcheck")}
}

// Due picks, of pages, those whose host is due at now (HostCheckDue), the
// most overdue first (then by ID), at most batch of them.
func Due(pages []model.StatusPage, now time.Time, pol model.HostRecheck, batch int) []model.StatusPage {
	type due struct {
		at time.Time
		p  model.StatusPage
	}
	var ds []due
	for _, p := range pages {
		if at, ok := p.HostCheckDue(pol); ok && !at.After(now) {
			ds = append(ds, due{at, p})
		}
	}
	slices.SortFunc(ds, func(a, b due) int {
		if c := a.at.Compare(b.at); c != 0 {
			return c
		}
		return cmp.Compare(a.p.ID, b.p.ID)
	})
	out := make([]model.StatusPage, 0, min(len(ds), batch))
	for _, d := range ds[:min(len(ds), batch)] {
		out = append(out, d.p)
	}
	return out
}

// Run does a round every `every` until ctx ends. Every replica may run it:
// a page is written only if it is still as read before its lookup, so
// two replicas that look at one host together write it once, and at
// worst the host is looked up twice.
func (c *Checker) Run(ctx context.Context, every time.Duration) error {
	t := time.NewTicker(cmp.Or(every, DefaultEvery))
	defer t.Stop()
	for {
		if _, err := c.Round(ctx); err != nil && ctx.Err() == nil {
			c.log.Warn("status page host re-check round failed", "err", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// Round looks up the hosts due now (at most Options.Batch) and writes
// back what each look found; it returns how many pages it wrote. A page
// that does not decode is skipped; a store error ends the round.
func (c *Checker) Round(ctx context.Context) (int, error) {
	docs, err := c.o.Store.ListObjects(ctx, store.KindStatusPage)
	if err != nil {
		return 0, fmt.Errorf("list status pages: %w", err)
	}
	pages := make([]model.StatusPage, 0, len(docs))
	for id, doc := range docs {
		p, err := model.DecodeStatusPage(doc)
		if err != nil {
			c.log.Error("skipping undecodable status page", "page", id, "err", err)
			continue
		}
		p.ID = id
		pages = append(pages, p)
	}
	wrote := 0
	for _, p := range Due(pages, c.o.Clock.Now(), c.o.Policy, c.o.Batch) {
		if ctx.Err() != nil {
			return wrote, nil
		}
		ok, err := c.check(ctx, p)
		if err != nil {
			return wrote, err
		}
		if ok {
			wrote++
		}
	}
	return wrote, nil
}

// check looks p's host up and writes what RecheckHost decides.
//
// Nothing is locked across the lookup: the page is read again after it,
// and written only if its host and proof are still those read before and
// only while it is still the document read again (store.SwapObject), so
// a tenant's change (or another replica's re-check) in between wins and
// this look is dropped; the page is looked at again in a later round.
// The page is the only write, so a crash anywhere leaves the page as it
// was, due again.
func (c *Checker) check(ctx context.Context, p model.StatusPage) (bool, error) {
	read := p.HostVerification
	p = p.WithRecheckToken(c.o.NewToken())
	v := p.HostVerification
	proof := error(nil)
	records, err := LookupChallenge(ctx, c.o.Resolver, p.Host, c.o.Timeout)
	if err == nil {
		proof = model.CheckChallenge(records, v.ChallengeValue())
	} else if ctx.Err() != nil {
		return false, nil // shutting down: not a failed lookup
	} else {
		proof = err
	}
	doc, err := c.o.Store.GetObject(ctx, store.KindStatusPage, p.ID)
	if errors.Is(err, model.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("read status page %s: %w", p.ID, err)
	}
	cur, err := model.DecodeStatusPage(doc)
	if err != nil || cur.Host != p.Host || !sameProof(cur.HostVerification, read) {
		return false, nil
	}
	// The decision applies to the page as read again, so an edit of its
	// other fields since the round listed it (a title) is kept; its proof
	// is the one looked up, with the token issued for the look.
	cur.HostVerification = p.HostVerification
	now := c.o.Clock.Now().UTC()
	next, outcome := cur.RecheckHost(now, proof, c.o.Policy)
	out, err := json.Marshal(next)
	if err != nil {
		return false, fmt.Errorf("encode status page %s: %w", p.ID, err)
	}
	switch err := c.o.Store.SwapObject(ctx, store.KindStatusPage, p.ID, doc, out); {
	case errors.Is(err, store.ErrConflict) || errors.Is(err, model.ErrNotFound):
		return false, nil // changed or deleted since it was read again
	case err != nil:
		return false, fmt.Errorf("write status page %s: %w", p.ID, err)
	}
	if c.o.Metrics != nil {
		c.o.Metrics.Checks.WithLabelValues(string(outcome)).Inc()
	}
	nv := next.HostVerification
	attrs := []any{"page", p.ID, "tenant", model.TenantOf(p.Tenant), "host", p.Host, "outcome", outcome}
	switch outcome {
	case model.HostCheckReleased:
		c.log.Warn("status page host released: its proof has been missing for the grace; no longer served",
			append(attrs, "failing_since", nv.FailingSince, "failure", nv.Failure)...)
	case model.HostCheckUnproven:
		c.log.Info("status page host proof missing", append(attrs, "failing_since", nv.FailingSince, "failure", nv.Failure)...)
	case model.HostCheckLookupFail:
		// The resolver's error names its servers: the operator's log
		// gets it, the tenant a sentence (RecheckHost).
		c.log.Warn("status page host lookup failed", append(attrs, "err", proof)...)
	default:
		c.log.Debug("status page host proven", attrs...)
	}
	return true, nil
}

// sameProof reports whether a and b are the same proof (both none, or
// equal).
func sameProof(a, b *model.HostVerification) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}
