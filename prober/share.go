package prober

import (
	"log/slog"
	"sync"
	"time"

	"github.com/mcpmon/mcpmon/pkg/clock"
)

// One tenant's probes must not hold every probe slot while another
// tenant's commands wait behind them. Probe slots (--probe-concurrency)
// are shared by every tenant, and a command holds its slot for as long as
// its target takes to answer: a tenant with hundreds of endpoints whose
// targets hang (a hostile one, or one whose servers all broke) held all
// of them for their whole timeout, the commands queue filled with its
// fresh commands, and another tenant's command, queued behind them,
// waited past its next slot and was skipped as superseded: that tenant's
// endpoints went unprobed, their windows no_data.
//
// So when the slots are contended, a tenant may hold at most ShareOf of
// them: its further commands are skipped at once (SkipTenantShare), which
// drains its backlog from the queue and leaves the other slots to the
// other tenants. Contended means both of:
//   - the command came late: received ContendedAfter or more after its
//     slot (a command is published at its slot, and an idle prober
//     receives it within milliseconds);
//   - another tenant had a command here within shareMemory: a
//     single-tenant deployment is never limited.
//
// The skipped slots of the tenant over its share are no_data windows:
// what the deployment lacks is probe slots, and they go to the tenant
// that did not take them all.

// ShareOf is the most probe slots one tenant may hold while they are
// contended: three quarters of them, at least one.
func ShareOf(slots int) int { return max(1, slots*3/4) }

// ContendedAfter is how late a command must be received for its slots
// to count as contended.
const ContendedAfter = 2 * time.Second

// shareMemory is how long a tenant counts as another tenant after its
// last command: long enough to span a rarely probed tenant's schedule.
const shareMemory = time.Hour

// SkipTenantShare: the command came while probe slots were contended and
// its tenant already held its share of them (ShareOf).
const SkipTenantShare = "tenant_share"

// OverShare is the decision: whether a command of a tenant that holds
// held slots of slots, received late after its slot, with others other
// tenants seen recently, is skipped.
func OverShare(held, slots int, late time.Duration, others int) bool {
	return others > 0 && late >= ContendedAfter && held >= ShareOf(slots)
}

// tenantShare counts each tenant's probes in flight and when each tenant
// last had a command, for OverShare.
type tenantShare struct {
	slots  int
	clk    clock.Clock
	log    *slog.Logger
	warned clock.Every

	mu       sync.Mutex
	inFlight map[string]int
	seen     map[string]time.Time
}

func newTenantShare(slots int, clk clock.Clock, log *slog.Logger) *tenantShare {
	return &tenantShare{slots: slots, clk: clk, log: log, warned: clock.Every{Interval: time.Minute},
		inFlight: map[string]int{}, seen: map[string]time.Time{}}
}

// acquire takes a slot for tenant's command of slot, or reports that the
// tenant is over its share; release gives the slot back.
func (t *tenantShare) acquire(tenant string, slot time.Time) (release func(), ok bool) {
	if t == nil || t.slots <= 1 {
		return func() {}, true
	}
	now := t.clk.Now()
	t.mu.Lock()
	t.seen[tenant] = now
	others := 0
	for other, at := range t.seen {
		switch {
		case now.Sub(at) > shareMemory:
			delete(t.seen, other)
		case other != tenant:
			others++
		}
	}
	held := t.inFlight[tenant]
	if OverShare(held, t.slots, now.Sub(slot), others) {
		t.mu.Unlock()
		if t.warned.Due(now) {
			t.log.Warn("probe slots are contended: a tenant holds its share of them, so its further probes are skipped while other tenants' wait; raise --probe-concurrency or run more prober replicas",
				"tenant", tenant, "held", held, "slots", t.slots, "late", now.Sub(slot).Round(time.Millisecond))
		}
		return nil, false
	}
	t.inFlight[tenant] = held + 1
	t.mu.Unlock()
	return func() {
		t.mu.Lock()
		defer t.mu.Unlock()
		if t.inFlight[tenant]--; t.inFlight[tenant] <= 0 {
			delete(t.inFlight, tenant)
		}
	}, true
}
