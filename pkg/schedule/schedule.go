// Package schedule owns the meaning of an endpoint's schedule string: how it
// parses (ParseSchedule) and which instants are its slots (Slots). It is a
// leaf: it imports nothing of the pipeline, so the scheduler that emits
// slots, the aggregator that tells a silent window from an unscheduled one,
// the prober that skips superseded slots, the API that checks a timeout
// against the interval and recurring maintenance windows all share one rule
// without pulling each other in.
package schedule

import (
	"errors"
	"fmt"
	"hash/fnv"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// ErrInvalidSchedule reports a schedule string that cannot be parsed or never
// fires. The API returns it as a 400 on the `schedule` field.
var ErrInvalidSchedule = errors.New("invalid schedule")

// parser accepts the standard 5-field cron syntax (minute hour dom month dow)
// and the descriptors (@hourly, @daily, @every 30s, ...). Seconds are not a
// field: sub-minute cadence is spelled @every.
var parser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// MinInterval is the shortest @every interval accepted. robfig rounds smaller
// delays up to one second silently; refusing them makes the surprise an error.
const MinInterval = time.Second

// ParseSchedule parses a per-endpoint schedule: a 5-field cron expression or a
// descriptor such as "@every 30s". Cron expressions are evaluated in UTC
// unless prefixed with CRON_TZ=<zone>, so every replica computes the same
// slots whatever its host time zone. A schedule that never fires (30 February)
// is refused.
func ParseSchedule(s string) (cron.Schedule, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, fmt.Errorf("%w: empty; use a 5-field cron expression or e.g. \"@every 30s\"", ErrInvalidSchedule)
	}
	orig := s
	body, prefix := s, "CRON_TZ=UTC"
	if strings.HasPrefix(s, "TZ=") || strings.HasPrefix(s, "CRON_TZ=") {
		// robfig slices up to the first space and panics without one.
		i := strings.Index(s, " ")
		if i < 0 {
			return nil, fmt.Errorf("%w: %q: time zone prefix without a schedule", ErrInvalidSchedule, s)
		}
		prefix, body = s[:i], strings.TrimSpace(s[i:])
		// robfig loads the zone with time.LoadLocation, where "Local" is
		// the host's own zone: two replicas in different zones would
		// compute different slots. Only named zones mean one instant
		// everywhere.
		if zone := prefix[strings.Index(prefix, "=")+1:]; strings.EqualFold(zone, "Local") {
			return nil, fmt.Errorf("%w: %q: the Local time zone is the host's and differs between replicas; name a zone such as CRON_TZ=Europe/Berlin, or omit the prefix for UTC", ErrInvalidSchedule, orig)
		}
	}
	if strings.HasPrefix(body, "@every") {
		if err := checkEvery(body); err != nil {
			return nil, err
		}
	}
	s = prefix + " " + body
	sched, err := parser.Parse(s)
	if err != nil {
		return nil, fmt.Errorf("%w: %q: %v", ErrInvalidSchedule, orig, err)
	}
	// A spec that matches no date (e.g. "0 0 30 2 *") makes Next return the
	// zero time: the endpoint would silently never be probed.
	if sched.Next(time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)).IsZero() {
		return nil, fmt.Errorf("%w: %q never fires", ErrInvalidSchedule, orig)
	}
	return sched, nil
}

func checkEvery(s string) error {
	d, err := time.ParseDuration(strings.TrimSpace(strings.TrimPrefix(s, "@every")))
	if err != nil {
		return fmt.Errorf("%w: %q: %v", ErrInvalidSchedule, s, err)
	}
	if d < MinInterval {
		return fmt.Errorf("%w: %q: interval must be at least %s", ErrInvalidSchedule, s, MinInterval)
	}
	return nil
}

// timing computes an endpoint's slots. Cron expressions use robfig's Next.
// "@every D" is not robfig's "D after whatever time it is now": that would
// give two replicas, or one scheduler before and after a restart, different
// slots, and content-based dedup on the commands queue only collapses
// identical bodies. Instead each endpoint fires at a fixed offset inside every
// D-long period counted from the Unix epoch; the offset is a hash of the
// endpoint ID, so endpoints sharing an interval spread over it instead of
// firing together.
type timing struct {
	sched  cron.Schedule
	period int64 // seconds; > 0 for @every
	offset int64 // seconds, in [0, period)
}

func newTiming(id string, sched cron.Schedule) timing {
	t := timing{sched: sched}
	if cd, ok := sched.(cron.ConstantDelaySchedule); ok {
		t.period = int64(cd.Delay / time.Second)
		if t.period < 1 {
			t.period = 1
		}
		h := fnv.New64a()
		h.Write([]byte(id))
		t.offset = int64(h.Sum64() % uint64(t.period))
	}
	return t
}

// next returns the first slot strictly after t, in UTC whole seconds.
func (tm timing) next(t time.Time) time.Time {
	if tm.period == 0 {
		return tm.sched.Next(t).UTC()
	}
	ts := t.Unix()
	k := floorDiv(ts-tm.offset, tm.period) + 1
	return time.Unix(k*tm.period+tm.offset, 0).UTC()
}

// Slots is one endpoint's slot placement, exactly the one the scheduler
// emits commands on (it builds its own through New), so a consumer that asks
// "was this endpoint due in [from, to)?" (the aggregator, to tell a silent
// window from an unscheduled one) can never disagree with it. The zero Slots
// has no slots.
type Slots struct{ tm timing }

// New parses the schedule spec of endpoint endpointID (the ID places an
// "@every" schedule's offset) and returns its slot placement. Whether a
// paused endpoint is due is the caller's question. The error wraps
// ErrInvalidSchedule.
func New(endpointID, spec string) (Slots, error) {
	sched, err := ParseSchedule(spec)
	if err != nil {
		return Slots{}, fmt.Errorf("schedule endpoint %s: %w", endpointID, err)
	}
	return Slots{newTiming(endpointID, sched)}, nil
}

// Next returns the first slot strictly after t (UTC, whole seconds), or
// the zero time when the schedule never fires again.
func (s Slots) Next(t time.Time) time.Time {
	if s.tm.sched == nil {
		return time.Time{}
	}
	return s.tm.next(t)
}

// In counts the slots in [from, to). These are the nominal slots: a
// scheduler that falls behind emits only the latest missed one (see the
// package doc), and one that is not running emits none. For "@every" it is
// O(1); for cron it walks the slots, O(count).
func (s Slots) In(from, to time.Time) int {
	if s.tm.sched == nil || !from.Before(to) {
		return 0
	}
	if p := s.tm.period; p != 0 {
		// Slots are whole seconds k*p+offset: slot >= from ⇔ slot >=
		// ceil(from), slot < to ⇔ slot < ceil(to).
		a, b := ceilUnix(from), ceilUnix(to)
		if b <= a {
			return 0
		}
		return int(floorDiv(b-1-s.tm.offset, p) - floorDiv(a-1-s.tm.offset, p))
	}
	n := 0
	// next is strictly after its argument at second granularity, so the
	// first slot >= from is next(from-1ns).
	for t := s.tm.next(from.Add(-time.Nanosecond)); !t.IsZero() && t.Before(to); t = s.tm.next(t) {
		n++
	}
	return n
}

// gapHorizon bounds the walk that finds a cron schedule's shortest gap.
const gapHorizon = 1000

// ShortestInterval returns the shortest time between two consecutive slots:
// the period of "@every D"; for cron, the smallest gap among the next 1,000
// slots after from (a schedule that fires at 09:00 and 09:01 daily has a
// one-minute interval). A probe must finish within it, or the next slot's
// command queues behind it. Zero when the schedule fires at most once.
func (s Slots) ShortestInterval(from time.Time) time.Duration {
	if s.tm.sched == nil {
		return 0
	}
	if p := s.tm.period; p != 0 {
		return time.Duration(p) * time.Second
	}
	var shortest time.Duration
	prev := s.tm.next(from)
	for range gapHorizon {
		if prev.IsZero() {
			break
		}
		n := s.tm.next(prev)
		if n.IsZero() {
			break
		}
		if g := n.Sub(prev); shortest == 0 || g < shortest {
			shortest = g
		}
		prev = n
	}
	return shortest
}

func ceilUnix(t time.Time) int64 {
	u := t.Unix()
	if t.Nanosecond() > 0 {
		u++
	}
	return u
}

// maxCatchUpSteps bounds the walk to the latest missed cron slot.
const maxCatchUpSteps = 4096

// LatestDue returns the latest slot ≤ now, given that due ≤ now is a slot:
// the one slot a scheduler that fell behind emits instead of the backlog.
func (s Slots) LatestDue(due, now time.Time) time.Time { return s.tm.latestDue(due, now) }

func (tm timing) latestDue(due, now time.Time) time.Time {
	if tm.period != 0 {
		return tm.next(now).Add(-time.Duration(tm.period) * time.Second)
	}
	for range maxCatchUpSteps {
		n := tm.sched.Next(due)
		if n.IsZero() || n.After(now) {
			break
		}
		due = n
	}
	return due.UTC()
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}
