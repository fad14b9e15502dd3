package daemon

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"sync"
	"time"

	"github.com/mcpmon/mcpmon/aggregator"
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
// Each prober is a pkg/membership member of its region (kind
// store.KindProberHeartbeat), beating every membership.DefaultInterval and keeping its
// heartbeat on a clean stop, so a region restarting its only prober stays
// live across the restart; the aggregator reads them with
// membership.Regions.

// beat runs one membership per region this process probes from until ctx
// is done.
func (d *Daemon) beat(ctx context.Context, regions []string) error {
	var members []*membership.Membership
	for _, r := range regions {
		m, err := membership.New(membership.Options{
			Store:      d.st,
			Kind:       store.KindProberHeartbeat,
			ID:         d.replicaID(),
			Region:     r,
			KeepOnStop: true,
			Clock:      d.clk,
			Logger:     d.log,
		})
		if err != nil {
			return err
		}
		members = append(members, m)
	}
	var wg sync.WaitGroup
	for _, m := range members {
		wg.Go(func() { _ = m.Run(ctx) }) // Run returns nil
	}
	wg.Wait()
	return nil
}

// liveRegions is the aggregator's heartbeat reader, or nil without a
// region set (nothing to narrow).
func (d *Daemon) liveRegions(m *aggregator.RegionMetrics) (aggregator.LiveRegions, error) {
	if len(d.opts.Regions) == 0 {
		return nil, nil
	}
	r, err := membership.NewRegions(membership.Options{Store: d.st, Kind: store.KindProberHeartbeat, Clock: d.clk, Logger: d.log}, m)
	if err != nil {
		return nil, err
	}
	return r, nil
}

var _ aggregator.LiveRegions = (*membership.Regions)(nil)

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
		Kind:     store.KindAggregatorHeartbeat,
		ID:       d.replicaID(),
		Interval: min(max(window/6, time.Second), membership.DefaultInterval),
		Clock:    d.clk,
		Logger:   d.log,
	})
}

// replicaID is this process's member ID: --replica-id (host-pid by
// default), or, for options built without config.Parse (tests, the load
// harness's daemons in one process), host-pid plus a random suffix, so two
// daemons of one process are two members. Two aggregators given the same
// ID own the same share: duplicate decisions, never a window without one.
func (d *Daemon) replicaID() string {
	if d.opts.ReplicaID != "" {
		return d.opts.ReplicaID
	}
	// Once: the aggregator and the prober heartbeat loop ask from
	// different goroutines.
	d.replica.once.Do(func() {
		host, _ := os.Hostname()
		d.replica.id = fmt.Sprintf("%s-%d-%08x", host, os.Getpid(), rand.Uint32())
	})
	return d.replica.id
}
