package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpmon/mcpmon/pkg/api"
	apiv1 "github.com/mcpmon/mcpmon/pkg/api/v1"
	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/store/bolt"
)

func updateMessages(us []apiv1.UpdateView) []string {
	var out []string
	for _, u := range us {
		out = append(out, u.Status+": "+u.Message)
	}
	return out
}

// TestIncidentUpdatesShowNewestFirst: three updates land in the incident
// record in posting order, and the incident, its detail and the list show
// them newest first with their times; an update saying resolved leaves the
// incident open and the alerter's data untouched.
func TestIncidentUpdatesShowNewestFirst(t *testing.T) {
	h := newHarness(t)
	seedIncident(t, h, "inc", "ep-a", model.IncidentOpen)
	var got apiv1.IncidentView
	for i, u := range []string{
		`{"status":"investigating","message":"  Looking into errors.  "}`,
		`{"status":"identified","message":"A bad deploy <b>v2</b>."}`,
		`{"status":"resolved","message":"Rolled back."}`,
	} {
		h.clock.Advance(time.Minute)
		h.mustJSON("POST", "/v1/incidents/inc/updates", u, http.StatusCreated, &got)
		if len(got.Updates) != i+1 || !got.Updates[0].At.Equal(h.clock.Now()) {
			t.Fatalf("after update %d: %+v", i+1, got.Updates)
		}
	}
	want := []string{"resolved: Rolled back.", "identified: A bad deploy <b>v2</b>.", "investigating: Looking into errors."}
	if m := updateMessages(got.Updates); !slices.Equal(m, want) || got.State != string(model.IncidentOpen) {
		t.Fatalf("incident %s with updates %q, want open with %q", got.State, m, want)
	}
	if !got.Updates[2].At.Equal(t0.Add(time.Minute)) || got.Updates[0].By != "" {
		t.Fatalf("updates %+v: want the first at t0+1m and no key without keys", got.Updates)
	}

	var detail apiv1.IncidentDetail
	h.mustJSON("GET", "/v1/incidents/inc", "", http.StatusOK, &detail)
	if m := updateMessages(detail.Updates); !slices.Equal(m, want) {
		t.Fatalf("GET incident updates %q, want %q", m, want)
	}
	var list struct{ Incidents []apiv1.IncidentView }
	h.mustJSON("GET", "/v1/incidents", "", http.StatusOK, &list)
	if len(list.Incidents) != 1 || !slices.Equal(updateMessages(list.Incidents[0].Updates), want) {
		t.Fatalf("list %+v, want the incident with its updates", list.Incidents)
	}

	stored, _ := h.store.GetIncident(t.Context(), "inc")
	if len(stored.Updates) != 3 || stored.Updates[0].Status != model.UpdateInvestigating || stored.State != model.IncidentOpen ||
		string(stored.Data) != `{"private":"alerter state"}` {
		t.Fatalf("stored %+v: want three updates oldest first, still open, the alerter's data kept", stored)
	}

	// An incident without updates says nothing of them.
	seedIncident(t, h, "quiet", "ep-a", model.IncidentOpen)
	if _, b := h.do("GET", "/v1/incidents/quiet", "", ""); strings.Contains(string(b), `"updates"`) {
		t.Fatalf("incident without updates: %s", b)
	}
	// A resolved incident still takes its post-mortem.
	seedIncident(t, h, "done", "ep-a", model.IncidentResolved)
	h.mustJSON("POST", "/v1/incidents/done/updates", `{"status":"resolved","message":"Post-mortem: see the wiki."}`, http.StatusCreated, &got)
	if got.State != string(model.IncidentResolved) || len(got.Updates) != 1 {
		t.Fatalf("resolved incident update: %+v", got)
	}
}

// TestIncidentUpdateProblemsNameTheField: each bad update is a 400
// problem at the field's pointer, and changes nothing.
func TestIncidentUpdateProblemsNameTheField(t *testing.T) {
	h := newHarness(t)
	seedIncident(t, h, "inc", "ep-a", model.IncidentOpen)
	q := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	for _, tc := range []struct {
		name, body, pointer, detail string
	}{
		{"unknown status", `{"status":"fixed","message":"m"}`, "#/status", "investigating, identified, monitoring, resolved"},
		{"no status", `{"message":"m"}`, "#/status", "must be one of"},
		{"no message", `{"status":"monitoring"}`, "#/message", "is required"},
		{"blank message", `{"status":"monitoring","message":"   "}`, "#/message", "is required"},
		{"long message", `{"status":"monitoring","message":` + q(strings.Repeat("é", 1001)) + `}`, "#/message", "2000"},
		{"control character", `{"status":"monitoring","message":"line\nSubject: forged"}`, "#/message", "control characters"},
		{"bidi override", `{"status":"monitoring","message":"\u202eevil"}`, "#/message", "bidirectional"},
		{"unknown member", `{"status":"monitoring","message":"m","by":"mallory"}`, "#/by", ""},
		{"wrong type", `{"status":1,"message":"m"}`, "#/status", "string"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, b := h.do("POST", "/v1/incidents/inc/updates", "", tc.body)
			var p apiv1.Problem
			if resp.StatusCode != http.StatusBadRequest || json.Unmarshal(b, &p) != nil || p.Type != apiv1.TypeInvalidRequest {
				t.Fatalf("%d %.300s, want a 400 invalid-request problem", resp.StatusCode, b)
			}
			found := false
			for _, fe := range p.Errors {
				found = found || fe.Pointer == tc.pointer && strings.Contains(fe.Detail, tc.detail)
			}
			if !found {
				t.Fatalf("errors %+v lack %s with %q", p.Errors, tc.pointer, tc.detail)
			}
		})
	}
	if resp, b := h.do("POST", "/v1/incidents/inc/updates", "", ""); resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("empty body: %d %s, want 400", resp.StatusCode, b)
	}
	if resp, _ := h.do("POST", "/v1/incidents/nope/updates", "", `{"status":"monitoring","message":"m"}`); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("missing incident: %d, want 404", resp.StatusCode)
	}
	if stored, _ := h.store.GetIncident(t.Context(), "inc"); len(stored.Updates) != 0 || stored.Version != 1 {
		t.Fatalf("refused updates changed the incident: %+v", stored)
	}
}

// TestIncidentUpdateCapIs409NamingIt: the update past the cap is refused
// with a problem naming the cap, and the incident keeps what it had.
func TestIncidentUpdateCapIs409NamingIt(t *testing.T) {
	h := newHarness(t)
	inc := seedIncident(t, h, "inc", "ep-a", model.IncidentOpen)
	for i := range model.MaxIncidentUpdates - 1 {
		inc.Updates = append(inc.Updates, model.IncidentUpdate{At: t0, Status: model.UpdateMonitoring, Message: fmt.Sprint("note ", i)})
	}
	if _, err := h.store.UpdateIncident(t.Context(), inc); err != nil {
		t.Fatal(err)
	}
	var got apiv1.IncidentView
	h.mustJSON("POST", "/v1/incidents/inc/updates", `{"status":"resolved","message":"the last one"}`, http.StatusCreated, &got)
	if len(got.Updates) != model.MaxIncidentUpdates || got.Updates[0].Message != "the last one" {
		t.Fatalf("at the cap: %d updates, newest %q", len(got.Updates), got.Updates[0].Message)
	}
	resp, b := h.do("POST", "/v1/incidents/inc/updates", "", `{"status":"resolved","message":"one too many"}`)
	var p apiv1.Problem
	if resp.StatusCode != http.StatusConflict || json.Unmarshal(b, &p) != nil || p.Type != apiv1.TypeTooManyUpdates ||
		!strings.Contains(p.Detail, fmt.Sprint(model.MaxIncidentUpdates)) {
		t.Fatalf("past the cap: %d %s, want 409 %s naming %d", resp.StatusCode, b, apiv1.TypeTooManyUpdates, model.MaxIncidentUpdates)
	}
	if stored, _ := h.store.GetIncident(t.Context(), "inc"); len(stored.Updates) != model.MaxIncidentUpdates {
		t.Fatalf("stored %d updates after the refusal", len(stored.Updates))
	}
}

// TestIncidentUpdatesAreTheTenantsAndNameTheKey: another tenant's key gets
// the 404 of a missing incident and changes nothing; the owner's update
// names its key, and the audit log records it.
func TestIncidentUpdatesAreTheTenantsAndNameTheKey(t *testing.T) {
	ah := newAuthHarness(t)
	ids := ah.seed()
	incID := ids["{incident}"]
	body := `{"status":"investigating","message":"on it"}`
	resp, other := ah.call("POST", "/v1/incidents/"+incID+"/updates", ah.keys["b/admin"], body)
	_, missing := ah.call("POST", "/v1/incidents/no-such-incident/updates", ah.keys["b/admin"], body)
	if resp.StatusCode != http.StatusNotFound || problemDetail(other, incID) != problemDetail(missing, "no-such-incident") {
		t.Fatalf("another tenant's update: %d %s; a missing incident: %s", resp.StatusCode, other, missing)
	}
	if stored, _ := ah.store.GetIncident(t.Context(), incID); len(stored.Updates) != 0 {
		t.Fatalf("b's update landed on a's incident: %+v", stored.Updates)
	}

	resp, b := ah.call("POST", "/v1/incidents/"+incID+"/updates", ah.keys["a/write"], body)
	var v apiv1.IncidentView
	if resp.StatusCode != http.StatusCreated || json.Unmarshal(b, &v) != nil || len(v.Updates) != 1 || v.Updates[0].By != "write" {
		t.Fatalf("a's update: %d %s, want 201 naming the key %q", resp.StatusCode, b, "write")
	}
	found := false
	for _, e := range auditList(t, ah, ah.keys["a/admin"], "") {
		found = found || e.Action == api.ActionPostUpdate && e.ObjectKind == "incident" && e.ObjectID == incID &&
			e.Actor.Name == "write" && e.Summary == "fields: message, status"
	}
	if !found {
		t.Fatalf("no audit entry for the update: %+v", auditList(t, ah, ah.keys["a/admin"], ""))
	}
}

// resolvingStore resolves the incident the way the alerter does (its
// tracker and incident in one compare-and-set) just before the API's first
// write of it, so that write loses the race.
type resolvingStore struct {
	*bolt.Store
	raced bool
}

func (s *resolvingStore) UpdateIncident(ctx context.Context, inc model.Incident) (model.Incident, error) {
	if !s.raced {
		s.raced = true
		cur, err := s.Store.GetIncident(ctx, inc.ID)
		if err != nil {
			return model.Incident{}, err
		}
		tr, err := s.Store.GetTracker(ctx, inc.ID) // seedIncident keys the tracker by the incident
		if err != nil {
			return model.Incident{}, err
		}
		at := t0
		cur.Transitions = append(cur.Transitions, model.Transition{At: at, From: cur.State, To: model.IncidentResolved, Reason: "2 up windows"})
		cur.State, cur.ResolvedAt, cur.ResolvedWindow = model.IncidentResolved, &at, &at
		tr.OpenIncidentID = ""
		if err := s.Store.SaveTracker(ctx, tr, cur); err != nil {
			return model.Incident{}, err
		}
	}
	return s.Store.UpdateIncident(ctx, inc)
}

// TestIncidentUpdateAndAlerterResolveBothLand: an update racing the
// alerter's resolve is retried on the resolved record: the incident ends
// resolved, with the resolve transition and the update.
func TestIncidentUpdateAndAlerterResolveBothLand(t *testing.T) {
	var rs *resolvingStore
	h := newHarness(t, func(o *api.Options) {
		rs = &resolvingStore{Store: o.Store.(*bolt.Store)}
		o.Store = rs
	})
	seedIncident(t, h, "inc", "ep-a", model.IncidentOpen)
	var got apiv1.IncidentView
	h.mustJSON("POST", "/v1/incidents/inc/updates", `{"status":"monitoring","message":"fix deployed"}`, http.StatusCreated, &got)
	stored, _ := h.store.GetIncident(t.Context(), "inc")
	if !rs.raced || stored.State != model.IncidentResolved || len(stored.Transitions) != 2 || len(stored.Updates) != 1 ||
		stored.Updates[0].Message != "fix deployed" || got.State != string(model.IncidentResolved) {
		t.Fatalf("stored %+v (answer %+v): want the alerter's resolve and the update both", stored, got)
	}
}

// TestIncidentUpdateWithNotifyQueuesItsNotice: an update posted with
// notify is saved with a notice on its endpoint's tracker, in the write
// that lists the outbox as pending for the alerter; one without notify
// queues nothing.
func TestIncidentUpdateWithNotifyQueuesItsNotice(t *testing.T) {
	h := newHarness(t)
	seedIncident(t, h, "inc", "ep-a", model.IncidentOpen)
	var got apiv1.IncidentView
	h.mustJSON("POST", "/v1/incidents/inc/updates", `{"status":"investigating","message":"Looking."}`, http.StatusCreated, &got)
	if ids, _ := h.store.PendingOutboxes(t.Context()); slices.Contains(ids, "ep-a") {
		t.Fatalf("an update without notify listed the outbox: %v", ids)
	}
	h.mustJSON("POST", "/v1/incidents/inc/updates", `{"status":"identified","message":"Found it.","notify":true}`, http.StatusCreated, &got)
	tr, err := h.store.GetTracker(t.Context(), "ep-a")
	if err != nil {
		t.Fatal(err)
	}
	if want := []model.UpdateNotice{{IncidentID: "inc", Seq: 2}}; !slices.Equal(tr.Notices, want) || tr.Pending != 1 {
		t.Fatalf("tracker notices %+v pending %d, want %+v", tr.Notices, tr.Pending, want)
	}
	if ids, _ := h.store.PendingOutboxes(t.Context()); !slices.Contains(ids, "ep-a") {
		t.Fatalf("pending outboxes %v: the notice's write must list the endpoint", ids)
	}
	inc, err := h.store.GetIncident(t.Context(), "inc")
	if err != nil || len(inc.Updates) != 2 || !inc.Updates[1].Notify || inc.Updates[0].Notify {
		t.Fatalf("stored updates %+v (%v)", inc.Updates, err)
	}
	if len(got.Updates) != 2 || got.Updates[0].Message != "Found it." {
		t.Fatalf("answer %+v", got.Updates)
	}
	h.mustJSON("POST", "/v1/incidents/inc/updates", `{"status":"identified","message":"x","notify":"yes"}`, http.StatusBadRequest, nil)
}
