package alerter

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/msg"
)

// TestRegionalAndGlobalIncidents drives the pure transition through whole
// stories of verdict states, carrying the tracker and the stored incidents
// from one verdict to the next as apply does, and checks which incidents
// open and resolve at each step: "open:regional" is the regional incident
// opening, "open:global" the global one. Each incident opens once per
// story, so each alerts once.
func TestRegionalAndGlobalIncidents(t *testing.T) {
	const reg = msg.StateRegional
	tests := []struct {
		name     string
		states   []msg.State
		want     []string // events per step, "" for none, joined with "+"
		noRegion bool     // verdicts judged without a region set
	}{
		{"one region failing opens a regional incident, never a global one",
			[]msg.State{up, reg, reg, reg, up, up},
			[]string{"", "", "open:regional", "", "", "resolve:regional"}, false},
		{"a second region failing opens the global incident as well",
			[]msg.State{up, reg, reg, down, down, down, up, up},
			[]string{"", "", "open:regional", "", "open:global", "", "", "resolve:global+resolve:regional"}, false},
		{"a global outage from the start is global only",
			[]msg.State{up, down, down, reg, reg, reg, up, up},
			[]string{"", "", "open:global", "", "", "", "", "resolve:global"}, false},
		{"a lone regional window among ups opens nothing",
			[]msg.State{up, reg, up, up, reg, up},
			[]string{"", "", "", "", "", ""}, false},
		{"regional, up, regional is two of three: one incident, as for down",
			[]msg.State{reg, up, reg, up, up},
			[]string{"", "", "open:regional", "", "resolve:regional"}, false},
		{"no_data is not folded",
			[]msg.State{reg, msg.StateNoData, reg, msg.StateNoData, up, up},
			[]string{"", "", "open:regional", "", "", "resolve:regional"}, false},
		{"degraded keeps a regional incident open",
			[]msg.State{reg, reg, msg.StateDegraded, up, up},
			[]string{"", "open:regional", "", "", "resolve:regional"}, false},
		{"without a region set regional opens nothing, as before",
			[]msg.State{reg, reg, reg, down, down},
			[]string{"", "", "", "", "open:global"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := effectiveRules(model.Rules{}, nil)
			var tr model.Tracker
			stored := map[string]model.Incident{}
			opened := map[string]int{}
			for i, s := range tt.states {
				v := verdict("ep1", win(i), s)
				if s == reg || s == down {
					v.FailingRegions = []string{"eu"}
				}
				if !tt.noRegion {
					v.RegionStates = map[string]msg.State{"eu": s, "us": up, "ap": up}
				}
				in := transitionInput{Tracker: tr, Verdict: v, Rules: r, Now: win(i).Add(70 * time.Second)}
				if inc, ok := stored[tr.OpenIncidentID]; ok {
					in.Open = &inc
				}
				d, _ := decodeData[trackerData](tr.Data, "")
				if d.Regional != nil {
					if inc, ok := stored[d.Regional.OpenIncidentID]; ok {
						in.RegionalOpen = &inc
					}
				}
				out, err := transition(in)
				if err != nil {
					t.Fatal(err)
				}
				var events []string
				for _, inc := range out.Incidents {
					kind := "global"
					if inc.Kind == model.IncidentRegional {
						kind = "regional"
						if !strings.Contains(inc.ID, "-regional-") || model.IncidentSeverity(inc.Kind) != "warning" {
							t.Fatalf("regional incident %s, severity %s: want its own ID space and warning", inc.ID, model.IncidentSeverity(inc.Kind))
						}
						if !slices.Equal(inc.Regions, []string{"eu"}) {
							t.Fatalf("regional incident regions %v, want [eu]", inc.Regions)
						}
					}
					switch prev, ok := stored[inc.ID]; {
					case !ok:
						events = append(events, "open:"+kind)
						opened[inc.ID]++
					case prev.State != model.IncidentResolved && inc.State == model.IncidentResolved:
						events = append(events, "resolve:"+kind)
					}
					stored[inc.ID] = inc
				}
				if got := strings.Join(events, "+"); got != tt.want[i] {
					t.Fatalf("step %d (%s): events %q, want %q", i, s, got, tt.want[i])
				}
				if len(out.Owed) != len(events) {
					t.Fatalf("step %d: owed %v for events %v: one notification per event", i, out.Owed, events)
				}
				out.Tracker.Version++
				tr = out.Tracker
			}
			for id, n := range opened {
				if n != 1 {
					t.Errorf("incident %s opened %d times", id, n)
				}
			}
		})
	}
}

// A regional incident whose open was stored by a verdict whose tracker
// write was lost is pointed at again, not opened twice.
func TestRegionalIncidentAlreadyStoredIsNotOpenedAgain(t *testing.T) {
	r := effectiveRules(model.Rules{}, nil)
	tr := model.Tracker{EndpointID: "ep1", Version: 1, LastWindow: win(0)}
	setTrackerData(&tr, trackerData{Regional: &regionalTrack{Recent: []msg.State{msg.StateRegional}}})
	in := transitionInput{Tracker: tr, Verdict: verdict("ep1", win(1), msg.StateRegional), Rules: r, Now: win(2), RegionalAlreadyOpened: true}
	out, err := transition(in)
	if err != nil {
		t.Fatal(err)
	}
	d, _ := decodeData[trackerData](out.Tracker.Data, "")
	if len(out.Incidents) != 0 || len(out.Owed) != 0 || d.Regional == nil || d.Regional.OpenIncidentID != msg.RegionalIncidentID("ep1", win(1)) {
		t.Fatalf("incidents %v owed %v regional %+v: want the stored incident pointed at, nothing owed", out.Incidents, out.Owed, d.Regional)
	}
}

// criticalOnly is a sink routed to critical (global) incidents only, as a
// sink with "severities": ["critical"] is.
type criticalOnly struct{ httpSink }

func (criticalOnly) TakesSeverity(sev string) bool { return sev == "critical" }

// TestRegionalIncidentsAreRoutedBySeverity: through the real verdicts
// queue, store and ledger, one region failing sends the regional open
// (warning, naming the region) to the sink that takes every severity and
// not to the pager that takes only critical; the global incident that
// follows reaches both, once each; recovery resolves each incident where
// it was opened.
func TestRegionalIncidentsAreRoutedBySeverity(t *testing.T) {
	e := newEnv(t)
	e.endpoint("ep1", nil, nil)
	pager := newReceiver(t)
	a := e.alerter("a", func(o *Options) {
		o.Sinks = append(o.Sinks, criticalOnly{httpSink{name: "pager", url: pager.srv.URL}})
	})
	three := func(i int, s msg.State, failing ...string) msg.Verdict {
		v := verdict("ep1", win(i), s)
		v.RegionStates = map[string]msg.State{"eu": up, "us": up, "ap": up}
		for _, r := range failing {
			v.RegionStates[r] = down
		}
		v.FailingRegions = failing
		return v
	}
	e.publish(three(0, msg.StateRegional, "eu"), three(1, msg.StateRegional, "eu"), three(2, msg.StateRegional, "eu"))
	e.pump(a.Handle)
	got := e.rcv.notifications()
	if len(got) != 1 || got[0].Kind != "open" || got[0].Severity != "warning" || got[0].IncidentKind != "regional" || !slices.Equal(got[0].Regions, []string{"eu"}) {
		t.Fatalf("catch-all sink got %+v, want one regional open (warning, eu)", got)
	}
	if n := pager.notifications(); len(n) != 0 {
		t.Fatalf("the critical-only pager got %+v for a regional incident", n)
	}
	e.publish(three(3, down, "eu", "us"), three(4, down, "eu", "us"), three(5, down, "eu", "us"))
	e.pump(a.Handle)
	if n := pager.notifications(); len(n) != 1 || n[0].Severity != "critical" || n[0].IncidentKind != "global" {
		t.Fatalf("pager got %+v, want one global open (critical)", n)
	}
	e.publish(three(6, up), three(7, up), three(8, up))
	e.pump(a.Handle)
	if got := e.rcv.kinds(); !slices.Equal(got, []string{"open", "open", "resolve", "resolve"}) {
		t.Fatalf("catch-all sink got %v, want the regional and global opens and both resolves", got)
	}
	if got := pager.kinds(); !slices.Equal(got, []string{"open", "resolve"}) {
		t.Fatalf("pager got %v, want the global open and resolve only", got)
	}
}
