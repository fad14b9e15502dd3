package hostcheck_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/mcpmon/mcpmon/pkg/clock"
	"github.com/mcpmon/mcpmon/pkg/hostcheck"
	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/status"
	"github.com/mcpmon/mcpmon/pkg/store"
	"github.com/mcpmon/mcpmon/pkg/store/bolt"
	"github.com/mcpmon/mcpmon/pkg/testpeers"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

var pol = model.HostRecheck{Interval: 24 * time.Hour, Grace: 72 * time.Hour}

type fixture struct {
	st      *bolt.Store
	clk     *clock.Fake
	zone    *testpeers.DNSZone
	metrics *hostcheck.Metrics
	c       *hostcheck.Checker
}

func newFixture(t *testing.T, batch int, res hostcheck.Resolver) *fixture {
	t.Helper()
	clk := clock.NewFake(t0)
	st, err := bolt.Open(filepath.Join(t.TempDir(), "store.db"), bolt.Options{Clock: clk, SweepInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	f := &fixture{st: st, clk: clk, zone: testpeers.NewDNSZone(t), metrics: hostcheck.NewMetrics(prometheus.NewRegistry())}
	switch r := res.(type) {
	case nil:
		res = f.zone.Resolver
	case changeDuringLookup:
		r.Resolver = f.zone.Resolver
		res = r
	}
	f.c = hostcheck.New(hostcheck.Options{Store: st, Resolver: res, Policy: pol, Batch: batch,
		NewToken: func() string { return "issued" }, Clock: clk, Metrics: f.metrics})
	return f
}

func (f *fixture) put(t *testing.T, p model.StatusPage) {
	t.Helper()
	doc, _ := json.Marshal(p)
	if err := f.st.PutObject(t.Context(), store.KindStatusPage, p.ID, doc); err != nil {
		t.Fatal(err)
	}
}

func (f *fixture) get(t *testing.T, id string) model.StatusPage {
	t.Helper()
	doc, err := f.st.GetObject(t.Context(), store.KindStatusPage, id)
	if err != nil {
		t.Fatal(err)
	}
	p, err := model.DecodeStatusPage(doc)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// round runs one round at the fake clock's time plus d.
func (f *fixture) round(t *testing.T, d time.Duration) int {
	t.Helper()
	f.clk.Advance(d)
	n, err := f.c.Round(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// served reports whether pkg/status's index serves page id on its host.
func (f *fixture) served(t *testing.T, id string) bool {
	t.Helper()
	p := f.get(t, id)
	_, byHost := status.PagesIndex([]model.StatusPage{p}, true)
	return byHost[p.Host] == p.Slug
}

func page(id, host, token string, verifiedAt time.Time) model.StatusPage {
	return model.StatusPage{ID: id, Slug: "page-" + id, Title: id, Host: host, CreatedAt: t0,
		HostVerification: &model.HostVerification{Host: host, Token: token, VerifiedAt: verifiedAt}}
}

// TestVerifiedHostWhoseRecordIsGoneIsReleased: a verified host keeps being
// served while its record is found, and while it is missing for less than
// the grace (one blip included); missing on every look for the grace, it
// is pending, not served, with when and why on the page.
func TestVerifiedHostWhoseRecordIsGoneIsReleased(t *testing.T) {
	f := newFixture(t, 0, nil)
	const host = "status.bigco.test"
	f.put(t, page("p1", host, "tok", t0))
	f.zone.SetTXT(model.ChallengeName(host), "mcpmon-verify=tok")

	if n := f.round(t, time.Hour); n != 0 {
		t.Fatalf("a host verified an hour ago was re-checked (%d writes)", n)
	}
	if n := f.round(t, 23*time.Hour); n != 1 || f.get(t, "p1").HostVerification.CheckedAt.IsZero() {
		t.Fatalf("the host was not re-checked a day after its proof (%d writes)", n)
	}
	// A blip: one look misses, the next finds it again.
	f.zone.SetTXT(model.ChallengeName(host))
	f.round(t, 24*time.Hour)
	if p := f.get(t, "p1"); p.HostVerification.FailingSince.IsZero() || p.HostVerification.Failure == "" || !f.served(t, "p1") {
		t.Fatalf("after one miss: %+v, served %v; want failing and still served", p.HostVerification, f.served(t, "p1"))
	}
	f.zone.SetTXT(model.ChallengeName(host), "mcpmon-verify=tok")
	if n := f.round(t, time.Hour); n != 1 {
		t.Fatal("a failing host was not looked at again within the hour")
	}
	if p := f.get(t, "p1"); !p.HostVerification.FailingSince.IsZero() {
		t.Fatalf("the record found again, the host is still failing: %+v", p.HostVerification)
	}

	// Gone for good.
	f.zone.SetTXT(model.ChallengeName(host))
	f.round(t, 24*time.Hour)
	since := f.get(t, "p1").HostVerification.FailingSince
	for f.clk.Now().Sub(since) < pol.Grace-time.Hour {
		f.round(t, time.Hour)
		if !f.served(t, "p1") {
			t.Fatalf("released %s after the first miss, before the grace", f.clk.Now().Sub(since))
		}
	}
	f.round(t, time.Hour)
	p := f.get(t, "p1")
	v := p.HostVerification
	if f.served(t, "p1") || p.HostState() != model.HostPending || v.ReleasedBy != model.HostReleasedByRecheck || !v.ReleasedAt.Equal(f.clk.Now()) {
		t.Fatalf("after the grace: state %q, %+v; want pending, released by the re-check now", p.HostState(), v)
	}
	if v.Token != "tok" {
		t.Errorf("token %q: the released host keeps its token, so the same record proves it again", v.Token)
	}
	if n := f.round(t, 24*time.Hour); n != 0 {
		t.Errorf("a released (pending) host is still re-checked (%d writes)", n)
	}
	if got := testutil.ToFloat64(f.metrics.Checks.WithLabelValues(string(model.HostCheckReleased))); got != 1 {
		t.Errorf("released counted %v times, want 1", got)
	}
}

// TestDNSOutageReleasesNobody: lookups that fail (SERVFAIL) for longer than
// the grace do not release a host.
func TestDNSOutageReleasesNobody(t *testing.T) {
	f := newFixture(t, 0, nil)
	const host = "status.outage.test"
	f.put(t, page("p1", host, "tok", t0))
	f.zone.SetFail(model.ChallengeName(host))
	for range 24 * 5 {
		f.round(t, time.Hour)
	}
	if p := f.get(t, "p1"); !f.served(t, "p1") || p.HostVerification.Failure == "" {
		t.Fatalf("after five days of failed lookups: %+v, served %v; want served, the failure shown", p.HostVerification, f.served(t, "p1"))
	}
	if got := testutil.ToFloat64(f.metrics.Checks.WithLabelValues(string(model.HostCheckLookupFail))); got < 2 {
		t.Errorf("lookup failures counted %v times", got)
	}
}

// TestGrandfatheredHostIsIssuedARecord: a host stored before verification
// is issued a token at its first re-check and stays served; its record
// published, it is verified; never published, it is released after
// FirstRecheckGrace.
func TestGrandfatheredHostIsIssuedARecord(t *testing.T) {
	f := newFixture(t, 0, nil)
	old := func(id, host string) model.StatusPage {
		return model.StatusPage{ID: id, Slug: "page-" + id, Title: id, Host: host, CreatedAt: t0}
	}
	f.put(t, old("kept", "status.kept.test"))
	f.put(t, old("lost", "status.lost.test"))
	if n := f.round(t, 0); n != 2 {
		t.Fatalf("%d grandfathered hosts re-checked, want both at once", n)
	}
	for _, id := range []string{"kept", "lost"} {
		p := f.get(t, id)
		if p.HostState() != model.HostGrandfathered || p.HostVerification.Token != "issued" || !f.served(t, id) {
			t.Fatalf("%s after its first re-check: %q %+v; want grandfathered, served, with a token", id, p.HostState(), p.HostVerification)
		}
	}
	f.zone.SetTXT(model.ChallengeName("status.kept.test"), "mcpmon-verify=issued")
	f.round(t, time.Hour)
	if p := f.get(t, "kept"); p.HostState() != model.HostVerified {
		t.Fatalf("the record published: state %q, want verified", p.HostState())
	}
	f.round(t, pol.Grace)
	if !f.served(t, "lost") {
		t.Fatal("a grandfathered host was released after the ordinary grace")
	}
	f.round(t, model.FirstRecheckGrace-pol.Grace)
	if p := f.get(t, "lost"); f.served(t, "lost") || p.HostVerification.ReleasedBy != model.HostReleasedByRecheck {
		t.Fatalf("after %s: %+v, served %v; want released", model.FirstRecheckGrace, p.HostVerification, f.served(t, "lost"))
	}
}

// TestRoundIsBounded: a round looks up at most its batch, the most
// overdue first; the rest come in the following rounds.
func TestRoundIsBounded(t *testing.T) {
	f := newFixture(t, 3, nil)
	for i := range 7 {
		// p0 was verified first: the most overdue.
		f.put(t, page(fmt.Sprintf("p%d", i), fmt.Sprintf("s%d.bounded.test", i), "tok", t0.Add(time.Duration(i)*time.Minute)))
	}
	f.clk.Advance(25 * time.Hour)
	for _, want := range []int{3, 3, 1, 0} {
		if n := f.round(t, 0); n != want {
			t.Fatalf("round wrote %d pages, want %d", n, want)
		}
	}
	first := f.get(t, "p0").HostVerification.CheckedAt
	if f.get(t, "p6").HostVerification.CheckedAt.IsZero() || first.IsZero() {
		t.Fatal("some page was never re-checked")
	}
}

// changeDuringLookup is a resolver that, while it looks up, lets a tenant
// change the page: what the lookup found must not be written over it.
type changeDuringLookup struct {
	hostcheck.Resolver
	during func()
}

func (c changeDuringLookup) LookupTXT(ctx context.Context, name string) ([]string, error) {
	c.during()
	return c.Resolver.LookupTXT(ctx, name)
}

// TestTenantChangeDuringLookupWins: a page changed while its host is
// looked up (its host changed, pending again) keeps the change; the
// look is dropped.
func TestTenantChangeDuringLookupWins(t *testing.T) {
	var f *fixture
	f = newFixture(t, 0, changeDuringLookup{during: func() {
		p := f.get(t, "p1")
		p.Title, p.Host = "changed", "status.new.test"
		f.put(t, p.WithHostProof(model.StatusPage{Host: "status.old.test"}, "new"))
	}})
	f.put(t, page("p1", "status.old.test", "tok", t0))
	f.zone.SetTXT(model.ChallengeName("status.old.test"))
	if n := f.round(t, 25*time.Hour); n != 0 {
		t.Fatalf("the look was written over the tenant's change (%d writes)", n)
	}
	if p := f.get(t, "p1"); p.Title != "changed" || p.Host != "status.new.test" || !p.HostVerification.CheckedAt.IsZero() {
		t.Fatalf("page %+v %+v; want the tenant's change as made", p, p.HostVerification)
	}
}

// TestTitleEditDuringLookupIsKept: a tenant's edit of the page's other
// fields during the lookup (its host and proof unchanged) is kept, and the
// look is written beside it.
func TestTitleEditDuringLookupIsKept(t *testing.T) {
	var f *fixture
	f = newFixture(t, 0, changeDuringLookup{during: func() {
		p := f.get(t, "p1")
		p.Title = "renamed"
		f.put(t, p)
	}})
	f.put(t, page("p1", "status.old.test", "tok", t0))
	f.zone.SetTXT(model.ChallengeName("status.old.test"))
	if n := f.round(t, 25*time.Hour); n != 1 {
		t.Fatalf("%d writes, want the look written", n)
	}
	if p := f.get(t, "p1"); p.Title != "renamed" || p.HostVerification.CheckedAt.IsZero() {
		t.Fatalf("page %+v %+v; want the tenant's title and the look", p, p.HostVerification)
	}
}

// TestDue: due pages, most overdue first, then by ID, at most batch.
func TestDue(t *testing.T) {
	now := t0.Add(100 * time.Hour)
	pages := []model.StatusPage{
		page("b", "b.test", "t", t0.Add(2*time.Hour)),
		page("a", "a.test", "t", t0.Add(2*time.Hour)),
		page("c", "c.test", "t", t0),
		page("future", "f.test", "t", now),
		{ID: "pending", Host: "p.test", HostVerification: &model.HostVerification{Host: "p.test", Token: "t"}},
		{ID: "grandfathered", Host: "g.test"},
	}
	var got []string
	for _, p := range hostcheck.Due(pages, now, pol, 3) {
		got = append(got, p.ID)
	}
	if want := []string{"grandfathered", "c", "a"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("due %v, want %v", got, want)
	}
}

// TestReplicasCheckingTogetherAgree: two replicas' checkers running their
// rounds at once on one store leave every page as one checker alone
// would: looked at, its outcome counted at most twice, nothing lost.
func TestReplicasCheckingTogetherAgree(t *testing.T) {
	f := newFixture(t, 0, nil)
	other := hostcheck.New(hostcheck.Options{Store: f.st, Resolver: f.zone.Resolver, Policy: pol,
		NewToken: func() string { return "other" }, Clock: f.clk, Metrics: f.metrics})
	for i := range 8 {
		host := fmt.Sprintf("s%d.replicas.test", i)
		f.put(t, page(fmt.Sprintf("p%d", i), host, "tok", t0))
		if i%2 == 0 {
			f.zone.SetTXT(model.ChallengeName(host), "mcpmon-verify=tok")
		}
	}
	f.clk.Advance(25 * time.Hour)
	done := make(chan error, 2)
	for _, c := range []*hostcheck.Checker{f.c, other} {
		go func() { _, err := c.Round(t.Context()); done <- err }()
	}
	for range 2 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	for i := range 8 {
		v := f.get(t, fmt.Sprintf("p%d", i)).HostVerification
		missing := i%2 == 1
		if !v.CheckedAt.Equal(f.clk.Now()) || (v.Failure != "") != missing || v.FailingSince.IsZero() != !missing || v.Token != "tok" {
			t.Errorf("p%d after two replicas' rounds: %+v", i, v)
		}
	}
	n := testutil.ToFloat64(f.metrics.Checks.WithLabelValues(string(model.HostCheckProven))) +
		testutil.ToFloat64(f.metrics.Checks.WithLabelValues(string(model.HostCheckUnproven)))
	if n < 8 || n > 16 {
		t.Errorf("%v looks counted for 8 pages", n)
	}
}
