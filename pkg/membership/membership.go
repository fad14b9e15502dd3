// Package membership owns the store's record of which replicas of a role
// are alive: each replica writes a heartbeat {id, lastSeen} into the
// store's objects (one kind per role, one object per replica) every
// Interval, and reads the others' back as a view of the live members.
//
// Data enters through Run (or Beat), which writes this replica's
// heartbeat, and leaves through Live, which lists the kind at most once per
// Interval and returns the IDs whose heartbeat is at most TTL old. A
// replica that stops cleanly deletes its heartbeat (Leave), so the others
// stop counting it at their next listing instead of after the TTL; a
// killed one drops out after the TTL.
//
// Times are the writers' clocks compared with the reader's: clock skew
// between replicas shifts the TTL by the skew, which must stay well below
// it (seconds against tens of seconds).
package membership

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/mcpmon/mcpmon/pkg/clock"
)

// Defaults.
const (
	DefaultInterval = 10 * time.Second
	// DefaultForget: a heartbeat older than this is deleted by a reader
	// (replica IDs change with every restart, host-pid).
	DefaultForget = 24 * time.Hour
)

// Store is what membership needs from pkg/store (store.Objects).
type Store interface {
	PutObject(ctx context.Context, kind, id string, doc []byte) error
	ListObjects(ctx context.Context, kind string) (map[string][]byte, error)
	DeleteObject(ctx context.Context, kind, id string) error
}

// Options configure a Membership. Store, Kind and ID are required.
type Options struct {
	Store Store
	// Kind is the store object kind of the role's heartbeats, e.g.
	// "aggregator-heartbeat".
	Kind string
	// ID is this replica's identity (--replica-id), unique in the role.
	ID string
	// Interval is how often the heartbeat is written and, at most, how
	// often the view is listed (default 10s).
	Interval time.Duration
	// TTL is how old a heartbeat may be and still count (default three
	// intervals: three missed beats before a replica is given up).
	TTL time.Duration
	// Forget is the age past which a reader deletes a heartbeat (default
	// 24h).
	Forget time.Duration
	Clock  clock.Clock
	Logger *slog.Logger
}

// Beat is one replica's heartbeat as stored.
type Beat struct {
	ID       string    `json:"id"`
	LastSeen time.Time `json:"lastSeen"`
}

// Membership writes this replica's heartbeat and reads the live members.
type Membership struct {
	opts Options
	clk  clock.Clock
	log  *slog.Logger

	mu     sync.Mutex
	beats  []Beat
	listed time.Time
	known  bool
}

// New returns a Membership.
func New(opts Options) (*Membership, error) {
	if opts.Store == nil || opts.Kind == "" || opts.ID == "" {
		return nil, errors.New("membership: Options.Store, Kind and ID are required")
	}
	if opts.Interval <= 0 {
		opts.Interval = DefaultInterval
	}
	if opts.TTL <= 0 {
		opts.TTL = 3 * opts.Interval
	}
	if opts.Forget <= 0 {
		opts.Forget = DefaultForget
	}
	if opts.Clock == nil {
		opts.Clock = clock.Real{}
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	return &Membership{opts: opts, clk: opts.Clock, log: opts.Logger.With("component", "membership", "kind", opts.Kind)}, nil
}

// ID is this replica's identity.
func (m *Membership) ID() string { return m.opts.ID }

// TTL is how long a silent member still counts as live.
func (m *Membership) TTL() time.Duration { return m.opts.TTL }

// Beat writes this replica's heartbeat once.
func (m *Membership) Beat(ctx context.Context) error {
	doc, err := json.Marshal(Beat{ID: m.opts.ID, LastSeen: m.clk.Now().UTC()})
	if err != nil {
		return err
	}
	if err := m.opts.Store.PutObject(ctx, m.opts.Kind, m.opts.ID, doc); err != nil {
		return fmt.Errorf("membership: heartbeat %s/%s: %w", m.opts.Kind, m.opts.ID, err)
	}
	return nil
}

// Leave deletes this replica's heartbeat, so readers stop counting it at
// their next listing.
func (m *Membership) Leave(ctx context.Context) error {
	if err := m.opts.Store.DeleteObject(ctx, m.opts.Kind, m.opts.ID); err != nil {
		return fmt.Errorf("membership: leave %s/%s: %w", m.opts.Kind, m.opts.ID, err)
	}
	return nil
}

// Run beats every Interval until ctx is done, then leaves. A failed write
// is retried at the next beat: a store outage makes this replica look dead
// only after the TTL, and then every replica alike.
func (m *Membership) Run(ctx context.Context) error {
	t := time.NewTicker(m.opts.Interval)
	defer t.Stop()
	for {
		if err := m.Beat(ctx); err != nil && ctx.Err() == nil {
			m.log.Debug("heartbeat not written; retried at the next beat", "err", err)
		}
		select {
		case <-ctx.Done():
			// Detached: the process context is what just ended. Bounded,
			// because a dead store must not hold up the shutdown; if the
			// delete fails the others wait out the TTL instead.
			lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
			defer cancel()
			if err := m.Leave(lctx); err != nil {
				m.log.Debug("heartbeat not deleted on the way out; the others give this replica up after the TTL", "err", err)
			}
			return nil
		case <-t.C:
		}
	}
}

// Live returns the IDs of the members live now, sorted, listing the store
// at most once per Interval (between listings the last one is judged
// against the current time, so a member that stopped drops out on time).
// ok is false when nothing was ever listed (the store failed every time
// so far): the caller cannot tell who is live.
func (m *Membership) Live(ctx context.Context) (ids []string, ok bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.clk.Now()
	if !m.known || now.Sub(m.listed) >= m.opts.Interval {
		if docs, err := m.opts.Store.ListObjects(ctx, m.opts.Kind); err != nil {
			m.log.Debug("heartbeats not listed; the last view stands", "err", err)
		} else {
			m.listed, m.known, m.beats = now, true, m.beats[:0]
			for id, doc := range docs {
				var b Beat
				if json.Unmarshal(doc, &b) != nil || b.ID == "" {
					continue
				}
				if now.Sub(b.LastSeen) > m.opts.Forget {
					_ = m.opts.Store.DeleteObject(ctx, m.opts.Kind, id)
					continue
				}
				m.beats = append(m.beats, b)
			}
		}
	}
	if !m.known {
		return nil, false
	}
	return LiveAt(m.beats, now, m.opts.TTL), true
}

// LiveAt is the pure rule: the IDs with a heartbeat at most ttl older than
// t (or newer), sorted and unique.
func LiveAt(beats []Beat, t time.Time, ttl time.Duration) []string {
	var out []string
	for _, b := range beats {
		if !b.LastSeen.Before(t.Add(-ttl)) {
			out = append(out, b.ID)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}
