package storetest

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/mcpmon/mcpmon/pkg/clock"
	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/msg"
	"github.com/mcpmon/mcpmon/pkg/store"
)

// testEndpointPagesExactlyOnce: walking a tenant's endpoints page by page
// while others create and delete between pages returns every endpoint
// that exists throughout exactly once, in ID order, none deleted before
// its page, and none of another tenant's.
func testEndpointPagesExactlyOnce(t *testing.T, s store.Store, _ *clock.Fake) {
	ctx := t.Context()
	rng := rand.New(rand.NewPCG(14, 2))
	newID := func() string { return fmt.Sprintf("%016x", rng.Uint64()) }
	create := func(tenant string) string {
		t.Helper()
		id := newID()
		_, err := s.CreateEndpoint(ctx, model.Endpoint{ID: id, Tenant: tenant, Schedule: "@every 1m"})
		must(t, err)
		return id
	}
	live := map[string]bool{} // tenant a's endpoints now
	for range 300 {
		live[create("a")] = true
	}
	for range 20 {
		create("ab") // a prefix of no other tenant's keys
		create("b")
	}
	initial := slices.Sorted(func(yield func(string) bool) {
		for id := range live {
			if !yield(id) {
				return
			}
		}
	})
	deleted := map[string]bool{}
	seen := map[string]int{}
	var order []string
	after, pages := "", 0
	for {
		page, err := s.ListEndpointsPage(ctx, "a", after, 17)
		must(t, err)
		pages++
		if len(page.Endpoints) > 17 {
			t.Fatalf("page %d holds %d endpoints, limit 17", pages, len(page.Endpoints))
		}
		for _, e := range page.Endpoints {
			if e.Tenant != "a" {
				t.Fatalf("tenant a's page holds %s of tenant %q", e.ID, e.Tenant)
			}
			if deleted[e.ID] {
				t.Fatalf("page %d returned %s, deleted before it was read", pages, e.ID)
			}
			seen[e.ID]++
			order = append(order, e.ID)
		}
		if page.Next == "" {
			break
		}
		if page.Next <= after {
			t.Fatalf("cursor went from %q back to %q", after, page.Next)
		}
		after = page.Next
		// Between pages: new endpoints on both sides of the cursor, and
		// deletes of endpoints both read and not yet read.
		for range 3 {
			live[create("a")] = true
		}
		for range 2 {
			id := initial[rng.IntN(len(initial))]
			if live[id] {
				must(t, s.DeleteEndpoint(ctx, id))
				delete(live, id)
				deleted[id] = true
			}
		}
		if pages > 200 {
			t.Fatal("the walk does not end")
		}
	}
	if !slices.IsSorted(order) {
		t.Fatal("pages are not in ID order")
	}
	for id, n := range seen {
		if n != 1 {
			t.Fatalf("%s returned %d times", id, n)
		}
	}
	for _, id := range initial {
		if live[id] && seen[id] != 1 {
			t.Fatalf("%s existed throughout the walk and was returned %d times", id, seen[id])
		}
	}

	// Bounds: no limit is an empty last page; past the end is empty.
	page, err := s.ListEndpointsPage(ctx, "a", "", 0)
	must(t, err)
	if len(page.Endpoints) != 0 || page.Next != "" {
		t.Fatalf("a page of limit 0 = %+v, want empty and last", page)
	}
	page, err = s.ListEndpointsPage(ctx, "a", "~", 10)
	must(t, err)
	emptyList(t, "ListEndpointsPage past the last ID", page.Endpoints, nil)
	page, err = s.ListEndpointsPage(ctx, "none", "", 10)
	must(t, err)
	emptyList(t, "ListEndpointsPage of an empty tenant", page.Endpoints, nil)
	if page.Next != "" {
		t.Fatalf("an empty tenant's page has cursor %q", page.Next)
	}
	// A page that ends exactly at the last endpoint is the last page.
	all, err := s.ListEndpointsOf(ctx, "b")
	must(t, err)
	page, err = s.ListEndpointsPage(ctx, "b", "", len(all))
	must(t, err)
	if len(page.Endpoints) != len(all) || page.Next != "" {
		t.Fatalf("a page holding all %d of tenant b = %d endpoints, next %q; want all and no cursor", len(all), len(page.Endpoints), page.Next)
	}
	page, err = s.ListEndpointsPage(ctx, "b", "", len(all)-1)
	must(t, err)
	if page.Next != all[len(all)-2].ID {
		t.Fatalf("a page one short of tenant b's size ends at %q, want %q", page.Next, all[len(all)-2].ID)
	}
}

// testVerdictPages: ListVerdictsBefore continues a newest-first walk from
// a window, within the retention, and the pages add up to ListVerdicts.
func testVerdictPages(t *testing.T, s store.Store, clk *clock.Fake) {
	ctx := t.Context()
	for i := range 10 {
		_, err := s.RecordVerdict(ctx, verdict("ep", Start.Add(time.Duration(i)*time.Minute), msg.StateUp))
		must(t, err)
	}
	all, err := s.ListVerdicts(ctx, "ep", 0)
	must(t, err)
	var walked []msg.Verdict
	before := time.Time{}
	for {
		page, err := s.ListVerdictsBefore(ctx, "ep", before, 3)
		must(t, err)
		walked = append(walked, page...)
		if len(page) < 3 {
			break
		}
		before = page[len(page)-1].Window
	}
	sameJSON(t, walked, all)
	if len(all) != 10 {
		t.Fatalf("ListVerdicts = %d verdicts, want 10", len(all))
	}
	page, err := s.ListVerdictsBefore(ctx, "ep", Start, 3)
	must(t, err)
	emptyList(t, "ListVerdictsBefore the first window", page, nil)
	_ = clk
}

// testIncidentPages: a walk of ListIncidents pages with After, including
// incidents that share an opening window, returns the full list's order.
func testIncidentPages(t *testing.T, s store.Store, _ *clock.Fake) {
	ctx := t.Context()
	for i, ep := range []string{"a", "b", "c", "d", "e", "f", "g"} {
		// Pairs share a window: the cursor must break ties by ID.
		must(t, s.SaveTracker(ctx, model.Tracker{EndpointID: ep}, incident(ep, Start.Add(time.Duration(i/2)*time.Hour))))
	}
	for _, f := range []store.IncidentFilter{{}, {EndpointID: "c"}} {
		full, err := s.ListIncidents(ctx, f)
		must(t, err)
		var walked []string
		for {
			pf := f
			pf.Limit = 2
			page, err := s.ListIncidents(ctx, pf)
			must(t, err)
			for _, inc := range page {
				walked = append(walked, inc.ID)
			}
			if len(page) < 2 {
				break
			}
			last := page[len(page)-1]
			f.After = &store.IncidentKey{OpenedWindow: last.OpenedWindow, ID: last.ID}
		}
		want := make([]string, 0, len(full))
		for _, inc := range full {
			want = append(want, inc.ID)
		}
		sameJSON(t, walked, want)
	}
}
