package alerter

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpmon/mcpmon/alerter/notify"
	"github.com/mcpmon/mcpmon/pkg/alert"
	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/store"
)

// noticeSink records the notices it is given, by ledger key.
type noticeSink struct {
	mu   sync.Mutex
	got  []string
	fail error
}

func (s *noticeSink) NotifySubscriber(_ context.Context, n model.SubscriberNotice) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail != nil {
		return s.fail
	}
	s.got = append(s.got, n.Key)
	return nil
}

func (s *noticeSink) keys() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.got)
}

// page puts a status page of tenant over every public endpoint of it.
func (e *env) page(id, tenant string) {
	e.t.Helper()
	doc, _ := json.Marshal(model.StatusPage{ID: id, Tenant: tenant, Slug: "page-" + id, Title: id, Groups: []model.PageGroup{{Name: "all"}}})
	if err := e.st.PutObject(e.ctx, store.KindStatusPage, id, doc); err != nil {
		e.t.Fatal(err)
	}
}

// subscriber puts a subscriber of page in state, confirmed at confirmedAt.
func (e *env) subscriber(id, page string, state model.SubscriberState, confirmedAt time.Time) {
	e.t.Helper()
	doc, _ := json.Marshal(model.Subscriber{ID: id, Page: page, State: state, Address: id + "@example.com", CreatedAt: t0.Add(-time.Hour), ConfirmedAt: confirmedAt})
	if err := e.st.PutObject(e.ctx, store.KindSubscriber, id, doc); err != nil {
		e.t.Fatal(err)
	}
}

// publicEndpoint registers a public endpoint of tenant.
func (e *env) publicEndpoint(id, tenant string) {
	e.t.Helper()
	if _, err := e.st.CreateEndpoint(e.ctx, model.Endpoint{ID: id, Tenant: tenant, Name: "mcp " + id, Slug: "slug-" + id, Public: true,
		URL: "https://" + id + ".example/mcp", Schedule: "@every 1m", Timeout: 5 * time.Second}); err != nil {
		e.t.Fatal(err)
	}
}

// appendUpdate appends an owner's update to the endpoint's latest incident.
func (e *env) appendUpdate(ep, message string) {
	e.t.Helper()
	inc := e.incidents(ep)[0]
	inc.Updates = append(inc.Updates, model.IncidentUpdate{At: e.clk.Now(), Status: model.UpdateIdentified, Message: message})
	if _, err := e.st.UpdateIncident(e.ctx, inc); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) sweepSubscribers(a *Alerter, times int) {
	e.t.Helper()
	for range times {
		if err := a.NotifySubscribers(e.ctx); err != nil {
			e.t.Fatal(err)
		}
	}
}

// TestSubscribersGetOneNoticePerIncidentEvent: a confirmed subscriber of a
// page is told of the opening, each update and the resolution of an
// incident of the page's endpoints once each, however often the sweep
// runs; a pending subscriber, another tenant's page and a subscriber
// confirmed after an event hear nothing of that event.
func TestSubscribersGetOneNoticePerIncidentEvent(t *testing.T) {
	e := newEnv(t)
	e.publicEndpoint("ep1", "acme")
	e.page("p1", "acme")
	e.page("p2", "other") // lists none of acme's endpoints
	e.subscriber("s1", "p1", model.SubscriberConfirmed, t0.Add(-time.Minute))
	e.subscriber("s2", "p1", model.SubscriberPending, time.Time{})
	e.subscriber("s3", "p2", model.SubscriberConfirmed, t0.Add(-time.Minute))
	sink := &noticeSink{}
	a := e.alerter("a", func(o *Options) { o.Subscribers = sink })

	e.states("ep1", 0, down, down)
	e.pump(a.Handle)
	inc := e.incidents("ep1")[0].ID
	e.sweepSubscribers(a, 3)
	e.clk.Advance(time.Minute)
	// s4 confirms after the opening: it is told of the update and the
	// resolution only.
	e.subscriber("s4", "p1", model.SubscriberConfirmed, e.clk.Now())
	e.clk.Advance(time.Minute)
	e.appendUpdate("ep1", "rolled back")
	e.sweepSubscribers(a, 3)
	e.states("ep1", 2, up, up)
	e.clk.Advance(time.Minute)
	e.pump(a.Handle)
	e.sweepSubscribers(a, 3)

	want := []string{
		model.SubscriberNoticeKey("s1", inc, "opened"),
		model.SubscriberNoticeKey("s1", inc, "update-1"),
		model.SubscriberNoticeKey("s4", inc, "update-1"),
		model.SubscriberNoticeKey("s1", inc, "resolved"),
		model.SubscriberNoticeKey("s4", inc, "resolved"),
	}
	// One event's notices go out in parallel: compare as sets.
	if got := sink.keys(); !slices.Equal(slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(want))) {
		t.Fatalf("notices:\n got %v\nwant %v", got, want)
	}
	// Another replica (a restart) finds every notice done.
	e.sweepSubscribers(e.alerter("b", func(o *Options) { o.Subscribers = sink }), 2)
	if got := sink.keys(); len(got) != len(want) {
		t.Fatalf("after another replica's sweep: %d notices, want %d", len(got), len(want))
	}
}

// TestSubscriberCrashAtEveryStep kills the replica at each ledger step of
// a subscriber notice; another replica, after the dead one's lease, sends
// what is left: exactly one notice, except the one duplicate window
// between the send and its mark.
func TestSubscriberCrashAtEveryStep(t *testing.T) {
	for _, tt := range []struct {
		point string
		sends int
	}{
		{"claimed", 1}, // claim taken, before the send
		{"sent", 2},    // accepted, not marked: THE duplicate window
		{"marked", 1},  // marked; the page event not yet
	} {
		t.Run(tt.point, func(t *testing.T) {
			e := newEnv(t)
			e.publicEndpoint("ep1", "acme")
			e.page("p1", "acme")
			e.subscriber("s1", "p1", model.SubscriberConfirmed, t0.Add(-time.Minute))
			sink := &noticeSink{}
			dead := e.alerter("dead", func(o *Options) { o.Subscribers = sink })
			e.states("ep1", 0, down, down)
			e.pump(dead.Handle)
			dead.hook = func(p string) error {
				if p == tt.point {
					return fmt.Errorf("at %s: %w", p, notify.ErrCrash)
				}
				return nil
			}
			if err := dead.NotifySubscribers(e.ctx); !errors.Is(err, notify.ErrCrash) {
				t.Fatalf("crash at %s: err = %v", tt.point, err)
			}
			before := map[string]int{"claimed": 0, "sent": 1, "marked": 1}[tt.point]
			if got := len(sink.keys()); got != before {
				t.Fatalf("before takeover: %d notices, want %d", got, before)
			}
			e.clk.Advance(DefaultLease + time.Second)
			e.sweepSubscribers(e.alerter("live", func(o *Options) { o.Subscribers = sink }), 3)
			got := sink.keys()
			if len(got) != tt.sends || got[0] != got[len(got)-1] {
				t.Fatalf("crash at %s: notices %v, want %d of one key", tt.point, got, tt.sends)
			}
		})
	}
}

// TestSubscriberGivenUpIsNotRetried: a notice refused for good (a 550
// for a dead mailbox) is marked done, not retried every sweep.
func TestSubscriberGivenUpIsNotRetried(t *testing.T) {
	e := newEnv(t)
	e.publicEndpoint("ep1", "acme")
	e.page("p1", "acme")
	e.subscriber("s1", "p1", model.SubscriberConfirmed, t0.Add(-time.Minute))
	calls := 0
	sink := notifierFunc(func(context.Context, model.SubscriberNotice) error {
		calls++
		return fmt.Errorf("550 no such mailbox: %w", alert.ErrPermanent)
	})
	a := e.alerter("a", func(o *Options) { o.Subscribers = sink })
	e.states("ep1", 0, down, down)
	e.pump(a.Handle)
	e.sweepSubscribers(a, 3)
	if calls != 1 {
		t.Fatalf("%d sends of a permanently refused notice, want 1", calls)
	}
}

type notifierFunc func(context.Context, model.SubscriberNotice) error

func (f notifierFunc) NotifySubscriber(ctx context.Context, n model.SubscriberNotice) error {
	return f(ctx, n)
}

// TestOwedNotices: the decision alone — confirmed subscribers, events at
// or after their confirmation, within the horizon, oldest event first.
func TestOwedNotices(t *testing.T) {
	page := model.StatusPage{ID: "p"}
	ep := model.Endpoint{ID: "ep"}
	resolved := t0.Add(2 * time.Hour)
	inc := model.Incident{ID: "i", OpenedAt: t0, ResolvedAt: &resolved,
		Updates: []model.IncidentUpdate{{At: t0.Add(time.Hour)}}}
	subs := []model.Subscriber{
		{ID: "early", State: model.SubscriberConfirmed, ConfirmedAt: t0.Add(-time.Hour)},
		{ID: "late", State: model.SubscriberConfirmed, ConfirmedAt: t0.Add(90 * time.Minute)},
		{ID: "pending", State: model.SubscriberPending},
	}
	names := func(evs []pageEvent, _ time.Time) (out []string) {
		for _, pe := range evs {
			for _, n := range pe.notices {
				out = append(out, n.Key)
			}
		}
		return out
	}
	got := names(OwedNotices(page, subs, []model.Endpoint{ep}, map[string][]model.Incident{"ep": {inc}}, nil, resolved))
	want := []string{"sub-early-i-opened", "sub-early-i-update-1", "sub-early-i-resolved", "sub-late-i-resolved"}
	if !slices.Equal(got, want) {
		t.Fatalf("owed %v, want %v", got, want)
	}
	// Past the horizon only the resolution is still owed.
	got = names(OwedNotices(page, subs, []model.Endpoint{ep}, map[string][]model.Incident{"ep": {inc}}, nil, t0.Add(model.SubscriberHorizon+90*time.Minute)))
	if want := []string{"sub-early-i-resolved", "sub-late-i-resolved"}; !slices.Equal(got, want) {
		t.Fatalf("past the horizon: owed %v, want %v", got, want)
	}
}

// TestOwedNoticesFollowMaintenance: the decision alone, for an endpoint
// under the maintenance rule the owner's alerts follow (gate): "opened"
// and "resolved" are held while a matching window is active, with the
// hold's end as the wake-up; an incident opened and resolved within one
// span of maintenance owes nothing; updates go out regardless; another
// tenant's window never holds anything.
func TestOwedNoticesFollowMaintenance(t *testing.T) {
	h := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Hour) }
	page := model.StatusPage{ID: "p", Tenant: "acme"}
	ep := model.Endpoint{ID: "ep", Tenant: "acme", Labels: map[string]string{"team": "pay"}}
	subs := []model.Subscriber{{ID: "s", State: model.SubscriberConfirmed, ConfirmedAt: t0.Add(-time.Hour)}}
	window := model.Maintenance{ID: "w", Tenant: "acme", EndpointIDs: []string{"ep"}, Start: h(1), End: h(3)}
	bySelector := model.Maintenance{ID: "sel", Tenant: "acme", Selector: map[string]string{"team": "pay"}, Start: h(1), End: h(3)}
	carriesOn := model.Maintenance{ID: "w2", Tenant: "acme", EndpointIDs: []string{"ep"}, Start: h(2), End: h(5)}
	foreign := model.Maintenance{ID: "f", Tenant: "other", EndpointIDs: []string{"ep"}, Start: h(1), End: h(3)}
	long := model.Maintenance{ID: "long", Tenant: "acme", EndpointIDs: []string{"ep"}, Start: h(1), End: h(73)} // past the 48 h horizon
	incident := func(opened time.Time, resolved time.Time, updates ...time.Time) model.Incident {
		inc := model.Incident{ID: "i", EndpointID: "ep", OpenedAt: opened}
		if !resolved.IsZero() {
			inc.ResolvedAt = &resolved
		}
		for _, u := range updates {
			inc.Updates = append(inc.Updates, model.IncidentUpdate{At: u})
		}
		return inc
	}
	minute := func(n time.Time) time.Time { return n.Add(time.Minute) }
	for _, tt := range []struct {
		name     string
		windows  []model.Maintenance
		inc      model.Incident
		now      time.Time
		want     []string // event names owed
		wantWake time.Time
	}{
		{"no window", nil, incident(minute(h(1)), time.Time{}), minute(h(1)), []string{"opened"}, time.Time{}},
		{"opened in a window, held while it lasts", []model.Maintenance{window}, incident(minute(h(1)), time.Time{}), minute(h(2)), nil, h(3)},
		{"still open at the window's end: opened owed", []model.Maintenance{window}, incident(minute(h(1)), time.Time{}), h(3), []string{"opened"}, time.Time{}},
		{"opened and resolved in the window: nothing while it lasts", []model.Maintenance{window}, incident(minute(h(1)), h(2)), minute(h(2)), nil, time.Time{}},
		{"opened and resolved in the window: nothing after it", []model.Maintenance{window}, incident(minute(h(1)), h(2)), h(4), nil, time.Time{}},
		{"a window that carries on makes one span", []model.Maintenance{window, carriesOn}, incident(minute(h(1)), h(4)), h(6), nil, time.Time{}},
		{"...and holds until the span ends", []model.Maintenance{window, carriesOn}, incident(minute(h(1)), time.Time{}), minute(h(2)), nil, h(5)},
		{"resolved after the window: both owed", []model.Maintenance{window}, incident(minute(h(1)), h(4)), h(4), []string{"opened", "resolved"}, time.Time{}},
		{"opened before, resolved in the window: held", []model.Maintenance{window}, incident(t0, h(2)), minute(h(2)), nil, h(3)},
		{"opened before, resolved in the window: sent at its end", []model.Maintenance{window}, incident(t0, h(2)), h(3), []string{"opened", "resolved"}, time.Time{}},
		{"an update in a window is owed", []model.Maintenance{window}, incident(minute(h(1)), time.Time{}, h(2)), minute(h(2)), []string{"update-1"}, h(3)},
		{"an update of a quiet incident is owed", []model.Maintenance{window}, incident(minute(h(1)), h(2), minute(h(1))), h(4), []string{"update-1"}, time.Time{}},
		{"a window by label selector", []model.Maintenance{bySelector}, incident(minute(h(1)), time.Time{}), minute(h(2)), nil, h(3)},
		{"another tenant's window holds nothing", []model.Maintenance{foreign}, incident(minute(h(1)), time.Time{}), minute(h(2)), []string{"opened"}, time.Time{}},
		{"a window longer than the horizon: opened owed at its end", []model.Maintenance{long}, incident(minute(h(1)), time.Time{}), h(73), []string{"opened"}, time.Time{}},
		{"...and until the horizon after its end", []model.Maintenance{long}, incident(minute(h(1)), time.Time{}), h(73 + 49), nil, time.Time{}},
		{"without a window the same event is past the horizon", nil, incident(minute(h(1)), time.Time{}), h(73), nil, time.Time{}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			evs, wake := OwedNotices(page, subs, []model.Endpoint{ep}, map[string][]model.Incident{"ep": {tt.inc}}, tt.windows, tt.now)
			var got []string
			for _, pe := range evs {
				for _, n := range pe.notices {
					got = append(got, n.Event.Name)
				}
			}
			if !slices.Equal(got, tt.want) || !wake.Equal(tt.wantWake) {
				t.Fatalf("owed %v, wake %v; want %v, wake %v", got, wake, tt.want, tt.wantWake)
			}
		})
	}
}

// TestWalkOrder: pages by ID, starting after the page the last walk ran
// out of batch on, wrapping round.
func TestWalkOrder(t *testing.T) {
	pages := []model.StatusPage{{ID: "c"}, {ID: "a"}, {ID: "d"}, {ID: "b"}}
	for _, tc := range []struct{ resume, want string }{
		{"", "abcd"}, {"a", "bcda"}, {"b", "cdab"}, {"d", "abcd"}, {"bb", "cdab"}, {"z", "abcd"},
	} {
		var got strings.Builder
		for _, p := range walkOrder(pages, tc.resume) {
			got.WriteString(p.ID)
		}
		if got.String() != tc.want {
			t.Errorf("walkOrder after %q = %s, want %s", tc.resume, got.String(), tc.want)
		}
	}
}

// TestBusyPagesDoNotStarveOthers: pages owing thousands of notices (here
// six of one tenant, sorted first, 60 subscribers each, three events)
// take at most subscriberPageShare each of a walk's batch, and the next
// walk starts after the page the batch ran out on, so another tenant's
// page is told within two walks; before, every walk went to the first
// pages until their whole backlog was sent.
func TestBusyPagesDoNotStarveOthers(t *testing.T) {
	e := newEnv(t)
	e.publicEndpoint("evil-ep", "evil")
	e.publicEndpoint("acme-ep", "acme")
	for p := range 6 {
		page := fmt.Sprintf("a%d", p)
		e.page(page, "evil")
		for s := range 60 {
			e.subscriber(fmt.Sprintf("s-%s-%03d", page, s), page, model.SubscriberConfirmed, t0.Add(-time.Hour))
		}
	}
	e.page("z", "acme")
	e.subscriber("acme-sub", "z", model.SubscriberConfirmed, t0.Add(-time.Hour))
	sink := &noticeSink{}
	a := e.alerter("a", func(o *Options) { o.Subscribers = sink })
	e.states("evil-ep", 0, down, down)
	e.states("acme-ep", 0, down, down)
	e.pump(a.Handle)
	e.appendUpdate("evil-ep", "one")
	e.appendUpdate("evil-ep", "two")
	want := model.SubscriberNoticeKey("acme-sub", e.incidents("acme-ep")[0].ID, "opened")
	e.sweepSubscribers(a, 2)
	if got := sink.keys(); !slices.Contains(got, want) {
		t.Fatalf("after two walks (%d notices sent) acme's subscriber has not been told", len(got))
	}
}

// TestSlowReceiversDoNotHoldTheWalk: receivers that hold every request to
// the timeout (here each notice of one tenant's six pages moves the clock
// 10 s) get one attempt a notice and a walk starts no page or chunk of
// notices past subscriberWalkTime, so another tenant's subscriber is told
// after minutes, not after the 500 slow notices of a whole walk (5,000 s
// and more, with retries within each).
func TestSlowReceiversDoNotHoldTheWalk(t *testing.T) {
	e := newEnv(t)
	e.publicEndpoint("evil-ep", "evil")
	e.publicEndpoint("acme-ep", "acme")
	for p := range 6 {
		page := fmt.Sprintf("a%d", p)
		e.page(page, "evil")
		for s := range 60 {
			e.subscriber(fmt.Sprintf("s-%s-%03d", page, s), page, model.SubscriberConfirmed, t0.Add(-time.Hour))
		}
	}
	e.page("z", "acme")
	e.subscriber("acme-sub", "z", model.SubscriberConfirmed, t0.Add(-time.Hour))
	var mu sync.Mutex
	var told []string
	slow := notifierFunc(func(_ context.Context, n model.SubscriberNotice) error {
		if n.Page.Tenant == "evil" {
			e.clk.Advance(10 * time.Second)
			return errors.New("receiver timed out")
		}
		mu.Lock()
		defer mu.Unlock()
		told = append(told, n.Key)
		return nil
	})
	a := e.alerter("a", func(o *Options) { o.Subscribers = slow })
	e.states("evil-ep", 0, down, down)
	e.states("acme-ep", 0, down, down)
	e.pump(a.Handle)
	start := e.clk.Now()
	for walk := 1; ; walk++ {
		_ = a.NotifySubscribers(e.ctx) // the slow receivers' failures
		mu.Lock()
		done := len(told) > 0
		mu.Unlock()
		if done {
			break
		}
		if walk == 10 {
			t.Fatalf("after %d walks (%v) acme's subscriber has not been told", walk, e.clk.Now().Sub(start))
		}
	}
	if took := e.clk.Now().Sub(start); took > 10*time.Minute {
		t.Fatalf("acme's subscriber was told after %v of slow receivers, want within 10 minutes", took)
	}
}
