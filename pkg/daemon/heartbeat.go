package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/mcpmon/mcpmon/aggregator"
	"github.com/mcpmon/mcpmon/pkg/clock"
	"github.com/mcpmon/mcpmon/pkg/config"
	"github.com/mcpmon/mcpmon/pkg/membership"
	"github.com/mcpmon/mcpmon/pkg/store"
)

// Prober heartbeats: the optional, learned half of the region set. The
// configured set (--regions) says which queues exist and which regions an
// endpoint is due in; heartbeats only narrow "due" to the regions with a
// live prober, so a region whose whole prober fleet is gone drops out of a
// window's quorum instead of holding every endpoint at regional (with
// three regions and two of them dead, no outage could ever be global).
// A region that is live but silent for one endpoint stays due: that is
// exactly the no_data case.
//
// Each prober writes {region, replica, lastSeen} to the store's objects
// (kind HeartbeatKind, id region|replica) every heartbeatInterval; the
// aggregator reads them at most once per interval. A region is live at t
// when one of its heartbeats is at most heartbeatTTL older than t.

// HeartbeatKind is the store object kind of prober heartbeats.
const HeartbeatKind = "prober-heartbeat"

const (
	heartbeatInterval = 10 * time.Second
	// heartbeatTTL: three missed beats before a region is given up.
	heartbeatTTL = 3 * heartbeatInterval
	// heartbeatForget: a replica's beat older than this is deleted by a
	// reader (replica IDs change with every restart).
	heartbeatForget = 24 * time.Hour
)

type heartbeat struct {
	Region   string    `json:"region"`
	Replica  string    `json:"replica"`
	LastSeen time.Time `json:"lastSeen"`
}

// liveRegions is the pure rule: the regions with a heartbeat at most ttl
// older than t (or newer), sorted.
func liveRegions(beats []heartbeat, t time.Time, ttl time.Duration) []string {
	var out []string
	for _, b := range beats {
		if !b.LastSeen.Before(t.Add(-ttl)) && !slices.Contains(out, b.Region) {
			out = append(out, b.Region)
		}
	}
	slices.Sort(out)
	return out
}

// beat writes this prober's heartbeat every heartbeatInterval until ctx is
// done. A failed write is retried at the next beat: a store outage makes
// the region look dead only after the TTL, and then every region alike.
func (d *Daemon) beat(ctx context.Context, regions []string) error {
	t := time.NewTicker(heartbeatInterval)
	defer t.Stop()
	for {
		for _, r := range regions {
			doc, _ := json.Marshal(heartbeat{Region: r, Replica: d.opts.ReplicaID, LastSeen: d.clk.Now().UTC()})
			if err := d.st.PutObject(ctx, HeartbeatKind, r+"|"+d.opts.ReplicaID, doc); err != nil && ctx.Err() == nil {
				d.log.Debug("prober heartbeat not written; retried at the next beat", "region", r, "err", err)
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// heartbeats reads the live regions for the aggregator
// (aggregator.LiveRegions), listing the store at most once per
// heartbeatInterval.
type heartbeats struct {
	st  store.Objects
	clk clock.Clock
	m   *aggregator.RegionMetrics

	mu     sync.Mutex
	beats  []heartbeat
	listed time.Time
	known  bool
}

var _ aggregator.LiveRegions = (*heartbeats)(nil)

// LiveAt reports the regions live at t; ok is false when no heartbeat was
// ever listed (probers of a release without heartbeats, or the store
// failing before the first listing), and the configured set is used.
func (h *heartbeats) LiveAt(ctx context.Context, t time.Time) ([]string, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	now := h.clk.Now()
	if now.Sub(h.listed) >= heartbeatInterval {
		if docs, err := h.st.ListObjects(ctx, HeartbeatKind); err == nil {
			h.listed, h.beats = now, h.beats[:0]
			for id, doc := range docs {
				var b heartbeat
				if json.Unmarshal(doc, &b) != nil {
					continue
				}
				if now.Sub(b.LastSeen) > heartbeatForget {
					_ = h.st.DeleteObject(ctx, HeartbeatKind, id)
					continue
				}
				h.beats = append(h.beats, b)
			}
			h.known = len(h.beats) > 0
			h.m.SetLive(liveRegions(h.beats, now, heartbeatTTL))
		}
	}
	if !h.known {
		return nil, false
	}
	return liveRegions(h.beats, t, heartbeatTTL), true
}

// liveRegions is the aggregator's heartbeat reader, or nil without a
// region set (nothing to narrow).
func (d *Daemon) liveRegions(m *aggregator.RegionMetrics) aggregator.LiveRegions {
	if len(d.opts.Regions) == 0 {
		return nil
	}
	return &heartbeats{st: d.st, clk: d.clk, m: m}
}

// AggregatorHeartbeatKind is the store object kind of aggregator replicas'
// membership heartbeats (pkg/membership), by which they split the windows
// they decide (aggregator owner.go).
const AggregatorHeartbeatKind = "aggregator-heartbeat"

// aggregatorMembership is this aggregator replica's membership, or nil with
// the embedded store: only one process can open it, so there is one
// aggregator and nothing to split (it decides every window, as it always
// did). The heartbeat interval follows the window — a sixth of it, between
// 1s and 10s — so a killed replica's endpoints wait about half a window
// (TTL = 3 intervals) before the survivors own them, not half a minute of
// 2-second windows.
func (d *Daemon) aggregatorMembership() (*membership.Membership, error) {
	if d.opts.Store == config.StoreEmbedded {
		return nil, nil
	}
	window := d.opts.Window
	if window <= 0 {
		window = aggregator.DefaultWindow
	}
	return membership.New(membership.Options{
		Store:    d.st,
		Kind:     AggregatorHeartbeatKind,
		ID:       d.aggregatorReplicaID(),
		Interval: min(max(window/6, time.Second), membership.DefaultInterval),
		Clock:    d.clk,
		Logger:   d.log,
	})
}

// aggregatorReplicaID is this aggregator's member ID: --replica-id (host-pid
// by default), or, for options built without config.Parse (tests, the load
// harness's daemons in one process), host-pid plus a random suffix, so two
// aggregators of one process are two members. Two replicas given the same
// ID own the same share: duplicate decisions, never a window without one.
func (d *Daemon) aggregatorReplicaID() string {
	if d.opts.ReplicaID != "" {
		return d.opts.ReplicaID
	}
	if d.aggID == "" {
		host, _ := os.Hostname()
		d.aggID = fmt.Sprintf("%s-%d-%08x", host, os.Getpid(), rand.Uint32())
	}
	return d.aggID
}
