package main

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"time"
)

// verdictRow is one decided endpoint-window as GET /v1/endpoints/{id}/verdicts
// shows it.
type verdictRow struct {
	Window time.Time `json:"window"`
	State  string    `json:"state"`
	Class  string    `json:"class"`
}

// outcome is what became of one planned outage.
type outcome struct {
	Outage
	FirstBad time.Time // first request the target got in outage mode (zero: none came)
	Open     *delivery
	Resolve  *delivery
}

// Delay is first failing probe → delivered open alert.
func (o outcome) Delay() (time.Duration, bool) {
	if o.Open == nil {
		return 0, false
	}
	from := o.FirstBad
	if from.IsZero() {
		from = o.Start
	}
	return o.Open.At.Sub(from), true
}

// finding is one alert that should not have been sent.
type finding struct {
	D      delivery
	Reason string
}

// duplicate is an alert (one Idempotency-Key) accepted more than once.
type duplicate struct {
	Key   string
	Times []time.Time
}

// report is the checker's verdict over a run.
type report struct {
	Outcomes     []outcome
	LostOpen     []int       // indexes into Outcomes: no open alert
	LostResolve  []int       // opened, but no resolve alert
	Duplicates   []duplicate // not explained by a kill: a failure
	InWindow     []duplicate // inside the documented claim → send → mark window (splitByMarkWindow)
	Spurious     []finding
	Accepted     int
	Failed       int // deliveries answered 500
	Delays       []time.Duration
	UnknownAlert int // accepted alerts for endpoints the harness did not register
}

// Failed reports whether any outage was lost or paged other than once.
func (r report) failed() bool {
	return len(r.LostOpen) > 0 || len(r.LostResolve) > 0 || len(r.Duplicates) > 0 || len(r.Spurious) > 0
}

// markWindow bounds how far from a sink's acceptance a SIGKILL of the
// process that sent the alert can fall and still explain a repeat of it: the
// documented claim → send → mark window (docs/design/architecture.md, "Exactly
// which window can still duplicate") is one store round-trip after the
// acceptance, tens of milliseconds for the embedded store under load; a kill
// just before the acceptance (the request already on the wire) looks the
// same. A second is far wider than either and far narrower than a kill
// interval, so a repeat with no kill near its first acceptance still fails.
const markWindow = time.Second

// splitByMarkWindow separates the duplicates a SIGKILL of a sending process
// explains — every repeat follows a kill of its own that fell within window
// of the acceptance before it — from the rest, which are failures. Alerts go out
// with the same Idempotency-Key each time, so a receiver can drop the repeat.
func splitByMarkWindow(dups []duplicate, senderKills []time.Time, window time.Duration) (unexplained, inWindow []duplicate) {
	for _, d := range dups {
		used := map[int]bool{} // one kill explains one repeat of an alert
		explained := func(prev, next time.Time) bool {
			for i, k := range senderKills {
				if gap := k.Sub(prev); !used[i] && gap >= -window && gap <= window && !k.After(next) {
					used[i] = true
					return true
				}
			}
			return false
		}
		ok := true
		for i := 1; i < len(d.Times) && ok; i++ {
			ok = explained(d.Times[i-1], d.Times[i])
		}
		if ok {
			inWindow = append(inWindow, d)
		} else {
			unexplained = append(unexplained, d)
		}
	}
	return unexplained, inWindow
}

// check matches delivered alerts to planned outages. Only accepted (2xx)
// deliveries count: one answered 500 was not delivered and must be retried.
//
//   - An open alert belongs to the outage of its endpoint that began at or
//     before it and ended no more than bound before it. Each outage must get
//     exactly one; a second incident opened inside one outage, or an open
//     matching no outage, is spurious.
//   - A resolve belongs to the outage its incident's open was matched to or,
//     when that open never came, to the latest earlier outage of the
//     endpoint still without one. It must come after the outage ended: one
//     before is spurious (the incident flapped), and so is a second one.
//   - The same Idempotency-Key accepted twice is a duplicate page; the
//     caller sets apart those a kill explains (splitByMarkWindow).
//
// endpointIDs maps the API's endpoint IDs to target indexes; firstBad holds
// each outage's first failing probe time, indexed like plan.Outages.
func check(plan Plan, firstBad []time.Time, endpointIDs map[string]int, deliveries []delivery, bound time.Duration) report {
	r := report{Outcomes: make([]outcome, len(plan.Outages))}
	for i, o := range plan.Outages {
		r.Outcomes[i] = outcome{Outage: o}
		if i < len(firstBad) {
			r.Outcomes[i].FirstBad = firstBad[i]
		}
	}
	seen := map[string]int{} // key → index into dups or -1 for first
	var alerts []delivery
	var dupIndex = map[string]int{}
	for _, d := range deliveries {
		if !d.accepted() {
			r.Failed++
			continue
		}
		r.Accepted++
		if _, ok := seen[d.Key]; ok {
			i, ok := dupIndex[d.Key]
			if !ok {
				i = len(r.Duplicates)
				dupIndex[d.Key] = i
				r.Duplicates = append(r.Duplicates, duplicate{Key: d.Key, Times: []time.Time{alerts[seen[d.Key]].At}})
			}
			r.Duplicates[i].Times = append(r.Duplicates[i].Times, d.At)
			continue
		}
		seen[d.Key] = len(alerts)
		alerts = append(alerts, d)
	}
	sort.SliceStable(alerts, func(i, j int) bool { return alerts[i].At.Before(alerts[j].At) })

	byIncident := map[string]int{} // incident ID → outcome index
	for _, a := range alerts {
		if a.Kind != "open" {
			continue
		}
		e, ok := endpointIDs[a.EndpointID]
		if !ok {
			r.UnknownAlert++
			r.Spurious = append(r.Spurious, finding{a, "alert for an endpoint the harness did not register"})
			continue
		}
		match := -1
		for _, i := range plan.ByTarget[e] {
			o := plan.Outages[i]
			if !a.At.Before(o.Start) && !a.At.After(o.End.Add(bound)) {
				match = i // the latest outage that fits
			}
		}
		switch {
		case match < 0:
			r.Spurious = append(r.Spurious, finding{a, "open alert outside every planned outage (+ bound)"})
		case r.Outcomes[match].Open != nil:
			r.Spurious = append(r.Spurious, finding{a, fmt.Sprintf("second incident opened for outage #%d (first: %s)", plan.Outages[match].Seq, r.Outcomes[match].Open.IncidentID)})
			// Its resolve may still be the outage's all-clear (the first
			// incident having resolved too early, which is reported on its own).
			byIncident[a.IncidentID] = match
		default:
			a := a
			r.Outcomes[match].Open = &a
			byIncident[a.IncidentID] = match
		}
	}
	for _, a := range alerts {
		switch a.Kind {
		case "open":
			continue
		case "resolve":
		default:
			r.Spurious = append(r.Spurious, finding{a, "unexpected alert kind " + a.Kind})
			continue
		}
		e, ok := endpointIDs[a.EndpointID]
		if !ok {
			r.UnknownAlert++
			r.Spurious = append(r.Spurious, finding{a, "alert for an endpoint the harness did not register"})
			continue
		}
		match, ok := byIncident[a.IncidentID]
		if !ok {
			match = -1
			for _, i := range plan.ByTarget[e] {
				o := plan.Outages[i]
				if !a.At.Before(o.End) && r.Outcomes[i].Resolve == nil && r.Outcomes[i].Open == nil {
					match = i
				}
			}
		}
		switch {
		case match < 0:
			r.Spurious = append(r.Spurious, finding{a, "resolve of an incident matching no planned outage"})
		case r.Outcomes[match].Resolve != nil:
			r.Spurious = append(r.Spurious, finding{a, fmt.Sprintf("second resolve for outage #%d", plan.Outages[match].Seq)})
		case a.At.Before(plan.Outages[match].End):
			r.Spurious = append(r.Spurious, finding{a, fmt.Sprintf("resolved while outage #%d was still on", plan.Outages[match].Seq)})
		default:
			a := a
			r.Outcomes[match].Resolve = &a
		}
	}
	for i, o := range r.Outcomes {
		if o.Open == nil {
			r.LostOpen = append(r.LostOpen, i)
		}
		if o.Open != nil && o.Resolve == nil {
			r.LostResolve = append(r.LostResolve, i)
		}
		if d, ok := o.Delay(); ok {
			r.Delays = append(r.Delays, d)
		}
	}
	sort.Slice(r.Delays, func(i, j int) bool { return r.Delays[i] < r.Delays[j] })
	return r
}

// percentile is the nearest-rank p-th percentile of sorted ds.
func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	i := int(math.Ceil(p/100*float64(len(ds)))) - 1
	i = max(0, min(i, len(ds)-1))
	return ds[i]
}

// windowStats counts decided windows by planned phase and verdict state.
type windowStats struct {
	ByPhase map[string]map[string]int // phase → state → count
	Total   int
	NoData  int
	Gaps    int // windows between an endpoint's first and last verdict with no verdict at all
}

// tallyVerdicts sorts every endpoint's verdicts into the plan's phases.
func tallyVerdicts(plan Plan, window time.Duration, verdicts [][]verdictRow) windowStats {
	s := windowStats{ByPhase: map[string]map[string]int{}}
	for e, vs := range verdicts {
		var first, last time.Time
		have := map[int64]bool{}
		for _, v := range vs {
			ph := plan.phaseAt(e, v.Window, v.Window.Add(window))
			if s.ByPhase[ph] == nil {
				s.ByPhase[ph] = map[string]int{}
			}
			s.ByPhase[ph][v.State]++
			s.Total++
			if v.State == "no_data" {
				s.NoData++
			}
			have[v.Window.UnixNano()] = true
			if first.IsZero() || v.Window.Before(first) {
				first = v.Window
			}
			if v.Window.After(last) {
				last = v.Window
			}
		}
		for w := first; !first.IsZero() && w.Before(last); w = w.Add(window) {
			if !have[w.UnixNano()] {
				s.Gaps++
			}
		}
	}
	return s
}

// diagnose says, from the endpoint's verdicts, where the alert for a lost or
// never-resolved outage went missing. vs are the endpoint's verdicts.
func diagnose(oc outcome, vs []verdictRow, window, up time.Duration) string {
	count := func(from, to time.Time) (m map[string]int, missing int) {
		m = map[string]int{}
		have := map[int64]bool{}
		for _, v := range vs {
			if !v.Window.Before(from.Truncate(window)) && v.Window.Before(to) {
				m[v.State]++
				have[v.Window.UnixNano()] = true
			}
		}
		for w := from.Truncate(window); w.Before(to); w = w.Add(window) {
			if !have[w.UnixNano()] {
				missing++
			}
		}
		return m, missing
	}
	if oc.Open == nil {
		m, missing := count(oc.Start, oc.End)
		switch {
		case oc.FirstBad.IsZero():
			return "no probe reached the endpoint during the outage: commands were not consumed (scheduler, commands queue or prober)"
		case oc.FirstBad.Sub(oc.Start) > 2*window:
			return fmt.Sprintf("probes stalled: the first one reached the endpoint %s into the outage, so its windows were judged %d no_data, %d down, %d up, %d never decided",
				oc.FirstBad.Sub(oc.Start).Round(100*time.Millisecond), m["no_data"], m["down"], m["up"], missing)
		case m["down"] >= 2:
			return fmt.Sprintf("%d windows judged down, yet no open alert delivered: lost between the verdicts queue and the sink", m["down"])
		case m["no_data"]+missing > m["down"]:
			return fmt.Sprintf("probes reached the endpoint, but its windows were judged %d no_data, %d down, %d up, %d never decided: results did not reach the aggregator before the window was decided",
				m["no_data"], m["down"], m["up"], missing)
		default:
			return fmt.Sprintf("windows judged %d down, %d no_data, %d up, %d never decided", m["down"], m["no_data"], m["up"], missing)
		}
	}
	m, missing := count(oc.End.Add(window), oc.End.Add(up))
	if m["up"] < 2 {
		return fmt.Sprintf("after the outage its windows were judged %d up, %d no_data, %d down, %d never decided: fewer than the 2 up windows a resolve needs",
			m["up"], m["no_data"], m["down"], missing)
	}
	return fmt.Sprintf("%d up windows after the outage, yet no resolve delivered: lost between the verdicts queue and the sink", m["up"])
}

// diagnosisKind is the short label of a diagnose() sentence, for counting.
func diagnosisKind(d string) string {
	switch {
	case strings.HasPrefix(d, "no probe"):
		return "no probe reached the endpoint"
	case strings.HasPrefix(d, "probes stalled"):
		return "probes stalled into the outage"
	case strings.Contains(d, "yet no open alert"), strings.Contains(d, "yet no resolve"):
		return "verdicts right, alert missing"
	case strings.HasPrefix(d, "probes reached"), strings.Contains(d, "fewer than the 2 up"):
		return "windows judged no_data / never decided"
	default:
		return "other"
	}
}
