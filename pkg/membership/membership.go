// Package membership owns the store's record of which replicas of a role
// are alive: each replica writes a heartbeat {id, lastSeen} into the
// store's objects (one kind per role, one object per replica) every
// Interval, and reads the others' back as a view of the live members. It
// serves aggregator replicas, which split the windows they decide among
// the live ones (Live), and probers, whose heartbeats carry their region
// so the aggregator can tell which regions have a live prober (Regions).
//
// Data enters through Run (or Beat), which writes this replica's
// heartbeat, and leaves through Live and Regions.LiveAt, which list the
// kind at most once per Interval and judge each heartbeat against the TTL.
// A replica that stops cleanly deletes its heartbeat (Leave), so the others
// stop counting it at their next listing instead of after the TTL, unless
// it keeps it (KeepOnStop: a prober region restarting its only replica
// stays live across the restart); a killed one drops out after the TTL.
//
// Times are the writers' clocks compared with the reader's: clock skew
// between replicas shifts the TTL by the skew, which must stay well below
// it (seconds against tens of seconds).
package membership

import (
	"cmp"
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
	// Region is the region this replica serves, for roles whose members
	// serve one (a prober): a process serving several regions is one
	// member per region.
	Region string
	// KeepOnStop: Run leaves the heartbeat to expire instead of deleting
	// it when ctx ends.
	KeepOnStop bool
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

func (o *Options) defaults() {
	if o.Interval <= 0 {
		o.Interval = DefaultInterval
	}
	if o.TTL <= 0 {
		o.TTL = 3 * o.Interval
	}
	if o.Forget <= 0 {
		o.Forget = DefaultForget
	}
	if o.Clock == nil {
		o.Clock = clock.Real{}
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
}

// Beat is one replica's heartbeat as stored, under the object id Key().
type Beat struct {
	ID string `json:"id"`
	// Region is empty for a role whose members serve no region.
	Region   string    `json:"region,omitempty"`
	LastSeen time.Time `json:"lastSeen"`
}

// Key is the beat's object id: the ID, or region|ID for a member of a
// region, so one process's members of several regions are apart.
func (b Beat) Key() string {
	if b.Region == "" {
		return b.ID
	}
	return b.Region + "|" + b.ID
}

// storedBeat is every shape a heartbeat has been stored in. Prober
// heartbeats written before they were membership beats are
// {region, replica, lastSeen}, under the same kind and object id: they are
// read (for one release, while not yet upgraded probers still write them)
// as the beat of member replica, or of the object id when replica is
// empty. A current beat keeps "region" and "lastSeen", so a reader of that
// older shape reads it too.
type storedBeat struct {
	Beat
	Replica string `json:"replica"`
}

// decodeBeat reads the heartbeat stored under key; ok is false for a
// document that is none.
func decodeBeat(key string, doc []byte) (Beat, bool) {
	var s storedBeat
	if json.Unmarshal(doc, &s) != nil {
		return Beat{}, false
	}
	if s.ID == "" && s.Region != "" {
		s.ID = cmp.Or(s.Replica, key)
	}
	return s.Beat, s.ID != ""
}

// view is a reader's last listing of one kind's heartbeats.
type view struct {
	opts *Options // its owner's
	log  *slog.Logger

	mu     sync.Mutex
	beats  []Beat
	listed time.Time
	known  bool // a listing succeeded
}

// refresh lists the kind unless it was listed within the interval,
// deleting the heartbeats past Forget; it reports whether it listed. A
// failed listing keeps the last one. The caller holds mu.
func (v *view) refresh(ctx context.Context, now time.Time) bool {
	if v.known && now.Sub(v.listed) < v.opts.Interval {
		return false
	}
	docs, err := v.opts.Store.ListObjects(ctx, v.opts.Kind)
	if err != nil {
		v.log.Debug("heartbeats not listed; the last view stands", "err", err)
		return false
	}
	v.listed, v.known, v.beats = now, true, v.beats[:0]
	for key, doc := range docs {
		b, ok := decodeBeat(key, doc)
		if !ok {
			continue
		}
		if now.Sub(b.LastSeen) > v.opts.Forget {
			_ = v.opts.Store.DeleteObject(ctx, v.opts.Kind, key)
			continue
		}
		v.beats = append(v.beats, b)
	}
	return true
}

// Membership writes this replica's heartbeat and reads the live members.
type Membership struct {
	opts Options
	clk  clock.Clock
	log  *slog.Logger
	view view
}

// New returns a Membership.
func New(opts Options) (*Membership, error) {
	if opts.Store == nil || opts.Kind == "" || opts.ID == "" {
		return nil, errors.New("membership: Options.Store, Kind and ID are required")
	}
	opts.defaults()
	log := opts.Logger.With("component", "membership", "kind", opts.Kind)
	if opts.Region != "" {
		log = log.With("region", opts.Region)
	}
	m := &Membership{opts: opts, clk: opts.Clock, log: log}
	m.view = view{opts: &m.opts, log: log}
	return m, nil
}

// ID is this replica's identity.
func (m *Membership) ID() string { return m.opts.ID }

// TTL is how long a silent member still counts as live.
func (m *Membership) TTL() time.Duration { return m.opts.TTL }

func (m *Membership) key() string { return Beat{ID: m.opts.ID, Region: m.opts.Region}.Key() }

// Beat writes this replica's heartbeat once.
func (m *Membership) Beat(ctx context.Context) error {
	doc, err := json.Marshal(Beat{ID: m.opts.ID, Region: m.opts.Region, LastSeen: m.clk.Now().UTC()})
	if err != nil {
		return err
	}
	if err := m.opts.Store.PutObject(ctx, m.opts.Kind, m.key(), doc); err != nil {
		return fmt.Errorf("membership: heartbeat %s/%s: %w", m.opts.Kind, m.key(), err)
	}
	return nil
}

// Leave deletes this replica's heartbeat, so readers stop counting it at
// their next listing.
func (m *Membership) Leave(ctx context.Context) error {
	if err := m.opts.Store.DeleteObject(ctx, m.opts.Kind, m.key()); err != nil {
		return fmt.Errorf("membership: leave %s/%s: %w", m.opts.Kind, m.key(), err)
	}
	return nil
}

// Run beats every Interval until ctx is done, then leaves (unless
// KeepOnStop). A failed write is retried at the next beat: a store outage
// makes this replica look dead only after the TTL, and then every replica
// alike.
func (m *Membership) Run(ctx context.Context) error {
	t := time.NewTicker(m.opts.Interval)
	defer t.Stop()
	for {
		if err := m.Beat(ctx); err != nil && ctx.Err() == nil {
			m.log.Debug("heartbeat not written; retried at the next beat", "err", err)
		}
		select {
		case <-ctx.Done():
			if m.opts.KeepOnStop {
				return nil
			}
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
	m.view.mu.Lock()
	defer m.view.mu.Unlock()
	now := m.clk.Now()
	m.view.refresh(ctx, now)
	if !m.view.known {
		return nil, false
	}
	return LiveAt(m.view.beats, now, m.opts.TTL), true
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
