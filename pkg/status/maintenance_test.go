package status_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpmon/mcpmon/pkg/clock"
	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/msg"
	"github.com/mcpmon/mcpmon/pkg/status"
	"github.com/mcpmon/mcpmon/pkg/store"
)

// windowNote is a maintenance window's name: the owner's internal note,
// which nothing public may show.
const windowNote = "INTERNAL: failover to db-replica-7 (ticket OPS-4411)"

// putWindow stores a maintenance window in f.
func putWindow(t *testing.T, f *fakeStore, m model.Maintenance) {
	t.Helper()
	if m.Name == "" {
		m.Name = windowNote
	}
	doc, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if f.objects == nil {
		f.objects = map[string]map[string][]byte{}
	}
	if f.objects[store.KindMaintenance] == nil {
		f.objects[store.KindMaintenance] = map[string][]byte{}
	}
	f.objects[store.KindMaintenance][m.ID] = doc
}

// TestBuildShowsMaintenanceInsteadOfTheProbedState: the decision alone.
// An active window of the endpoint's own tenant, by ID or selector, makes
// a probed state "maintenance" until the span's end (a paused endpoint
// stays paused); a window that is over, or another tenant's, changes
// nothing; windows starting within the week are listed as times.
func TestBuildShowsMaintenanceInsteadOfTheProbedState(t *testing.T) {
	ep := model.Endpoint{ID: "ep1", Tenant: "acme", Name: "Search API", Slug: "search", Public: true, Labels: map[string]string{"tier": "core"}}
	end := now.Add(90 * time.Minute)
	active := model.Maintenance{ID: "m", Name: windowNote, Tenant: "acme", EndpointIDs: []string{"ep1"}, Start: now.Add(-time.Hour), End: end}
	bySelector := model.Maintenance{ID: "s", Name: windowNote, Tenant: "acme", Selector: map[string]string{"tier": "core"}, Start: now.Add(-time.Hour), End: end}
	over := model.Maintenance{ID: "o", Tenant: "acme", EndpointIDs: []string{"ep1"}, Start: now.Add(-time.Hour), End: now}
	foreign := model.Maintenance{ID: "f", Tenant: "globex", EndpointIDs: []string{"ep1"}, Start: now.Add(-time.Hour), End: end}
	soon := model.Maintenance{ID: "n", Tenant: "acme", EndpointIDs: []string{"ep1"}, Start: now.Add(48 * time.Hour), End: now.Add(50 * time.Hour)}
	nextMonth := model.Maintenance{ID: "l", Tenant: "acme", EndpointIDs: []string{"ep1"}, Start: now.Add(30 * 24 * time.Hour), End: now.Add(31 * 24 * time.Hour)}
	for _, tt := range []struct {
		name      string
		state     msg.State
		paused    bool
		windows   []model.Maintenance
		want      string
		until     time.Time
		scheduled []model.MaintenanceSpan
	}{
		{"down in a window", msg.StateDown, false, []model.Maintenance{active}, status.StateMaintenance, end, nil},
		{"degraded in a window", msg.StateDegraded, false, []model.Maintenance{active}, status.StateMaintenance, end, nil},
		{"up in a window", msg.StateUp, false, []model.Maintenance{active}, status.StateMaintenance, end, nil},
		{"by label selector", msg.StateDown, false, []model.Maintenance{bySelector}, status.StateMaintenance, end, nil},
		{"paused in a window", msg.StateDown, true, []model.Maintenance{active}, "paused", time.Time{}, nil},
		{"the window is over", msg.StateDown, false, []model.Maintenance{over}, "down", time.Time{}, nil},
		{"another tenant's window", msg.StateDown, false, []model.Maintenance{foreign}, "down", time.Time{}, nil},
		{"a window in two days", msg.StateDown, false, []model.Maintenance{soon, nextMonth}, "down", time.Time{},
			[]model.MaintenanceSpan{{Start: soon.Start, End: soon.End}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := ep
			e.Paused = tt.paused
			p := status.Build(status.Input{Endpoint: e, HasLast: true, Last: msg.Verdict{EndpointID: "ep1", Window: now.Add(-time.Minute), State: tt.state},
				Maintenance: tt.windows, Now: now})
			if p.State != tt.want || !p.MaintenanceUntil.Equal(tt.until) || !slices.Equal(p.Scheduled, tt.scheduled) {
				t.Fatalf("state %q until %v scheduled %v; want %q until %v scheduled %v", p.State, p.MaintenanceUntil, p.Scheduled, tt.want, tt.until, tt.scheduled)
			}
			if tt.want == status.StateMaintenance {
				if want := "Search API is under maintenance until 2026-05-20 13:30 UTC."; p.Sentence != want || p.StateWord != "under maintenance" {
					t.Fatalf("sentence %q, word %q; want %q, under maintenance", p.Sentence, p.StateWord, want)
				}
			}
		})
	}
}

// TestPageStateMaintenanceIsNotAnOutage: a status page whose endpoints
// are up or under maintenance reads "maintenance", not a problem; an
// endpoint down outside maintenance still makes it "down".
func TestPageStateMaintenanceIsNotAnOutage(t *testing.T) {
	up := status.Page{Slug: "a", State: "up"}
	maint := status.Page{Slug: "b", State: status.StateMaintenance}
	down := status.Page{Slug: "c", State: "down"}
	for _, tt := range []struct {
		name            string
		eps             []status.Page
		state, sentence string
	}{
		{"all up", []status.Page{up}, "up", "All systems operational."},
		{"one under maintenance", []status.Page{up, maint}, status.StateMaintenance, "No problems; 1 of 2 endpoints is under planned maintenance."},
		{"one under maintenance, one down", []status.Page{up, maint, down}, "down", "1 of 3 endpoints has a problem."},
	} {
		t.Run(tt.name, func(t *testing.T) {
			v := status.BuildStatusPage(status.PageInput{Page: model.StatusPage{Slug: "p", Groups: []model.PageGroup{{Name: "all"}}}, Groups: [][]status.Page{tt.eps}, Now: now})
			if v.State != tt.state || v.Sentence != tt.sentence {
				t.Fatalf("page %q %q, want %q %q", v.State, v.Sentence, tt.state, tt.sentence)
			}
		})
	}
}

// TestMaintenanceShowsAndEndsOnTime: served through the cache with a fake
// clock, an endpoint down under a window reads "maintenance" in its page,
// JSON and badge, and on its tenant's status page and JSON, never naming
// the window; once the window ends, the next request reads "down" though
// the TTL has not run out, and a window that starts reads "maintenance"
// at its start.
func TestMaintenanceShowsAndEndsOnTime(t *testing.T) {
	f := pageFixture(t, acmePage())
	end := now.Add(10 * time.Second) // well inside the TTL
	putWindow(t, f, model.Maintenance{ID: "m1", Tenant: "acme", EndpointIDs: []string{"ep-auth"}, Start: now.Add(-time.Hour), End: end})
	putWindow(t, f, model.Maintenance{ID: "m2", Tenant: "acme", EndpointIDs: []string{"ep-search"}, Start: end.Add(5 * time.Second), End: now.Add(time.Hour)})
	clk := clock.NewFake(now)
	srv := serve(t, f, clk)
	state := func(path string) string {
		t.Helper()
		var v struct{ State string }
		_, body := get(t, srv.URL+path)
		if err := json.Unmarshal([]byte(body), &v); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		return v.State
	}

	_, html := get(t, srv.URL+"/status/acme-auth")
	_, js := get(t, srv.URL+"/status/acme-auth.json")
	_, badge := get(t, srv.URL+"/badge/acme-auth.svg")
	_, page := get(t, srv.URL+"/status/"+pageSlug)
	_, pageJS := get(t, srv.URL+"/status/"+pageSlug+".json")
	for what, want := range map[string][]string{
		html:   {"Auth API is under maintenance until 2026-05-20 12:00 UTC.", `<strong id="state-word">under maintenance</strong>`},
		js:     {`"state":"maintenance"`, `"maintenanceUntil":"2026-05-20T12:00:10Z"`},
		badge:  {"under maintenance", "#007ec6"},
		page:   {`class="member maintenance"`, "Scheduled maintenance: <time datetime=\"2026-05-20T12:00:15Z\">2026-05-20 12:00 UTC</time> – <time datetime=\"2026-05-20T13:00:00Z\">2026-05-20 13:00 UTC</time>"},
		pageJS: {`"state":"maintenance"`, `"scheduledMaintenance":[{"start":"2026-05-20T12:00:15Z","end":"2026-05-20T13:00:00Z"}]`},
	} {
		for _, w := range want {
			if !strings.Contains(what, w) {
				t.Errorf("response lacks %q:\n%.300s", w, what)
			}
		}
		if strings.Contains(what, "INTERNAL") || strings.Contains(what, "OPS-4411") {
			t.Errorf("a response shows the window's name:\n%.300s", what)
		}
	}
	// The deployment's list counts only Globex's outage as a problem.
	if _, overview := get(t, srv.URL+"/status"); !strings.Contains(overview, "1 of 4 public endpoints has a problem.") || !strings.Contains(overview, "under maintenance") {
		t.Errorf("the overview does not set maintenance apart from problems:\n%s", overview)
	}
	if got := state("/status/" + pageSlug + ".json"); got != status.StateMaintenance {
		t.Errorf("page state %q under maintenance, want %q: maintenance is not an outage", got, status.StateMaintenance)
	}

	clk.Set(end)
	if got := state("/status/acme-auth.json"); got != "down" {
		t.Errorf("at the window's end the endpoint reads %q, want down (a stale maintenance page)", got)
	}
	if got := state("/status/" + pageSlug + ".json"); got != "down" {
		t.Errorf("at the window's end the page reads %q, want down", got)
	}
	clk.Set(end.Add(5 * time.Second))
	if got := state("/status/acme-search.json"); got != status.StateMaintenance {
		t.Errorf("at the next window's start the endpoint reads %q, want maintenance", got)
	}
	if clk.Now().Sub(now) >= status.DefaultTTL {
		t.Fatal("the test must stay inside the TTL to prove the clock, not the TTL, turned the page")
	}
}
