package status_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpmon/mcpmon/pkg/clock"
	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/status"
)

// TestIncidentTimelineShowsUpdatesNewestFirst: an incident's updates show
// on the page as a timeline, newest first, with their times and escaped,
// and in the JSON in the same order; the key that posted them shows
// nowhere.
func TestIncidentTimelineShowsUpdatesNewestFirst(t *testing.T) {
	const keyName = "KEYNAME-ci-deploy"
	f := fixture()
	opened := now.Add(-30 * time.Minute)
	f.incidents[internalID] = append(f.incidents[internalID], model.Incident{
		ID: "inc2-" + internalID, EndpointID: internalID, State: model.IncidentOpen, OpenedWindow: opened, FirstFailure: opened, Class: "http_5xx",
		Updates: []model.IncidentUpdate{
			{At: opened.Add(2 * time.Minute), Status: model.UpdateInvestigating, Message: "Looking into 500s.", By: keyName},
			{At: opened.Add(9 * time.Minute), Status: model.UpdateIdentified, Message: `A bad deploy <script>alert(1)</script> & "v2"`, By: keyName},
			{At: opened.Add(15 * time.Minute), Status: model.UpdateResolved, Message: "Rolled back.", By: keyName},
		},
	})
	srv := serve(t, f, clock.NewFake(now))

	_, page := get(t, srv.URL+"/status/acme-mcp")
	third := strings.Index(page, "Rolled back.")
	second := strings.Index(page, "A bad deploy &lt;script&gt;alert(1)&lt;/script&gt; &amp; &#34;v2&#34;")
	first := strings.Index(page, "Looking into 500s.")
	if third < 0 || second < 0 || first < 0 || !(third < second && second < first) {
		t.Fatalf("timeline order (newest first) at %d, %d, %d in:\n%s", third, second, first, page)
	}
	for _, want := range []string{`<time datetime="2026-05-20T11:45:00Z">2026-05-20 11:45 UTC</time> <strong>Resolved</strong>`,
		"<strong>Identified</strong>", "<strong>Investigating</strong>", "ongoing"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if strings.Contains(page, "<script>") || strings.Contains(page, keyName) {
		t.Errorf("page carries an unescaped message or the key's name")
	}

	_, js := get(t, srv.URL+"/status/acme-mcp.json")
	var v status.JSONView
	if err := json.Unmarshal([]byte(js), &v); err != nil {
		t.Fatal(err)
	}
	if len(v.Incidents) != 2 || !v.Incidents[0].Ongoing || v.Incidents[0].End != nil || v.Incidents[1].End == nil {
		t.Fatalf("incidents %+v: want the ongoing one first, then the resolved one", v.Incidents)
	}
	var got []string
	for _, u := range v.Incidents[0].Updates {
		got = append(got, u.At.Format("15:04")+" "+u.Status+" "+u.Message)
	}
	want := []string{"11:45 resolved Rolled back.", `11:39 identified A bad deploy <script>alert(1)</script> & "v2"`, "11:32 investigating Looking into 500s."}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("JSON updates\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if strings.Contains(js, keyName) || !strings.Contains(js, `"updates":[]`) {
		t.Errorf("JSON %s: want no key name, and [] for the incident without updates", js)
	}
}

// TestFeedHasAnEntryPerUpdate: each owner's update is one feed entry, named
// by its position from the oldest (updates are append-only), newest first,
// with the message and without the key that posted it.
func TestFeedHasAnEntryPerUpdate(t *testing.T) {
	const keyName = "KEYNAME-ci-deploy"
	f := fixture()
	opened := now.Add(-30 * time.Minute)
	f.incidents[internalID] = append(f.incidents[internalID], model.Incident{
		ID: "inc2-" + internalID, EndpointID: internalID, State: model.IncidentOpen, OpenedWindow: opened, FirstFailure: opened, Class: "http_5xx",
		Updates: []model.IncidentUpdate{
			{At: opened.Add(2 * time.Minute), Status: model.UpdateInvestigating, Message: "Looking into 500s.", By: keyName},
			{At: opened.Add(9 * time.Minute), Status: model.UpdateIdentified, Message: `A bad deploy <b>v2</b>`, By: keyName},
		},
	})
	srv := serve(t, f, clock.NewFake(now))
	_, body := get(t, srv.URL+status.FeedPath("acme-mcp"))
	if strings.Contains(body, keyName) {
		t.Fatalf("the feed names the key that posted:\n%s", body)
	}
	feed := parseFeed(t, body)
	var updates []string
	for _, e := range feed.Entries {
		if strings.Contains(e.ID, "/updated/") {
			updates = append(updates, e.ID[strings.LastIndex(e.ID, "/")+1:]+" "+e.Summary)
		}
	}
	want := []string{
		"2 Update at 2026-05-20 11:39:00 UTC on the incident that began at 2026-05-20 11:30:00 UTC: A bad deploy <b>v2</b>",
		"1 Update at 2026-05-20 11:32:00 UTC on the incident that began at 2026-05-20 11:30:00 UTC: Looking into 500s.",
	}
	if !slices.Equal(updates, want) {
		t.Fatalf("update entries %q, want %q", updates, want)
	}
}
