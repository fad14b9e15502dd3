package main

import (
	"math/rand/v2"
	"sort"
	"time"
)

// Mode is what a fake MCP endpoint does with a request.
type Mode string

// An endpoint is up (ok) or in one of the outage kinds.
const (
	ModeOK      Mode = "ok"
	ModeHTTP503 Mode = "http503" // every request answered 503
	ModeHang    Mode = "hang"    // requests accepted, never answered while the outage lasts
	ModeHTML    Mode = "html"    // 200 text/html: a proxy's maintenance page
)

// OutageKinds are the planned outage kinds, in the order they rotate.
var OutageKinds = []Mode{ModeHTTP503, ModeHang, ModeHTML}

// Outage is one planned outage of one endpoint: its mode is Kind from Start
// until End.
type Outage struct {
	Endpoint int // index into the endpoint fleet
	Seq      int // 0-based outage number of this endpoint
	Kind     Mode
	Start    time.Time
	End      time.Time
}

// Plan is the whole run's schedule of outages.
type Plan struct {
	Start    time.Time // first instant of the plan: every endpoint is up
	End      time.Time // the last endpoint's last up phase ends
	Up       time.Duration
	Outages  []Outage // sorted by Start
	ByTarget [][]int  // per endpoint, indexes into Outages in time order
}

// planOptions size a Plan.
type planOptions struct {
	Endpoints int
	Outages   int           // per endpoint
	Warmup    time.Duration // up phase before anything fails
	Outage    time.Duration // how long each outage lasts
	Up        time.Duration // up phase after each outage: long enough to resolve
}

// makePlan lays out o.Outages outages per endpoint from start: after the
// warm-up and a random per-endpoint offset (below one up phase, so endpoints
// do not all fail on the same tick), outage and up phases alternate. Kinds
// rotate per endpoint and outage, so every kind is planned about equally
// often and each endpoint sees every kind once it has three outages.
func makePlan(o planOptions, start time.Time, rng *rand.Rand) Plan {
	p := Plan{Start: start, End: start, Up: o.Up, ByTarget: make([][]int, o.Endpoints)}
	for e := range o.Endpoints {
		var offset time.Duration
		if o.Up > 0 {
			offset = time.Duration(rng.Int64N(int64(o.Up)))
		}
		t := start.Add(o.Warmup + offset)
		for seq := range o.Outages {
			out := Outage{Endpoint: e, Seq: seq, Kind: OutageKinds[(e+seq)%len(OutageKinds)], Start: t, End: t.Add(o.Outage)}
			p.Outages = append(p.Outages, out)
			t = out.End.Add(o.Up)
		}
		if t.After(p.End) {
			p.End = t
		}
	}
	sort.SliceStable(p.Outages, func(i, j int) bool { return p.Outages[i].Start.Before(p.Outages[j].Start) })
	for i, out := range p.Outages {
		p.ByTarget[out.Endpoint] = append(p.ByTarget[out.Endpoint], i)
	}
	return p
}

// transition is one planned mode change.
type transition struct {
	At       time.Time
	Endpoint int
	Outage   int // index into Plan.Outages
	Mode     Mode
}

// transitions lists every mode change of p in time order.
func (p Plan) transitions() []transition {
	var ts []transition
	for i, o := range p.Outages {
		ts = append(ts, transition{At: o.Start, Endpoint: o.Endpoint, Outage: i, Mode: o.Kind},
			transition{At: o.End, Endpoint: o.Endpoint, Outage: i, Mode: ModeOK})
	}
	sort.SliceStable(ts, func(i, j int) bool { return ts[i].At.Before(ts[j].At) })
	return ts
}

// phaseAt names what endpoint e was planned to be doing over [from, to):
// an outage kind when the span lies inside one outage, "up" when it
// touches none and starts after the plan began, "warmup" before, and "edge"
// when it straddles an outage boundary.
func (p Plan) phaseAt(e int, from, to time.Time) string {
	if from.Before(p.Start) {
		return "warmup"
	}
	for _, i := range p.ByTarget[e] {
		o := p.Outages[i]
		if !from.Before(o.Start) && !to.After(o.End) {
			return string(o.Kind)
		}
		if from.Before(o.End) && to.After(o.Start) {
			return "edge"
		}
	}
	return "up"
}
