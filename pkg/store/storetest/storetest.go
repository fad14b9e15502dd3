// Package storetest is the conformance suite every store.Store backend must
// pass. A backend's test calls Run with a factory that opens a fresh, empty
// store on the given fake clock; the suite drives it only through the
// store.Store interface and asserts the contract written in pkg/store's doc
// comments, so the embedded and Redis stores behave the same.
//
// The factory must use the default LedgerTTL (store.DefaultLedgerTTL),
// VerdictHistory (store.DefaultVerdictHistory) and AuditTTL
// (store.DefaultAuditTTL): the suite moves the fake clock across those
// boundaries. Times in the suite are whole seconds (Redis keeps
// milliseconds).
//
// TTL expiry is tested the same way on every backend, by advancing the fake
// clock past the TTL: each backend must take expiry decisions from its
// injected clock. On Redis that means deadlines stored in the values and
// compared in the scripts, with Redis's own PX only collecting garbage —
// rather than PEXPIREAT computed from the fake clock (which the server would
// compare with its wall clock) or a short real TTL (slow, and not the 7-day
// default that matters).
package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/mcpmon/mcpmon/pkg/clock"
	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/msg"
	"github.com/mcpmon/mcpmon/pkg/store"
)

// Factory opens a fresh, empty store on clk. It registers its own cleanup
// (t.Cleanup) to close the store.
type Factory func(t *testing.T, clk *clock.Fake) store.Store

// Start is the fake clock's initial time in every case.
var Start = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// Run runs the whole suite against the backend that newStore opens.
func Run(t *testing.T, newStore Factory) {
	cases := []struct {
		name string
		fn   func(t *testing.T, s store.Store, clk *clock.Fake)
	}{
		{"Ping", testPing},
		{"Endpoints", testEndpoints},
		{"EndpointsConcurrentUpdate", testEndpointsConcurrentUpdate},
		{"EndpointsByTenant", testEndpointsByTenant},               // tenants.go
		{"EndpointQuotaConcurrent", testEndpointQuotaConcurrent},   // tenants.go
		{"IncidentsByTenant", testIncidentsByTenant},               // tenants.go
		{"ObjectsByTenant", testObjectsByTenant},                   // owners.go
		{"ObjectQuotaConcurrent", testObjectQuotaConcurrent},       // owners.go
		{"SwapObject", testSwapObject},                             // owners.go
		{"OwnedReads", testOwnedReads},                             // owners.go
		{"EndpointPagesExactlyOnce", testEndpointPagesExactlyOnce}, // pages.go
		{"VerdictPages", testVerdictPages},
		{"IncidentPages", testIncidentPages},
		{"LatestResult", testLatestResult},
		{"WindowResults", testWindowResults},
		{"WindowsClosedByVerdict", testWindowsClosedByVerdict},
		{"OpenWindowsByShard", testOpenWindowsByShard}, // shards.go
		{"EndpointsByShard", testEndpointsByShard},     // shards.go
		{"VerdictsMonotonic", testVerdictsMonotonic},
		{"VerdictHistoryTrimmedByAge", testVerdictHistoryTrimmed},
		{"BeyondDedupWindow", testBeyondDedupWindow},
		{"TrackerAndIncidents", testTrackerAndIncidents},
		{"SaveTrackerAtomic", testSaveTrackerAtomic},
		{"SaveTrackerConcurrent", testSaveTrackerConcurrent},
		{"UpdateIncident", testUpdateIncident},
		{"IncidentsStampMovesWithIncidentWrites", testIncidentsStamp}, // stamps.go
		{"AnyTenantStampMovesWithEveryTenant", testAnyTenantStamp},    // stamps.go
		{"ListIncidents", testListIncidents},
		{"PendingOutboxesFollowSavedTrackers", testPendingOutboxes},
		{"OpenIncidentCountFollowsTransitions", testOpenIncidentCount},
		{"Deliveries", testDeliveries},
		{"DeliveriesConcurrent", testDeliveriesConcurrent},
		{"LedgerLifecycle", testLedgerLifecycle},
		{"LedgerLeaseTakeover", testLedgerLeaseTakeover},
		{"LedgerRelease", testLedgerRelease},
		{"LedgerTTL", testLedgerTTL},
		{"LedgerConcurrentClaims", testLedgerConcurrentClaims},
		{"Objects", testObjects},
		{"DeleteEndpointCleanup", testDeleteEndpointCleanup},
		{"DeleteEndpointRepeatedCleansStragglers", testDeleteEndpointStragglers},
		{"AuditNewestFirstPerTenant", testAuditOrder}, // audit.go
		{"AuditRange", testAuditRange},
		{"AuditRetention", testAuditRetention},
		{"RollupsCountEachWindowOnce", testRollupsCountEachWindowOnce}, // rollups.go
		{"RollupsMonthUptime", testRollupsMonth},
		{"RollupsRetention", testRollupsRetention},
		{"EventsIdempotentByFingerprint", testEventsIdempotentByFingerprint}, // events.go
		{"EventPages", testEventPages},
		{"EventRetention", testEventRetention},
		{"PendingEventsOldestFirst", testPendingEventsOldestFirst},
		{"EventBudgetFoldsAFlappingEndpoint", testEventBudgetFolds},
		{"EventBudgetPerDay", testEventBudgetPerDay},
		{"EventBudgetConcurrentAppendsCountEachChangeOnce", testEventBudgetConcurrent},
		{"EndpointsStamp", testEndpointsStamp}, // stamp.go
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			clk := clock.NewFake(Start)
			s := newStore(t, clk)
			c.fn(t, s, clk)
		})
	}
}

// ---- helpers

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func wantErr(t *testing.T, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("err = %v, want %v", err, target)
	}
}

// sameJSON compares values by their JSON encoding: stored records come back
// through an encoder, so time zones and nil-vs-empty are normalised alike.
func sameJSON(t *testing.T, got, want any) {
	t.Helper()
	g, err := json.Marshal(got)
	must(t, err)
	w, err := json.Marshal(want)
	must(t, err)
	if string(g) != string(w) {
		t.Fatalf("got  %s\nwant %s", g, w)
	}
}

func result(ep string, slot time.Time, region string, status msg.Status) msg.ProbeResult {
	return msg.ProbeResult{
		Schema: msg.SchemaVersion, EndpointID: ep, ProbeRunID: msg.ProbeRunID(ep, slot), Slot: slot, Region: region,
		StartedAt: slot, FinishedAt: slot.Add(time.Second), Status: status, Class: "ok",
		Phases: map[string]float64{msg.PhaseTotal: 1},
	}
}

func verdict(ep string, window time.Time, state msg.State) msg.Verdict {
	return msg.Verdict{Schema: msg.SchemaVersion, EndpointID: ep, Window: window, WindowSecs: 60, State: state, Results: 1}
}

// emptyList asserts a list from an empty store encodes as [] (not null): the
// API serialises these directly.
func emptyList(t *testing.T, what string, v any, err error) {
	t.Helper()
	must(t, err)
	b, err := json.Marshal(v)
	must(t, err)
	if string(b) != "[]" {
		t.Fatalf("%s on an empty store = %s, want []", what, b)
	}
}

// ---- cases

func testPing(t *testing.T, s store.Store, _ *clock.Fake) {
	must(t, s.Ping(t.Context()))
}

func testEndpoints(t *testing.T, s store.Store, clk *clock.Fake) {
	ctx := t.Context()
	_, err := s.GetEndpoint(ctx, "ep-b")
	wantErr(t, err, model.ErrNotFound)
	eps, err := s.ListEndpoints(ctx)
	emptyList(t, "ListEndpoints", eps, err)

	in := model.Endpoint{
		ID: "ep-b", Name: "b", URL: "https://b.example/mcp", Transport: "auto", Schedule: "@every 30s",
		Timeout: 10 * time.Second, Headers: map[string]string{"Authorization": "Bearer x"},
		Labels: map[string]string{"team": "core"}, Rules: &model.Rules{OpenAfter: 3},
		Sinks: json.RawMessage(`{"webhook":{}}`),
	}
	b, err := s.CreateEndpoint(ctx, in)
	must(t, err)
	if b.Version != 1 || !b.CreatedAt.Equal(Start) || !b.UpdatedAt.Equal(Start) {
		t.Fatalf("created endpoint: version %d createdAt %s updatedAt %s, want 1 and %s", b.Version, b.CreatedAt, b.UpdatedAt, Start)
	}
	got, err := s.GetEndpoint(ctx, "ep-b")
	must(t, err)
	sameJSON(t, got, b)
	// A read is the caller's own copy: changing it changes no later read
	// (a store that remembers decoded records must hand out copies).
	got.Headers["Authorization"], got.Labels["team"], got.Rules.OpenAfter = "Bearer changed", "changed", 9
	got.Sinks[2] = 'X'
	again, err := s.GetEndpoint(ctx, "ep-b")
	must(t, err)
	sameJSON(t, again, b)

	_, err = s.CreateEndpoint(ctx, in)
	wantErr(t, err, store.ErrConflict)

	_, err = s.CreateEndpoint(ctx, model.Endpoint{ID: "ep-a", Name: "a", URL: "https://a.example/mcp", Schedule: "* * * * *"})
	must(t, err)
	eps, err = s.ListEndpoints(ctx)
	must(t, err)
	if len(eps) != 2 || eps[0].ID != "ep-a" || eps[1].ID != "ep-b" {
		t.Fatalf("ListEndpoints = %+v, want ep-a, ep-b", eps)
	}

	clk.Advance(time.Minute)
	b.Name = "b2"
	b.Paused = true
	b2, err := s.UpdateEndpoint(ctx, b)
	must(t, err)
	if b2.Version != 2 || !b2.UpdatedAt.Equal(Start.Add(time.Minute)) || !b2.CreatedAt.Equal(Start) {
		t.Fatalf("updated endpoint: version %d createdAt %s updatedAt %s", b2.Version, b2.CreatedAt, b2.UpdatedAt)
	}
	got, err = s.GetEndpoint(ctx, "ep-b")
	must(t, err)
	sameJSON(t, got, b2)
	if got.Name != "b2" || !got.Paused {
		t.Fatalf("update not stored: %+v", got)
	}

	// b still carries version 1: a stale write.
	_, err = s.UpdateEndpoint(ctx, b)
	wantErr(t, err, store.ErrConflict)
	_, err = s.UpdateEndpoint(ctx, model.Endpoint{ID: "ep-missing", Version: 1})
	wantErr(t, err, model.ErrNotFound)

	must(t, s.DeleteEndpoint(ctx, "ep-b"))
	_, err = s.GetEndpoint(ctx, "ep-b")
	wantErr(t, err, model.ErrNotFound)
	wantErr(t, s.DeleteEndpoint(ctx, "ep-b"), model.ErrNotFound)
	eps, err = s.ListEndpoints(ctx)
	must(t, err)
	if len(eps) != 1 || eps[0].ID != "ep-a" {
		t.Fatalf("after delete ListEndpoints = %+v", eps)
	}

	// Created again under the same ID, it reads as the new record, not as
	// anything a store remembered of the deleted one.
	reborn, err := s.CreateEndpoint(ctx, model.Endpoint{ID: "ep-b", Name: "b again", URL: "https://b2.example/mcp", Schedule: "@every 1m"})
	must(t, err)
	got, err = s.GetEndpoint(ctx, "ep-b")
	must(t, err)
	sameJSON(t, got, reborn)
}

func testEndpointsConcurrentUpdate(t *testing.T, s store.Store, _ *clock.Fake) {
	ctx := t.Context()
	e, err := s.CreateEndpoint(ctx, model.Endpoint{ID: "ep", Schedule: "@every 1m"})
	must(t, err)
	const n = 16
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := e
			c.Name = fmt.Sprint("writer-", i)
			_, err := s.UpdateEndpoint(ctx, c)
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	ok := 0
	for err := range errs {
		switch {
		case err == nil:
			ok++
		case !errors.Is(err, store.ErrConflict):
			t.Fatalf("concurrent update: %v", err)
		}
	}
	if ok != 1 {
		t.Fatalf("%d of %d concurrent updates of version 1 succeeded, want exactly 1", ok, n)
	}
	got, err := s.GetEndpoint(ctx, "ep")
	must(t, err)
	if got.Version != 2 {
		t.Fatalf("version after one successful update = %d, want 2", got.Version)
	}
}

func testLatestResult(t *testing.T, s store.Store, _ *clock.Fake) {
	ctx := t.Context()
	_, err := s.LatestResult(ctx, "ep")
	wantErr(t, err, model.ErrNotFound)

	r1 := result("ep", Start, "", msg.StatusUp)
	r2 := result("ep", Start.Add(time.Minute), "", msg.StatusDown)
	must(t, s.PutLatestResult(ctx, r2))
	must(t, s.PutLatestResult(ctx, r1)) // older slot: ignored
	got, err := s.LatestResult(ctx, "ep")
	must(t, err)
	sameJSON(t, got, r2)

	// Same slot (another region) replaces.
	r2b := result("ep", Start.Add(time.Minute), "eu", msg.StatusUp)
	must(t, s.PutLatestResult(ctx, r2b))
	got, err = s.LatestResult(ctx, "ep")
	must(t, err)
	sameJSON(t, got, r2b)

	r3 := result("ep", Start.Add(2*time.Minute), "", msg.StatusUp)
	must(t, s.PutLatestResult(ctx, r3))
	got, err = s.LatestResult(ctx, "ep")
	must(t, err)
	sameJSON(t, got, r3)

	_, err = s.LatestResult(ctx, "other")
	wantErr(t, err, model.ErrNotFound)
}

func testWindowResults(t *testing.T, s store.Store, _ *clock.Fake) {
	ctx := t.Context()
	w0, w1 := Start, Start.Add(time.Minute)
	ref := store.WindowRef{EndpointID: "ep", Window: w0}
	rs, err := s.WindowResults(ctx, ref)
	emptyList(t, "WindowResults", rs, err)
	open, err := s.OpenWindows(ctx, Start.Add(time.Hour))
	emptyList(t, "OpenWindows", open, err)

	us := result("ep", w0.Add(10*time.Second), "us", msg.StatusUp)
	eu := result("ep", w0.Add(10*time.Second), "eu", msg.StatusDown) // same run, other region
	for _, c := range []struct {
		r    msg.ProbeResult
		want bool
	}{{us, true}, {us, false}, {eu, true}, {eu, false}} {
		added, err := s.AddWindowResult(ctx, w0, c.r)
		must(t, err)
		if added != c.want {
			t.Fatalf("AddWindowResult(%s, %s) added = %v, want %v", c.r.ProbeRunID, c.r.Region, added, c.want)
		}
	}
	// A redelivered result whose body differs (a retried probe) is still a duplicate.
	usRetry := us
	usRetry.Status = msg.StatusDown
	added, err := s.AddWindowResult(ctx, w0, usRetry)
	must(t, err)
	if added {
		t.Fatal("result with a known (ProbeRunID, Region) was added again")
	}

	rs, err = s.WindowResults(ctx, ref)
	must(t, err)
	sameJSON(t, rs, []msg.ProbeResult{eu, us}) // ordered by region

	other := result("ep2", w1.Add(5*time.Second), "", msg.StatusUp)
	_, err = s.AddWindowResult(ctx, w1, other)
	must(t, err)
	later := result("ep", w1.Add(5*time.Second), "us", msg.StatusUp)
	_, err = s.AddWindowResult(ctx, w1, later)
	must(t, err)

	// A window given in another time zone is the same window.
	rs, err = s.WindowResults(ctx, store.WindowRef{EndpointID: "ep", Window: w0.In(time.FixedZone("X", 3600))})
	must(t, err)
	if len(rs) != 2 {
		t.Fatalf("window looked up in another zone has %d results, want 2", len(rs))
	}

	open, err = s.OpenWindows(ctx, w1)
	must(t, err)
	if len(open) != 1 || open[0].EndpointID != "ep" || !open[0].Window.Equal(w0) {
		t.Fatalf("OpenWindows(before %s) = %+v, want ep@%s", w1, open, w0)
	}
	open, err = s.OpenWindows(ctx, w1.Add(time.Minute))
	must(t, err)
	if len(open) != 3 || !open[0].Window.Equal(w0) || open[1].EndpointID != "ep" || open[2].EndpointID != "ep2" {
		t.Fatalf("OpenWindows = %+v, want ep@w0, ep@w1, ep2@w1", open)
	}
}

func testWindowsClosedByVerdict(t *testing.T, s store.Store, _ *clock.Fake) {
	ctx := t.Context()
	w0, w1, w2 := Start, Start.Add(time.Minute), Start.Add(2*time.Minute)
	for _, w := range []time.Time{w0, w1, w2} {
		_, err := s.AddWindowResult(ctx, w, result("ep", w, "", msg.StatusUp))
		must(t, err)
	}
	_, err := s.AddWindowResult(ctx, w1, result("ep2", w1, "", msg.StatusUp))
	must(t, err)

	applied, err := s.RecordVerdict(ctx, verdict("ep", w1, msg.StateUp))
	must(t, err)
	if !applied {
		t.Fatal("first verdict not applied")
	}
	// w1's results are dropped, and so are w0's: an earlier window can no
	// longer be decided. w2 and the other endpoint's window stay open.
	for _, w := range []time.Time{w0, w1} {
		rs, err := s.WindowResults(ctx, store.WindowRef{EndpointID: "ep", Window: w})
		must(t, err)
		if len(rs) != 0 {
			t.Fatalf("window %s still has %d results after its verdict", w, len(rs))
		}
	}
	open, err := s.OpenWindows(ctx, w2.Add(time.Minute))
	must(t, err)
	if len(open) != 2 || open[0].EndpointID != "ep2" || !open[0].Window.Equal(w1) || open[1].EndpointID != "ep" || !open[1].Window.Equal(w2) {
		t.Fatalf("OpenWindows after verdict = %+v, want ep2@w1, ep@w2", open)
	}

	// A late result for the decided window, or an earlier one, is refused.
	for _, w := range []time.Time{w1, w0} {
		_, err = s.AddWindowResult(ctx, w, result("ep", w.Add(30*time.Second), "late", msg.StatusDown))
		wantErr(t, err, store.ErrWindowDecided)
	}
	rs, err := s.WindowResults(ctx, store.WindowRef{EndpointID: "ep", Window: w1})
	must(t, err)
	if len(rs) != 0 {
		t.Fatalf("refused late result was stored: %+v", rs)
	}
	// A later window still accepts.
	added, err := s.AddWindowResult(ctx, w2, result("ep", w2.Add(time.Second), "eu", msg.StatusUp))
	must(t, err)
	if !added {
		t.Fatal("result for an undecided later window not added")
	}
}

func testVerdictsMonotonic(t *testing.T, s store.Store, _ *clock.Fake) {
	ctx := t.Context()
	_, err := s.LastVerdict(ctx, "ep")
	wantErr(t, err, model.ErrNotFound)
	vs, err := s.ListVerdicts(ctx, "ep", 10)
	emptyList(t, "ListVerdicts", vs, err)

	v1 := verdict("ep", Start, msg.StateUp)
	v2 := verdict("ep", Start.Add(time.Minute), msg.StateDown)
	v3 := verdict("ep", Start.Add(2*time.Minute), msg.StateDown)
	for _, c := range []struct {
		v    msg.Verdict
		want bool
	}{
		{v1, true},
		{v3, true},
		{v2, false}, // older than the last: never overwrites it
		{v3, false}, // same window again
		{verdict("ep", Start.Add(2*time.Minute), msg.StateUp), false},
	} {
		applied, err := s.RecordVerdict(ctx, c.v)
		must(t, err)
		if applied != c.want {
			t.Fatalf("RecordVerdict(%s %s) applied = %v, want %v", c.v.Window, c.v.State, applied, c.want)
		}
	}
	last, err := s.LastVerdict(ctx, "ep")
	must(t, err)
	sameJSON(t, last, v3)

	vs, err = s.ListVerdicts(ctx, "ep", 0)
	must(t, err)
	sameJSON(t, vs, []msg.Verdict{v3, v1})
	vs, err = s.ListVerdicts(ctx, "ep", 1)
	must(t, err)
	sameJSON(t, vs, []msg.Verdict{v3})

	// Another endpoint's history is separate, including one whose ID has
	// this one's as a prefix.
	applied, err := s.RecordVerdict(ctx, verdict("ep-2", Start, msg.StateDown))
	must(t, err)
	if !applied {
		t.Fatal("other endpoint's first verdict not applied")
	}
	vs, err = s.ListVerdicts(ctx, "ep", 0)
	must(t, err)
	if len(vs) != 2 {
		t.Fatalf("ep has %d verdicts after another endpoint's, want 2", len(vs))
	}
}

func testVerdictHistoryTrimmed(t *testing.T, s store.Store, clk *clock.Fake) {
	ctx := t.Context()
	old := verdict("ep", Start, msg.StateUp)
	_, err := s.RecordVerdict(ctx, old)
	must(t, err)
	mid := verdict("ep", Start.Add(store.DefaultVerdictHistory/2), msg.StateUp)
	_, err = s.RecordVerdict(ctx, mid)
	must(t, err)

	clk.Advance(store.DefaultVerdictHistory + time.Minute)
	// Past the retention the old verdict is gone even before a write trims it.
	vs, err := s.ListVerdicts(ctx, "ep", 0)
	must(t, err)
	sameJSON(t, vs, []msg.Verdict{mid})
	now := clk.Now()
	v := verdict("ep", now.Truncate(time.Minute), msg.StateDown)
	_, err = s.RecordVerdict(ctx, v)
	must(t, err)
	vs, err = s.ListVerdicts(ctx, "ep", 0)
	must(t, err)
	sameJSON(t, vs, []msg.Verdict{v, mid})
}

// testBeyondDedupWindow: a result and a verdict redelivered more than SQS's
// five-minute dedup interval later cause no second effect.
func testBeyondDedupWindow(t *testing.T, s store.Store, clk *clock.Fake) {
	ctx := t.Context()
	r := result("ep", Start, "", msg.StatusDown)
	added, err := s.AddWindowResult(ctx, Start, r)
	must(t, err)
	if !added {
		t.Fatal("first result not added")
	}
	clk.Advance(6 * time.Minute)
	added, err = s.AddWindowResult(ctx, Start, r)
	must(t, err)
	if added {
		t.Fatal("result redelivered after 6 minutes added twice")
	}
	v := verdict("ep", Start, msg.StateDown)
	applied, err := s.RecordVerdict(ctx, v)
	must(t, err)
	if !applied {
		t.Fatal("verdict not applied")
	}
	clk.Advance(6 * time.Minute)
	applied, err = s.RecordVerdict(ctx, v)
	must(t, err)
	if applied {
		t.Fatal("verdict redelivered after 6 minutes applied twice")
	}
	_, err = s.AddWindowResult(ctx, Start, r)
	wantErr(t, err, store.ErrWindowDecided)

	key := msg.LedgerKey("ep", msg.IncidentID("ep", Start), "open", "webhook")
	st, err := s.Claim(ctx, key, "alerter-1", time.Minute)
	must(t, err)
	if st != store.ClaimAcquired {
		t.Fatalf("first claim = %s", st)
	}
	must(t, s.Complete(ctx, key, "alerter-1"))
	clk.Advance(time.Hour)
	st, err = s.Claim(ctx, key, "alerter-2", time.Minute)
	must(t, err)
	if st != store.ClaimDone {
		t.Fatalf("claim of a completed key an hour later = %s, want done", st)
	}
}

func incident(ep string, opened time.Time) model.Incident {
	return model.Incident{
		ID: msg.IncidentID(ep, opened), EndpointID: ep, State: model.IncidentOpen,
		OpenedWindow: opened, OpenedAt: opened.Add(90 * time.Second), FirstFailure: opened,
		Class: "refused", Reason: "connection refused",
		Transitions: []model.Transition{{At: opened.Add(90 * time.Second), To: model.IncidentOpen, Reason: "2 of 2 windows down"}},
	}
}

func testTrackerAndIncidents(t *testing.T, s store.Store, clk *clock.Fake) {
	ctx := t.Context()
	tr, err := s.GetTracker(ctx, "ep")
	must(t, err)
	if tr.Version != 0 || tr.EndpointID != "ep" {
		t.Fatalf("unknown tracker = %+v, want zero with EndpointID", tr)
	}
	_, err = s.GetIncident(ctx, "nope")
	wantErr(t, err, model.ErrNotFound)

	inc := incident("ep", Start)
	tr.LastWindow = Start
	tr.Recent = []msg.State{msg.StateDown, msg.StateDown}
	tr.OpenIncidentID = inc.ID
	tr.Data = json.RawMessage(`{"pending":["open"]}`)
	must(t, s.SaveTracker(ctx, tr, inc))

	gotT, err := s.GetTracker(ctx, "ep")
	must(t, err)
	tr.Version = 1
	sameJSON(t, gotT, tr)
	gotI, err := s.GetIncident(ctx, inc.ID)
	must(t, err)
	inc.Version = 1
	sameJSON(t, gotI, inc)

	// Resolve: tracker v1 → v2, incident v1 → v2.
	clk.Advance(5 * time.Minute)
	resolved := clk.Now()
	gotI.State = model.IncidentResolved
	gotI.ResolvedAt = &resolved
	gotI.Transitions = append(gotI.Transitions, model.Transition{At: resolved, From: model.IncidentOpen, To: model.IncidentResolved, Reason: "2 up"})
	gotT.OpenIncidentID = ""
	gotT.ConsecutiveUp = 2
	must(t, s.SaveTracker(ctx, gotT, gotI))
	gotT2, err := s.GetTracker(ctx, "ep")
	must(t, err)
	gotI2, err := s.GetIncident(ctx, inc.ID)
	must(t, err)
	if gotT2.Version != 2 || gotI2.Version != 2 || gotI2.State != model.IncidentResolved || gotI2.ResolvedAt == nil || len(gotI2.Transitions) != 2 {
		t.Fatalf("after resolve: tracker v%d, incident %+v", gotT2.Version, gotI2)
	}

	// Tracker-only save.
	must(t, s.SaveTracker(ctx, gotT2))
	gotT3, err := s.GetTracker(ctx, "ep")
	must(t, err)
	if gotT3.Version != 3 {
		t.Fatalf("tracker-only save: version %d, want 3", gotT3.Version)
	}
}

func testSaveTrackerAtomic(t *testing.T, s store.Store, _ *clock.Fake) {
	ctx := t.Context()
	inc1 := incident("ep", Start)
	must(t, s.SaveTracker(ctx, model.Tracker{EndpointID: "ep", OpenIncidentID: inc1.ID}, inc1))

	// Stale tracker (version 0, stored 1) with a new incident: nothing written.
	inc2 := incident("ep", Start.Add(time.Hour))
	err := s.SaveTracker(ctx, model.Tracker{EndpointID: "ep", OpenIncidentID: inc2.ID}, inc2)
	wantErr(t, err, store.ErrConflict)
	_, err = s.GetIncident(ctx, inc2.ID)
	wantErr(t, err, model.ErrNotFound)

	// Fresh tracker, new incident, stale existing incident: nothing written.
	tr, err := s.GetTracker(ctx, "ep")
	must(t, err)
	stale := inc1 // version 0 but stored as 1
	stale.State = model.IncidentResolved
	tr.OpenIncidentID = inc2.ID
	err = s.SaveTracker(ctx, tr, inc2, stale)
	wantErr(t, err, store.ErrConflict)
	got, err := s.GetTracker(ctx, "ep")
	must(t, err)
	if got.Version != 1 || got.OpenIncidentID != inc1.ID {
		t.Fatalf("tracker changed by a failed save: %+v", got)
	}
	_, err = s.GetIncident(ctx, inc2.ID)
	wantErr(t, err, model.ErrNotFound)
	gotI, err := s.GetIncident(ctx, inc1.ID)
	must(t, err)
	if gotI.State != model.IncidentOpen || gotI.Version != 1 {
		t.Fatalf("incident changed by a failed save: %+v", gotI)
	}

	// A non-zero version for an incident that was never stored: conflict.
	ghost := incident("ep", Start.Add(2*time.Hour))
	ghost.Version = 3
	wantErr(t, s.SaveTracker(ctx, tr, ghost), store.ErrConflict)
	// A non-zero tracker version for a tracker never saved: conflict.
	wantErr(t, s.SaveTracker(ctx, model.Tracker{EndpointID: "other", Version: 1}), store.ErrConflict)
}

func testSaveTrackerConcurrent(t *testing.T, s store.Store, _ *clock.Fake) {
	ctx := t.Context()
	const n = 16
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Every writer opens "its own" incident from the same tracker version.
			inc := incident("ep", Start.Add(time.Duration(i)*time.Minute))
			errs <- s.SaveTracker(ctx, model.Tracker{EndpointID: "ep", OpenIncidentID: inc.ID}, inc)
		}()
	}
	wg.Wait()
	close(errs)
	ok := 0
	for err := range errs {
		switch {
		case err == nil:
			ok++
		case !errors.Is(err, store.ErrConflict):
			t.Fatalf("concurrent SaveTracker: %v", err)
		}
	}
	if ok != 1 {
		t.Fatalf("%d of %d concurrent SaveTracker from version 0 succeeded, want 1", ok, n)
	}
	incs, err := s.ListIncidents(ctx, store.IncidentFilter{})
	must(t, err)
	tr, err := s.GetTracker(ctx, "ep")
	must(t, err)
	if len(incs) != 1 || incs[0].ID != tr.OpenIncidentID {
		t.Fatalf("incidents %d (want 1, the winner's), tracker points at %q", len(incs), tr.OpenIncidentID)
	}
}

func testUpdateIncident(t *testing.T, s store.Store, clk *clock.Fake) {
	ctx := t.Context()
	inc := incident("ep", Start)
	_, err := s.UpdateIncident(ctx, inc)
	wantErr(t, err, model.ErrNotFound)
	must(t, s.SaveTracker(ctx, model.Tracker{EndpointID: "ep"}, inc))
	cur, err := s.GetIncident(ctx, inc.ID)
	must(t, err)

	acked := clk.Now()
	ack := cur
	ack.State = model.IncidentAcknowledged
	ack.AckedAt = &acked
	ack.AckedBy = "alice"
	got, err := s.UpdateIncident(ctx, ack)
	must(t, err)
	if got.Version != 2 {
		t.Fatalf("UpdateIncident returned version %d, want 2", got.Version)
	}
	stored, err := s.GetIncident(ctx, inc.ID)
	must(t, err)
	sameJSON(t, stored, got)

	_, err = s.UpdateIncident(ctx, ack) // still version 1
	wantErr(t, err, store.ErrConflict)

	// The alerter's tracker save with the stale incident now conflicts too.
	tr, err := s.GetTracker(ctx, "ep")
	must(t, err)
	wantErr(t, s.SaveTracker(ctx, tr, cur), store.ErrConflict)
}

func testListIncidents(t *testing.T, s store.Store, _ *clock.Fake) {
	ctx := t.Context()
	incs, err := s.ListIncidents(ctx, store.IncidentFilter{})
	emptyList(t, "ListIncidents", incs, err)
	// a: opened at +0 (resolved), +2h (open); b: +1h (open), +3h (resolved).
	a0, a2 := incident("a", Start), incident("a", Start.Add(2*time.Hour))
	b1, b3 := incident("b", Start.Add(time.Hour)), incident("b", Start.Add(3*time.Hour))
	a0.State, b3.State = model.IncidentResolved, model.IncidentResolved
	must(t, s.SaveTracker(ctx, model.Tracker{EndpointID: "a"}, a2, a0))
	must(t, s.SaveTracker(ctx, model.Tracker{EndpointID: "b"}, b1))
	trB, err := s.GetTracker(ctx, "b")
	must(t, err)
	must(t, s.SaveTracker(ctx, trB, b3))

	ids := func(incs []model.Incident) []string {
		out := make([]string, 0, len(incs))
		for _, i := range incs {
			out = append(out, i.ID)
		}
		return out
	}
	for _, c := range []struct {
		name string
		f    store.IncidentFilter
		want []string
	}{
		{"all", store.IncidentFilter{}, []string{b3.ID, a2.ID, b1.ID, a0.ID}},
		{"limit", store.IncidentFilter{Limit: 2}, []string{b3.ID, a2.ID}},
		{"endpoint", store.IncidentFilter{EndpointID: "a"}, []string{a2.ID, a0.ID}},
		{"state", store.IncidentFilter{State: model.IncidentOpen}, []string{a2.ID, b1.ID}},
		{"endpoint+state", store.IncidentFilter{EndpointID: "b", State: model.IncidentResolved}, []string{b3.ID}},
		{"state+limit", store.IncidentFilter{State: model.IncidentResolved, Limit: 1}, []string{b3.ID}},
		{"no match", store.IncidentFilter{EndpointID: "c"}, []string{}},
	} {
		got, err := s.ListIncidents(ctx, c.f)
		must(t, err)
		sameJSON(t, ids(got), c.want)
	}

	// A state change is reflected by the state filter.
	cur, err := s.GetIncident(ctx, b1.ID)
	must(t, err)
	cur.State = model.IncidentAcknowledged
	_, err = s.UpdateIncident(ctx, cur)
	must(t, err)
	got, err := s.ListIncidents(ctx, store.IncidentFilter{State: model.IncidentOpen})
	must(t, err)
	sameJSON(t, ids(got), []string{a2.ID})
	got, err = s.ListIncidents(ctx, store.IncidentFilter{State: model.IncidentAcknowledged})
	must(t, err)
	sameJSON(t, ids(got), []string{b1.ID})
}

// testPendingOutboxes: an endpoint is listed exactly while its tracker was
// last saved with Pending > 0, and a save that conflicts changes nothing.
func testPendingOutboxes(t *testing.T, s store.Store, _ *clock.Fake) {
	ctx := t.Context()
	pending := func(want ...string) {
		t.Helper()
		got, err := s.PendingOutboxes(ctx)
		must(t, err)
		if want == nil {
			want = []string{}
		}
		sameJSON(t, got, want)
	}
	pending()
	must(t, s.SaveTracker(ctx, model.Tracker{EndpointID: "b", Pending: 2}))
	must(t, s.SaveTracker(ctx, model.Tracker{EndpointID: "a", Pending: 1}))
	must(t, s.SaveTracker(ctx, model.Tracker{EndpointID: "c"}))
	pending("a", "b")

	// A conflicting save (stale version) leaves the index as it was.
	wantErr(t, s.SaveTracker(ctx, model.Tracker{EndpointID: "a", Pending: 0}), store.ErrConflict)
	wantErr(t, s.SaveTracker(ctx, model.Tracker{EndpointID: "c", Pending: 1}), store.ErrConflict)
	pending("a", "b")

	// Emptied outboxes are unlisted; a refilled one is listed again.
	for _, ep := range []string{"a", "b"} {
		tr, err := s.GetTracker(ctx, ep)
		must(t, err)
		tr.Pending = 0
		must(t, s.SaveTracker(ctx, tr))
	}
	pending()
	tr, err := s.GetTracker(ctx, "c")
	must(t, err)
	tr.Pending = 1
	must(t, s.SaveTracker(ctx, tr))
	pending("c")
}

// testOpenIncidentCount: the count follows every transition, through
// SaveTracker and UpdateIncident alike, and does not grow with resolved
// incidents or failed saves.
func testOpenIncidentCount(t *testing.T, s store.Store, _ *clock.Fake) {
	ctx := t.Context()
	count := func(want int) {
		t.Helper()
		n, err := s.CountOpenIncidents(ctx)
		must(t, err)
		if n != want {
			t.Fatalf("CountOpenIncidents = %d, want %d", n, want)
		}
	}
	count(0)
	// History: ten resolved incidents of one endpoint.
	var old []model.Incident
	for i := range 10 {
		inc := incident("a", Start.Add(time.Duration(i)*time.Hour))
		inc.State = model.IncidentResolved
		old = append(old, inc)
	}
	must(t, s.SaveTracker(ctx, model.Tracker{EndpointID: "a"}, old...))
	count(0)

	b1, c1 := incident("b", Start), incident("c", Start)
	must(t, s.SaveTracker(ctx, model.Tracker{EndpointID: "b"}, b1))
	must(t, s.SaveTracker(ctx, model.Tracker{EndpointID: "c"}, c1))
	count(2)

	// A conflicting save opens nothing.
	wantErr(t, s.SaveTracker(ctx, model.Tracker{EndpointID: "d", Version: 1}, incident("d", Start)), store.ErrConflict)
	count(2)

	// Acknowledged still counts; resolved over the API or by the alerter
	// does not.
	cur, err := s.GetIncident(ctx, b1.ID)
	must(t, err)
	cur.State = model.IncidentAcknowledged
	cur, err = s.UpdateIncident(ctx, cur)
	must(t, err)
	count(2)
	cur.State = model.IncidentResolved
	_, err = s.UpdateIncident(ctx, cur)
	must(t, err)
	count(1)
	trC, err := s.GetTracker(ctx, "c")
	must(t, err)
	curC, err := s.GetIncident(ctx, c1.ID)
	must(t, err)
	curC.State = model.IncidentResolved
	must(t, s.SaveTracker(ctx, trC, curC))
	count(0)
}

func testDeliveries(t *testing.T, s store.Store, clk *clock.Fake) {
	ctx := t.Context()
	ds, err := s.Deliveries(ctx, "nope")
	emptyList(t, "Deliveries", ds, err)
	wantErr(t, s.RecordDelivery(ctx, "nope", model.Delivery{Kind: "open", Sink: "hook", Outcome: model.DeliveryFailed}), model.ErrNotFound)
	inc, other := incident("ep", Start), incident("ep", Start.Add(time.Hour))
	must(t, s.SaveTracker(ctx, model.Tracker{EndpointID: "ep"}, inc, other))
	if err := s.RecordDelivery(ctx, inc.ID, model.Delivery{Kind: "open:x", Sink: "hook"}); err == nil {
		t.Fatal("RecordDelivery accepted a kind with ':'")
	}

	// First dispatch: two failed attempts; the second one delivers after
	// one more; a replica finding the ledger done does not hide it.
	t1, t2, t3 := clk.Now(), clk.Now().Add(time.Second), clk.Now().Add(time.Minute)
	must(t, s.RecordDelivery(ctx, inc.ID, model.Delivery{Kind: "open", Sink: "hook", Outcome: model.DeliveryFailed,
		Attempts: 2, FirstAttemptAt: t1, LastAttemptAt: t2, LastError: "sink \"hook\": HTTP 503"}))
	must(t, s.RecordDelivery(ctx, inc.ID, model.Delivery{Kind: "open", Sink: "hook", Outcome: model.DeliveryDelivered,
		Attempts: 1, FirstAttemptAt: t3, LastAttemptAt: t3, DeliveredAt: t3}))
	must(t, s.RecordDelivery(ctx, inc.ID, model.Delivery{Kind: "open", Sink: "hook", Outcome: model.DeliverySkipped}))
	delivered := model.Delivery{Kind: "open", Sink: "hook", Outcome: model.DeliveryDelivered, Attempts: 3,
		FirstAttemptAt: t1, LastAttemptAt: t3, DeliveredAt: t3, LastError: "sink \"hook\": HTTP 503"}
	ds, err = s.Deliveries(ctx, inc.ID)
	must(t, err)
	sameJSON(t, ds, []model.Delivery{delivered})

	// Kinds in the incident's order, then sinks; other incidents apart.
	for _, k := range []string{"resolve", "reminder-10", "reminder-2", "open"} {
		must(t, s.RecordDelivery(ctx, inc.ID, model.Delivery{Kind: k, Sink: "chat", Outcome: model.DeliveryMuted}))
	}
	must(t, s.RecordDelivery(ctx, other.ID, model.Delivery{Kind: "open", Sink: "hook", Outcome: model.DeliverySkipped}))
	muted := func(k string) model.Delivery {
		return model.Delivery{Kind: k, Sink: "chat", Outcome: model.DeliveryMuted}
	}
	ds, err = s.Deliveries(ctx, inc.ID)
	must(t, err)
	sameJSON(t, ds, []model.Delivery{muted("open"), delivered, muted("reminder-2"), muted("reminder-10"), muted("resolve")})
	ds, err = s.Deliveries(ctx, other.ID)
	must(t, err)
	sameJSON(t, ds, []model.Delivery{{Kind: "open", Sink: "hook", Outcome: model.DeliverySkipped}})
}

// testDeliveriesConcurrent: replicas recording different sinks of one
// incident keep every record, and records of the same sink add up.
func testDeliveriesConcurrent(t *testing.T, s store.Store, _ *clock.Fake) {
	ctx := t.Context()
	inc := incident("ep", Start)
	must(t, s.SaveTracker(ctx, model.Tracker{EndpointID: "ep"}, inc))
	const n = 8
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			if err := s.RecordDelivery(ctx, inc.ID, model.Delivery{Kind: "open", Sink: fmt.Sprint("sink-", i), Outcome: model.DeliveryDelivered, Attempts: 1}); err != nil {
				t.Error(err)
			}
		})
		wg.Go(func() {
			if err := s.RecordDelivery(ctx, inc.ID, model.Delivery{Kind: "resolve", Sink: "shared", Outcome: model.DeliveryFailed, Attempts: 1}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	ds, err := s.Deliveries(ctx, inc.ID)
	must(t, err)
	if len(ds) != n+1 {
		t.Fatalf("%d records, want %d (one per sink of open, one for resolve): %+v", len(ds), n+1, ds)
	}
	for i, d := range ds[:n] {
		if d.Kind != "open" || d.Sink != fmt.Sprint("sink-", i) || d.Attempts != 1 {
			t.Fatalf("record %d = %+v, want open to sink-%d with 1 attempt", i, d, i)
		}
	}
	if last := ds[n]; last.Kind != "resolve" || last.Attempts != n {
		t.Fatalf("shared record = %+v, want resolve with %d attempts", last, n)
	}
}

func claim(t *testing.T, s store.Store, key, owner string, lease time.Duration, want store.ClaimState) {
	t.Helper()
	got, err := s.Claim(t.Context(), key, owner, lease)
	must(t, err)
	if got != want {
		t.Fatalf("Claim(%s, %s) = %s, want %s", key, owner, got, want)
	}
}

func testLedgerLifecycle(t *testing.T, s store.Store, _ *clock.Fake) {
	ctx := t.Context()
	key := msg.LedgerKey("ep", "ep-20260301T120000Z", "open", "webhook")
	wantErr(t, s.Complete(ctx, key, "a"), store.ErrConflict) // never claimed

	claim(t, s, key, "a", time.Minute, store.ClaimAcquired)
	claim(t, s, key, "b", time.Minute, store.ClaimHeld)
	claim(t, s, key, "a", time.Minute, store.ClaimAcquired) // own live claim: re-acquired
	wantErr(t, s.Complete(ctx, key, "b"), store.ErrConflict)
	must(t, s.Complete(ctx, key, "a"))
	must(t, s.Complete(ctx, key, "a")) // idempotent for the owner
	wantErr(t, s.Complete(ctx, key, "b"), store.ErrConflict)
	claim(t, s, key, "a", time.Minute, store.ClaimDone)
	claim(t, s, key, "b", time.Minute, store.ClaimDone)
	must(t, s.Release(ctx, key, "a")) // done keys are never released
	claim(t, s, key, "b", time.Minute, store.ClaimDone)

	// Keys are independent.
	claim(t, s, key+"-other", "b", time.Minute, store.ClaimAcquired)
	// Zero lease uses the default.
	claim(t, s, "zero-lease", "a", 0, store.ClaimAcquired)
	claim(t, s, "zero-lease", "b", 0, store.ClaimHeld)
}

func testLedgerLeaseTakeover(t *testing.T, s store.Store, clk *clock.Fake) {
	ctx := t.Context()
	claim(t, s, "k", "a", time.Minute, store.ClaimAcquired)
	clk.Advance(59 * time.Second)
	claim(t, s, "k", "b", time.Minute, store.ClaimHeld)
	clk.Advance(time.Second) // a's lease ends: a crashed holder
	claim(t, s, "k", "b", time.Minute, store.ClaimAcquired)
	claim(t, s, "k", "a", time.Minute, store.ClaimHeld)
	// a comes back and tries to finish: it lost the claim.
	wantErr(t, s.Complete(ctx, "k", "a"), store.ErrConflict)
	must(t, s.Release(ctx, "k", "a")) // no-op: not a's
	claim(t, s, "k", "c", time.Minute, store.ClaimHeld)
	must(t, s.Complete(ctx, "k", "b"))
	claim(t, s, "k", "a", time.Minute, store.ClaimDone)

	// A claim past its lease that nobody took over can still be completed
	// by its holder (the effect happened; marking it done is right).
	claim(t, s, "slow", "a", time.Minute, store.ClaimAcquired)
	clk.Advance(2 * time.Minute)
	must(t, s.Complete(ctx, "slow", "a"))
	claim(t, s, "slow", "b", time.Minute, store.ClaimDone)
}

func testLedgerRelease(t *testing.T, s store.Store, _ *clock.Fake) {
	ctx := t.Context()
	claim(t, s, "k", "a", time.Hour, store.ClaimAcquired)
	must(t, s.Release(ctx, "k", "b")) // not b's: no effect
	claim(t, s, "k", "b", time.Hour, store.ClaimHeld)
	must(t, s.Release(ctx, "k", "a")) // the send failed: retry at once
	claim(t, s, "k", "b", time.Hour, store.ClaimAcquired)
	wantErr(t, s.Complete(ctx, "k", "a"), store.ErrConflict)
	must(t, s.Release(ctx, "never-claimed", "a"))
}

func testLedgerTTL(t *testing.T, s store.Store, clk *clock.Fake) {
	ctx := t.Context()
	claim(t, s, "k", "a", time.Minute, store.ClaimAcquired)
	must(t, s.Complete(ctx, "k", "a"))
	// Done is remembered for the TTL from completion ...
	clk.Advance(store.DefaultLedgerTTL - time.Second)
	claim(t, s, "k", "b", time.Minute, store.ClaimDone)
	// ... and then it is forgotten: the key reads as absent.
	clk.Advance(2 * time.Second)
	wantErr(t, s.Complete(ctx, "k", "a"), store.ErrConflict)
	claim(t, s, "k", "b", time.Minute, store.ClaimAcquired)
	claim(t, s, "k", "a", time.Minute, store.ClaimHeld)
	must(t, s.Complete(ctx, "k", "b"))
	claim(t, s, "k", "a", time.Minute, store.ClaimDone)
}

func testLedgerConcurrentClaims(t *testing.T, s store.Store, _ *clock.Fake) {
	ctx := t.Context()
	const owners, keys = 24, 4
	var wg sync.WaitGroup
	var mu sync.Mutex
	acquired := map[string][]string{}
	errs := make(chan error, owners*keys)
	for o := range owners {
		for k := range keys {
			wg.Add(1)
			go func() {
				defer wg.Done()
				key, owner := fmt.Sprint("key-", k), fmt.Sprint("owner-", o)
				st, err := s.Claim(ctx, key, owner, time.Minute)
				if err != nil {
					errs <- err
					return
				}
				switch st {
				case store.ClaimAcquired:
					mu.Lock()
					acquired[key] = append(acquired[key], owner)
					mu.Unlock()
				case store.ClaimHeld:
				default:
					errs <- fmt.Errorf("claim %s by %s = %s, want acquired or held", key, owner, st)
				}
			}()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for k := range keys {
		key := fmt.Sprint("key-", k)
		if len(acquired[key]) != 1 {
			t.Fatalf("%s acquired by %v, want exactly one owner", key, acquired[key])
		}
		// The winner completes; every other owner now sees done.
		must(t, s.Complete(ctx, key, acquired[key][0]))
	}
	wg = sync.WaitGroup{}
	dones := make(chan store.ClaimState, owners)
	for o := range owners {
		wg.Add(1)
		go func() {
			defer wg.Done()
			st, err := s.Claim(ctx, "key-0", fmt.Sprint("late-", o), time.Minute)
			if err != nil {
				t.Error(err)
			}
			dones <- st
		}()
	}
	wg.Wait()
	close(dones)
	for st := range dones {
		if st != store.ClaimDone {
			t.Fatalf("claim after completion = %s, want done", st)
		}
	}
}

func testObjects(t *testing.T, s store.Store, _ *clock.Fake) {
	ctx := t.Context()
	_, err := s.GetObject(ctx, "maintenance", "m1")
	wantErr(t, err, model.ErrNotFound)
	all, err := s.ListObjects(ctx, "maintenance")
	must(t, err)
	if len(all) != 0 {
		t.Fatalf("empty kind lists %d objects", len(all))
	}
	must(t, s.PutObject(ctx, "maintenance", "m1", []byte(`{"a":1}`)))
	must(t, s.PutObject(ctx, "maintenance", "m2", []byte(`{"b":2}`)))
	must(t, s.PutObject(ctx, "catalog", "m1", []byte(`other kind`)))
	must(t, s.PutObject(ctx, "maintenance", "m1", []byte(`{"a":3}`))) // overwrite
	doc, err := s.GetObject(ctx, "maintenance", "m1")
	must(t, err)
	if string(doc) != `{"a":3}` {
		t.Fatalf("GetObject = %s", doc)
	}
	all, err = s.ListObjects(ctx, "maintenance")
	must(t, err)
	if len(all) != 2 || string(all["m1"]) != `{"a":3}` || string(all["m2"]) != `{"b":2}` {
		t.Fatalf("ListObjects = %q", all)
	}
	// An empty document is a document, not an absence.
	must(t, s.PutObject(ctx, "catalog", "empty", []byte{}))
	doc, err = s.GetObject(ctx, "catalog", "empty")
	must(t, err)
	if len(doc) != 0 {
		t.Fatalf("empty document read back as %q", doc)
	}
	must(t, s.DeleteObject(ctx, "maintenance", "m1"))
	_, err = s.GetObject(ctx, "maintenance", "m1")
	wantErr(t, err, model.ErrNotFound)
	wantErr(t, s.DeleteObject(ctx, "maintenance", "m1"), model.ErrNotFound)
	doc, err = s.GetObject(ctx, "catalog", "m1")
	must(t, err)
	if string(doc) != "other kind" {
		t.Fatalf("other kind's object = %s", doc)
	}
}

// DeleteEndpoint runs the delete cases alone, each on a fresh store, as
// direct calls (no subtests), so a backend can expose them under a
// top-level test name of its own.
func DeleteEndpoint(t *testing.T, newStore Factory) {
	for _, fn := range []func(*testing.T, store.Store, *clock.Fake){testDeleteEndpointCleanup, testDeleteEndpointStragglers} {
		clk := clock.NewFake(Start)
		fn(t, newStore(t, clk), clk)
	}
}

// seedEndpoint gives ep everything DeleteEndpoint touches or must keep: a
// latest result, a decided window with its verdict, two undecided windows,
// a tool catalog, a maintenance object under the same ID, and a tracker with
// an open incident.
func seedEndpoint(t *testing.T, s store.Store, ep string) model.Incident {
	t.Helper()
	ctx := t.Context()
	_, err := s.CreateEndpoint(ctx, model.Endpoint{ID: ep, Name: ep, URL: "https://" + ep + ".example/mcp", Schedule: "* * * * *"})
	must(t, err)
	decided, w1, w2 := Start.Add(-2*time.Minute), Start, Start.Add(time.Minute)
	_, err = s.AddWindowResult(ctx, decided, result(ep, decided, "eu", msg.StatusDown))
	must(t, err)
	applied, err := s.RecordVerdict(ctx, verdict(ep, decided, msg.StateDown))
	must(t, err)
	if !applied {
		t.Fatalf("verdict of %s not applied", ep)
	}
	for _, w := range []time.Time{w1, w2} {
		for _, region := range []string{"eu", "us"} {
			_, err := s.AddWindowResult(ctx, w, result(ep, w, region, msg.StatusUp))
			must(t, err)
		}
	}
	must(t, s.PutLatestResult(ctx, result(ep, w2, "eu", msg.StatusUp)))
	for _, kind := range store.ProberObjectKinds() {
		must(t, s.PutObject(ctx, kind, ep, []byte(`{"seeded":true}`)))
		for _, region := range []string{"eu", "us"} {
			must(t, s.PutObject(ctx, kind, store.ProberObjectID(ep, region), []byte(`{"seeded":true}`)))
		}
	}
	must(t, s.PutObject(ctx, "maintenance", ep, []byte(`{"m":1}`)))
	must(t, s.PutObject(ctx, "maintenance", store.ProberObjectID(ep, "eu"), []byte(`{"m":1}`)))
	inc := incident(ep, decided)
	must(t, s.SaveTracker(ctx, model.Tracker{EndpointID: ep, LastWindow: decided, Recent: []msg.State{msg.StateDown}, OpenIncidentID: inc.ID}, inc))
	return inc
}

func testDeleteEndpointCleanup(t *testing.T, s store.Store, _ *clock.Fake) {
	ctx := t.Context()
	incGone := seedEndpoint(t, s, "ep-gone")
	incKept := seedEndpoint(t, s, "ep-kept")
	before := Start.Add(time.Hour)
	refs, err := s.OpenWindows(ctx, before)
	must(t, err)
	if len(refs) != 4 {
		t.Fatalf("seeded OpenWindows = %+v, want 2 windows of each endpoint", refs)
	}

	must(t, s.DeleteEndpoint(ctx, "ep-gone"))

	// Removed: the endpoint, its latest result, its undecided windows, its catalog.
	_, err = s.GetEndpoint(ctx, "ep-gone")
	wantErr(t, err, model.ErrNotFound)
	_, err = s.LatestResult(ctx, "ep-gone")
	wantErr(t, err, model.ErrNotFound)
	_, err = s.GetObject(ctx, "catalog", "ep-gone")
	wantErr(t, err, model.ErrNotFound)
	_, err = s.GetObject(ctx, "server", "ep-gone")
	wantErr(t, err, model.ErrNotFound)
	for _, kind := range store.ProberObjectKinds() {
		_, err = s.GetObject(ctx, kind, "ep-gone")
		wantErr(t, err, model.ErrNotFound)
		for _, region := range []string{"eu", "us"} {
			_, err = s.GetObject(ctx, kind, store.ProberObjectID("ep-gone", region))
			wantErr(t, err, model.ErrNotFound)
			if _, err := s.GetObject(ctx, kind, store.ProberObjectID("ep-kept", region)); err != nil {
				t.Fatalf("%s of region %s of the other endpoint: %v", kind, region, err)
			}
		}
	}
	for _, w := range []time.Time{Start, Start.Add(time.Minute)} {
		rs, err := s.WindowResults(ctx, store.WindowRef{EndpointID: "ep-gone", Window: w})
		must(t, err)
		if len(rs) != 0 {
			t.Fatalf("window %s of the deleted endpoint still holds %d results", w, len(rs))
		}
	}
	refs, err = s.OpenWindows(ctx, before)
	must(t, err)
	want := []store.WindowRef{{EndpointID: "ep-kept", Window: Start}, {EndpointID: "ep-kept", Window: Start.Add(time.Minute)}}
	sameJSON(t, refs, want)

	// Kept: verdict history, last verdict, tracker, incidents, other kinds of object.
	vs, err := s.ListVerdicts(ctx, "ep-gone", 0)
	must(t, err)
	if len(vs) != 1 || vs[0].State != msg.StateDown {
		t.Fatalf("verdict history of the deleted endpoint = %+v, want its one verdict kept", vs)
	}
	last, err := s.LastVerdict(ctx, "ep-gone")
	must(t, err)
	if !last.Window.Equal(Start.Add(-2 * time.Minute)) {
		t.Fatalf("last verdict window = %s", last.Window)
	}
	tr, err := s.GetTracker(ctx, "ep-gone")
	must(t, err)
	if tr.Version == 0 || tr.OpenIncidentID != incGone.ID {
		t.Fatalf("tracker of the deleted endpoint = %+v, want it kept", tr)
	}
	incs, err := s.ListIncidents(ctx, store.IncidentFilter{EndpointID: "ep-gone"})
	must(t, err)
	if len(incs) != 1 || incs[0].ID != incGone.ID {
		t.Fatalf("incidents of the deleted endpoint = %+v, want the audit trail kept", incs)
	}
	if _, err := s.GetObject(ctx, "maintenance", "ep-gone"); err != nil {
		t.Fatalf("a maintenance object sharing the ID was removed: %v", err)
	}
	if _, err := s.GetObject(ctx, "maintenance", store.ProberObjectID("ep-gone", "eu")); err != nil {
		t.Fatalf("a maintenance object sharing a regional ID was removed: %v", err)
	}

	// The other endpoint is untouched.
	if _, err := s.GetEndpoint(ctx, "ep-kept"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.LatestResult(ctx, "ep-kept"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetObject(ctx, "catalog", "ep-kept"); err != nil {
		t.Fatal(err)
	}
	rs, err := s.WindowResults(ctx, store.WindowRef{EndpointID: "ep-kept", Window: Start})
	must(t, err)
	if len(rs) != 2 {
		t.Fatalf("kept endpoint's window holds %d results, want 2", len(rs))
	}
	if _, err := s.GetIncident(ctx, incKept.ID); err != nil {
		t.Fatal(err)
	}

	// Re-registering the ID starts clean; a result for a window after the
	// kept last verdict is accepted again.
	_, err = s.CreateEndpoint(ctx, model.Endpoint{ID: "ep-gone", Name: "again", URL: "https://again.example/mcp", Schedule: "* * * * *"})
	must(t, err)
	_, err = s.LatestResult(ctx, "ep-gone")
	wantErr(t, err, model.ErrNotFound)
	added, err := s.AddWindowResult(ctx, Start.Add(2*time.Minute), result("ep-gone", Start.Add(2*time.Minute), "eu", msg.StatusUp))
	must(t, err)
	if !added {
		t.Fatal("result for a new window of a re-registered endpoint not added")
	}
}

// testDeleteEndpointStragglers: a probe in flight when the endpoint was
// deleted writes its latest result, window and catalogs (its own and
// regional ones) back afterwards; a
// second delete reports ErrNotFound and still removes them.
func testDeleteEndpointStragglers(t *testing.T, s store.Store, _ *clock.Fake) {
	ctx := t.Context()
	_, err := s.CreateEndpoint(ctx, model.Endpoint{ID: "ep", Name: "ep", URL: "https://ep.example/mcp", Schedule: "* * * * *"})
	must(t, err)
	must(t, s.DeleteEndpoint(ctx, "ep"))

	must(t, s.PutLatestResult(ctx, result("ep", Start, "eu", msg.StatusUp)))
	_, err = s.AddWindowResult(ctx, Start, result("ep", Start, "eu", msg.StatusUp))
	must(t, err)
	must(t, s.PutObject(ctx, "catalog", "ep", []byte(`{}`)))
	must(t, s.PutObject(ctx, "catalog", store.ProberObjectID("ep", "eu"), []byte(`{}`)))
	must(t, s.PutObject(ctx, "server", store.ProberObjectID("ep", "us"), []byte(`{}`)))

	wantErr(t, s.DeleteEndpoint(ctx, "ep"), model.ErrNotFound)
	_, err = s.LatestResult(ctx, "ep")
	wantErr(t, err, model.ErrNotFound)
	_, err = s.GetObject(ctx, "catalog", "ep")
	wantErr(t, err, model.ErrNotFound)
	_, err = s.GetObject(ctx, "catalog", store.ProberObjectID("ep", "eu"))
	wantErr(t, err, model.ErrNotFound)
	_, err = s.GetObject(ctx, "server", store.ProberObjectID("ep", "us"))
	wantErr(t, err, model.ErrNotFound)
	refs, err := s.OpenWindows(ctx, Start.Add(time.Hour))
	must(t, err)
	if len(refs) != 0 {
		t.Fatalf("OpenWindows after the second delete = %+v, want none", refs)
	}
}

// BenchClaimComplete measures one notification's ledger round on l: a claim
// of a fresh key, then its completion. Every backend runs the same loop, so
// their numbers compare.
func BenchClaimComplete(b *testing.B, l store.Ledger) {
	ctx := context.Background()
	for i := 0; b.Loop(); i++ {
		key := "bench-" + strconv.Itoa(i)
		if _, err := l.Claim(ctx, key, "a", time.Minute); err != nil {
			b.Fatal(err)
		}
		if err := l.Complete(ctx, key, "a"); err != nil {
			b.Fatal(err)
		}
	}
}
