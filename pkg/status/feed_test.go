package status_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mmcdole/gofeed"
	"github.com/mmcdole/gofeed/atom"

	"github.com/mcpmon/mcpmon/pkg/clock"
	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/status"
)

const feedPath = "/status/acme-mcp/feed.atom"

// parseFeed reads body with gofeed's Atom parser and checks what RFC 4287
// §4.1 requires of a feed and of each entry, and that the generic parser
// detects it as Atom.
func parseFeed(t *testing.T, body string) *atom.Feed {
	t.Helper()
	if ft := gofeed.DetectFeedType(strings.NewReader(body)); ft != gofeed.FeedTypeAtom {
		t.Fatalf("feed type %v, want Atom:\n%s", ft, body)
	}
	if _, err := gofeed.NewParser().ParseString(body); err != nil {
		t.Fatalf("gofeed: %v\n%s", err, body)
	}
	f, err := (&atom.Parser{}).Parse(strings.NewReader(body))
	if err != nil {
		t.Fatalf("atom: %v\n%s", err, body)
	}
	if f.ID == "" || f.Title == "" || f.UpdatedParsed == nil || len(f.Authors) == 0 || f.Authors[0].Name == "" {
		t.Errorf("feed lacks a required element: id %q title %q updated %q authors %v", f.ID, f.Title, f.Updated, f.Authors)
	}
	if self := link(f.Links, "self"); self != feedPath {
		t.Errorf("self link %q, want %q", self, feedPath)
	}
	for i, e := range f.Entries {
		if !strings.HasPrefix(e.ID, "tag:") || e.Title == "" || e.UpdatedParsed == nil || e.Summary == "" {
			t.Errorf("entry %d lacks a required element: %+v", i, e)
		}
		if alt := link(e.Links, "alternate"); alt != "/status/acme-mcp" {
			t.Errorf("entry %d links %q, want the page", i, alt)
		}
	}
	return f
}

func link(ls []*atom.Link, rel string) string {
	for _, l := range ls {
		if l.Rel == rel {
			return l.Href
		}
	}
	return ""
}

func entryIDs(f *atom.Feed) []string {
	var ids []string
	for _, e := range f.Entries {
		ids = append(ids, e.ID)
	}
	return ids
}

// TestFeedHasAnEntryPerIncidentEvent: a resolved incident is two entries
// (opened, resolved) and an ongoing one is one, newest first, each dated
// at its event, in the page's public words.
func TestFeedHasAnEntryPerIncidentEvent(t *testing.T) {
	f := fixture()
	open := now.Add(-10 * time.Minute)
	f.incidents[ep0] = append(f.incidents[ep0], model.Incident{ID: "inc2-" + ep0, EndpointID: ep0, State: model.IncidentOpen,
		OpenedWindow: open, FirstFailure: open, Class: "http_5xx", Reason: secretReason})
	srv := serve(t, f, clock.NewFake(now))
	resp, body := get(t, srv.URL+feedPath)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	for h, want := range map[string]string{
		"Content-Type":            status.FeedContentType,
		"Cache-Control":           status.CacheControl,
		"Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; img-src 'self'; base-uri 'none'; form-action 'none'",
		"X-Content-Type-Options":  "nosniff",
	} {
		if got := resp.Header.Get(h); got != want {
			t.Errorf("%s %q, want %q", h, got, want)
		}
	}
	feed := parseFeed(t, body)
	opened := now.Add(-26 * time.Hour)
	want := []struct {
		suffix, title string
		at            time.Time
	}{
		{"/opened", "Acme MCP: incident opened (server error)", open},
		{"/resolved", "Acme MCP: incident resolved after 42 min", opened.Add(42 * time.Minute)},
		{"/opened", "Acme MCP: incident opened (timed out)", opened},
	}
	if len(feed.Entries) != len(want) {
		t.Fatalf("%d entries, want %d:\n%s", len(feed.Entries), len(want), body)
	}
	for i, w := range want {
		e := feed.Entries[i]
		if !strings.HasSuffix(e.ID, w.suffix) || e.Title != w.title || !e.UpdatedParsed.Equal(w.at) {
			t.Errorf("entry %d = %s %q at %v, want …%s %q at %v", i, e.ID, e.Title, e.UpdatedParsed, w.suffix, w.title, w.at)
		}
	}
	if !feed.UpdatedParsed.Equal(open) {
		t.Errorf("feed updated %v, want the newest entry's %v", feed.UpdatedParsed, open)
	}
	if feed.Entries[1].ID[:strings.LastIndex(feed.Entries[1].ID, "/")] != feed.Entries[2].ID[:strings.LastIndex(feed.Entries[2].ID, "/")] {
		t.Errorf("the opening and resolution of one incident name different incidents: %v", entryIDs(feed))
	}
}

// TestFeedEntryIDsAreStableAcrossRenders: after the TTL the page is read
// and rendered again; every entry keeps its ID and time, and an incident
// that resolved in between adds a resolution without changing its opening.
func TestFeedEntryIDsAreStableAcrossRenders(t *testing.T) {
	f := fixture()
	open := now.Add(-10 * time.Minute)
	f.incidents[ep0] = append(f.incidents[ep0], model.Incident{ID: "inc2-" + ep0, EndpointID: ep0, State: model.IncidentOpen,
		OpenedWindow: open, FirstFailure: open, Class: "http_5xx"})
	clk := clock.NewFake(now)
	srv := serve(t, f, clk)
	_, body := get(t, srv.URL+feedPath)
	first := parseFeed(t, body)

	clk.Advance(status.DefaultTTL)
	_, again := get(t, srv.URL+feedPath)
	if again != body {
		t.Errorf("a re-render of unchanged incidents changed the feed:\n%s\n---\n%s", body, again)
	}

	resolved := now.Add(time.Minute)
	f.incidents[ep0][1].State, f.incidents[ep0][1].ResolvedAt = model.IncidentResolved, &resolved
	clk.Advance(status.DefaultTTL)
	_, body = get(t, srv.URL+feedPath)
	second := parseFeed(t, body)
	if len(second.Entries) != len(first.Entries)+1 {
		t.Fatalf("after the resolve: %v, want one entry more than %v", entryIDs(second), entryIDs(first))
	}
	if got := second.Entries[0]; !strings.HasSuffix(got.ID, "/resolved") || !got.UpdatedParsed.Equal(resolved) {
		t.Errorf("newest entry %s at %v, want the resolution at %v", got.ID, got.UpdatedParsed, resolved)
	}
	for i, e := range first.Entries {
		s := second.Entries[i+1]
		if s.ID != e.ID || s.Updated != e.Updated || s.Title != e.Title || s.Summary != e.Summary {
			t.Errorf("entry %s changed across renders: %+v → %+v", e.ID, e, s)
		}
	}
}

// TestFeedIsBounded: an endpoint with more incident events than
// FeedEntries shows the newest FeedEntries of them.
func TestFeedIsBounded(t *testing.T) {
	f := fixture()
	f.incidents[ep0] = nil
	for i := range status.FeedEntries {
		start := now.Add(-time.Duration(i+1) * time.Hour)
		end := start.Add(5 * time.Minute)
		f.incidents[ep0] = append(f.incidents[ep0], model.Incident{ID: fmt.Sprintf("inc%d", i), EndpointID: ep0,
			State: model.IncidentResolved, OpenedWindow: start, FirstFailure: start, ResolvedAt: &end})
	}
	srv := serve(t, f, clock.NewFake(now))
	_, body := get(t, srv.URL+feedPath)
	feed := parseFeed(t, body)
	if len(feed.Entries) != status.FeedEntries {
		t.Fatalf("%d entries, want %d", len(feed.Entries), status.FeedEntries)
	}
	seen := map[string]bool{}
	for i, e := range feed.Entries {
		if seen[e.ID] {
			t.Errorf("entry ID %s twice", e.ID)
		}
		seen[e.ID] = true
		if i > 0 && e.UpdatedParsed.After(*feed.Entries[i-1].UpdatedParsed) {
			t.Errorf("entry %d (%v) is newer than entry %d (%v)", i, e.UpdatedParsed, i-1, feed.Entries[i-1].UpdatedParsed)
		}
	}
	// 2 × 50 events, the newest 50 kept: the 25 newest incidents, each
	// resolution above its opening, down to the 25th's opening 25 h ago.
	if last := feed.Entries[len(feed.Entries)-1]; !strings.HasSuffix(last.ID, "/opened") || !last.UpdatedParsed.Equal(now.Add(-25*time.Hour)) {
		t.Errorf("oldest entry kept %s at %v", last.ID, last.UpdatedParsed)
	}
}

// TestEmptyFeedIsValid: an endpoint without incidents has a valid feed
// with no entries.
func TestEmptyFeedIsValid(t *testing.T) {
	f := fixture()
	f.incidents[ep0] = nil
	srv := serve(t, f, clock.NewFake(now))
	resp, body := get(t, srv.URL+feedPath)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%d", resp.StatusCode)
	}
	if feed := parseFeed(t, body); len(feed.Entries) != 0 {
		t.Errorf("%d entries", len(feed.Entries))
	}
}

// TestPageLinksItsFeed: the endpoint's page names its feed for readers
// that discover feeds from a page.
func TestPageLinksItsFeed(t *testing.T) {
	srv := serve(t, fixture(), clock.NewFake(now))
	_, body := get(t, srv.URL+"/status/acme-mcp")
	if !strings.Contains(body, `<link rel="alternate" type="application/atom+xml" title="Acme MCP incidents" href="/status/acme-mcp/feed.atom">`) {
		t.Errorf("page lacks the feed's alternate link:\n%s", body)
	}
}

// TestIndexIsAnOperatorOption: without PublicIndex, /status is the 404 of
// an unknown slug and pages do not link to it; every per-endpoint
// response is still served.
func TestIndexIsAnOperatorOption(t *testing.T) {
	for _, index := range []bool{false, true} {
		t.Run(fmt.Sprintf("index=%v", index), func(t *testing.T) {
			srv := serveWith(t, status.Options{Store: fixture(), Clock: clock.NewFake(now), PublicIndex: index})
			resp, body := get(t, srv.URL+"/status")
			want := http.StatusNotFound
			if index {
				want = http.StatusOK
			}
			if resp.StatusCode != want {
				t.Errorf("/status: %d, want %d", resp.StatusCode, want)
			}
			if !index {
				_, unknown := get(t, srv.URL+"/status/nope")
				if body != unknown || resp.Header.Get("Cache-Control") != status.CacheControl {
					t.Errorf("/status answers %q, an unknown slug %q", body, unknown)
				}
			}
			for _, path := range []string{"/status/acme-mcp", "/status/acme-mcp.json", "/badge/acme-mcp.svg", feedPath} {
				if resp, _ := get(t, srv.URL+path); resp.StatusCode != http.StatusOK {
					t.Errorf("%s: %d", path, resp.StatusCode)
				}
			}
			_, page := get(t, srv.URL+"/status/acme-mcp")
			if links := strings.Contains(page, `href="/status"`); links != index {
				t.Errorf("page links /status: %v, want %v", links, index)
			}
		})
	}
}

// TestEndpointPageListsTheNewestIncidents: an endpoint with more incidents
// in 90 days than PageIncidents (a flapping target, each with the owner's
// updates) lists the newest PageIncidents on its page and in its JSON,
// says how many it leaves out and counts them all in incidents90d; its
// feed still has an update posted just now to its oldest incident. 2,000
// incidents of 20 updates of 2000 bytes made an 82 MB page and 79 MB JSON.
func TestEndpointPageListsTheNewestIncidents(t *testing.T) {
	f := fixture()
	f.incidents[ep0] = nil
	const n = 300
	for i := range n {
		start := now.Add(-time.Duration(i+1) * time.Hour)
		end := start.Add(5 * time.Minute)
		inc := model.Incident{ID: fmt.Sprintf("inc%d", i), EndpointID: ep0, State: model.IncidentResolved, OpenedWindow: start,
			FirstFailure: start, ResolvedAt: &end}
		for u := range 20 {
			inc.Updates = append(inc.Updates, model.IncidentUpdate{At: start.Add(time.Duration(u) * time.Second), Status: model.UpdateMonitoring,
				Message: strings.Repeat("m", 2000)})
		}
		if i == n-1 {
			inc.Updates = append(inc.Updates, model.IncidentUpdate{At: now.Add(-time.Minute), Status: model.UpdateResolved, Message: "late word"})
		}
		f.incidents[ep0] = append(f.incidents[ep0], inc)
	}
	srv := serve(t, f, clock.NewFake(now))
	_, html := get(t, srv.URL+"/status/acme-mcp")
	if got := strings.Count(html, `<tr class="incident">`); got != status.PageIncidents {
		t.Errorf("page lists %d incidents, want %d", got, status.PageIncidents)
	}
	if want := fmt.Sprintf("%d earlier incidents of the last 90 days not listed", n-status.PageIncidents); !strings.Contains(html, want) {
		t.Errorf("page does not say %q", want)
	}
	if len(html) > 3<<20 {
		t.Errorf("page is %d bytes", len(html))
	}
	_, js := get(t, srv.URL+"/status/acme-mcp.json")
	var v struct {
		Incidents90d int
		Incidents    []json.RawMessage
	}
	if err := json.Unmarshal([]byte(js), &v); err != nil {
		t.Fatal(err)
	}
	if v.Incidents90d != n || len(v.Incidents) != status.PageIncidents {
		t.Errorf("JSON: incidents90d %d, %d incidents listed; want %d and %d", v.Incidents90d, len(v.Incidents), n, status.PageIncidents)
	}
	_, body := get(t, srv.URL+feedPath)
	if feed := parseFeed(t, body); len(feed.Entries) == 0 || !strings.Contains(body, "late word") {
		t.Errorf("the feed lacks the update posted just now to the oldest incident")
	}
}
