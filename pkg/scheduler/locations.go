package scheduler

import (
	"cmp"
	"context"
	"slices"
	"sync"
	"time"

	"github.com/mcpmon/mcpmon/pkg/clock"
	"github.com/mcpmon/mcpmon/pkg/msg"
)

// Locations holds the probe commands of agent locations between the
// scheduler and the agents: Put by the scheduler, Take by the API's
// GET /v1/agent/commands for the location of the agent's key (Release if
// that poll is refused after all), Done by its POST /v1/agent/results once
// the result is published.
//
// It keeps one command per endpoint, the latest slot's: a newer slot
// replaces an older one never taken, since a probe of a passed moment is
// worth less than one of the current (the prober's Superseded rule). A
// command taken is leased; if its result has not arrived when the lease
// ends (the agent was killed mid-probe, its post was lost) it is handed
// out again, and the redelivered probe publishes under the same
// deduplication ID, so the results queue keeps one.
//
// It lives in the process of the scheduler that fills it. Every API
// replica schedules every endpoint (the commands queue deduplicates their
// copies on content), so every replica holds the same commands and an
// agent may poll any of them; a slot probed through two replicas is
// published twice under one deduplication ID and kept once.
type Locations struct {
	clk   clock.Clock
	lease time.Duration
	max   int

	mu   sync.Mutex
	bufs map[locationKey]*locationBuffer
}

// LocationOptions configure NewLocations; zero values take the defaults.
type LocationOptions struct {
	Clock clock.Clock
	// Lease is how long a taken command waits for its result before it is
	// handed out again (default DefaultLocationLease).
	Lease time.Duration
	// MaxPerLocation bounds the endpoints one location holds commands for
	// (default DefaultMaxPerLocation); commands of further endpoints are
	// dropped, so a location without an agent cannot grow without bound.
	MaxPerLocation int
}

// Defaults of LocationOptions.
const (
	DefaultLocationLease  = 20 * time.Second
	DefaultMaxPerLocation = 10000
)

type locationKey struct{ tenant, location string }

type locationBuffer struct {
	cmds map[string]*heldCommand // endpoint ID → its latest command
	// ready is closed when a command arrives, then replaced: a waiting
	// Take wakes without polling.
	ready chan struct{}
}

type heldCommand struct {
	cmd         msg.ProbeCommand
	leasedUntil time.Time // zero: not taken
}

// NewLocations returns an empty buffer.
func NewLocations(opts LocationOptions) *Locations {
	return &Locations{
		clk:   cmp.Or[clock.Clock](opts.Clock, clock.Real{}),
		lease: cmp.Or(max(opts.Lease, 0), DefaultLocationLease),
		max:   cmp.Or(max(opts.MaxPerLocation, 0), DefaultMaxPerLocation),
		bufs:  map[locationKey]*locationBuffer{},
	}
}

func (l *Locations) buffer(k locationKey) *locationBuffer {
	b := l.bufs[k]
	if b == nil {
		b = &locationBuffer{cmds: map[string]*heldCommand{}, ready: make(chan struct{})}
		l.bufs[k] = b
	}
	return b
}

// Put holds cmd for the tenant's location, replacing an older slot of the
// same endpoint.
func (l *Locations) Put(tenant, location string, cmd msg.ProbeCommand) {
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.buffer(locationKey{tenant, location})
	if h, ok := b.cmds[cmd.EndpointID]; ok {
		if !cmd.Slot.After(h.cmd.Slot) {
			return
		}
	} else if len(b.cmds) >= l.max {
		return
	}
	b.cmds[cmd.EndpointID] = &heldCommand{cmd: cmd}
	close(b.ready)
	b.ready = make(chan struct{})
}

// Take returns up to limit commands of the tenant's location that are not
// leased, oldest slot first, and leases them. With none it waits up to
// wait for one to arrive (or ctx to end) and returns what there is then,
// possibly nothing.
func (l *Locations) Take(ctx context.Context, tenant, location string, limit int, wait time.Duration) []msg.ProbeCommand {
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for {
		cmds, ready, next := l.take(locationKey{tenant, location}, max(limit, 1))
		if len(cmds) > 0 {
			return cmds
		}
		// A lease that ends while waiting makes its command available.
		leaseEnd := time.NewTimer(time.Hour)
		if !next.IsZero() {
			leaseEnd.Reset(max(next.Sub(l.clk.Now()), time.Millisecond))
		}
		select {
		case <-ctx.Done():
			leaseEnd.Stop()
			return nil
		case <-timer.C:
			leaseEnd.Stop()
			cmds, _, _ := l.take(locationKey{tenant, location}, max(limit, 1))
			return cmds
		case <-ready:
		case <-leaseEnd.C:
		}
		leaseEnd.Stop()
	}
}

// take leases the available commands; with none it returns the channel a
// Put closes and when the earliest lease ends (zero: none held).
func (l *Locations) take(k locationKey, limit int) ([]msg.ProbeCommand, <-chan struct{}, time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.buffer(k)
	now := l.clk.Now()
	var free []*heldCommand
	var next time.Time
	for _, h := range b.cmds {
		if h.leasedUntil.After(now) {
			if next.IsZero() || h.leasedUntil.Before(next) {
				next = h.leasedUntil
			}
			continue
		}
		free = append(free, h)
	}
	if len(free) == 0 {
		return nil, b.ready, next
	}
	slices.SortFunc(free, func(a, b *heldCommand) int {
		return cmp.Or(a.cmd.Slot.Compare(b.cmd.Slot), cmp.Compare(a.cmd.EndpointID, b.cmd.EndpointID))
	})
	free = free[:min(len(free), limit)]
	out := make([]msg.ProbeCommand, len(free))
	for i, h := range free {
		h.leasedUntil = now.Add(l.lease)
		out[i] = h.cmd
	}
	return out, nil, time.Time{}
}

// Release ends the leases of cmds, taken but not handed to an agent (its
// poll was refused after the take), so the location's next poll gets them
// at once rather than when the lease ends; a poll waiting now wakes. A
// command replaced by a newer slot since is left alone.
func (l *Locations) Release(tenant, location string, cmds []msg.ProbeCommand) {
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.bufs[locationKey{tenant, location}]
	if b == nil {
		return
	}
	freed := false
	for _, c := range cmds {
		if h, ok := b.cmds[c.EndpointID]; ok && h.cmd.Slot.Equal(c.Slot) && !h.leasedUntil.IsZero() {
			h.leasedUntil = time.Time{}
			freed = true
		}
	}
	if freed {
		close(b.ready)
		b.ready = make(chan struct{})
	}
}

// Done forgets the command of endpointID at slot (and any older one): its
// result is published.
func (l *Locations) Done(tenant, location, endpointID string, slot time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.bufs[locationKey{tenant, location}]
	if b == nil {
		return
	}
	if h, ok := b.cmds[endpointID]; ok && !h.cmd.Slot.After(slot) {
		delete(b.cmds, endpointID)
	}
}

// Len is the number of commands the tenant's location holds.
func (l *Locations) Len(tenant, location string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	if b := l.bufs[locationKey{tenant, location}]; b != nil {
		return len(b.cmds)
	}
	return 0
}
