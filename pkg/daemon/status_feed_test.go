package daemon

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mmcdole/gofeed"

	"github.com/mcpmon/mcpmon/pkg/config"
	publicstatus "github.com/mcpmon/mcpmon/pkg/status"
)

// TestStatusFeedOfARunningServer: a running mcpmon whose public endpoint
// went down through an incident and back up serves that endpoint's Atom
// feed with the incident's opening and resolution, newest first, with the
// same entry IDs on every fetch; a private endpoint's feed is the 404 of
// an unknown slug; and /status, the deployment-wide list, is 404 unless
// the operator passes --public-index.
func TestStatusFeedOfARunningServer(t *testing.T) {
	if testing.Short() {
		t.Skip("drives an endpoint through an incident (~20s)")
	}
	t.Parallel() // waits on verdict windows: overlapped with the other long end-to-end tests
	const errorSecret = "password=FEEDSECRET"
	srv := newSwitchServer(t, sdkHandler("fixture", "1.0.0"))
	// Two-second windows and a second of grace, as the browser test: a
	// loaded machine can miss a one-second window.
	d := startEmbedded(t, func(o *config.Options) { o.Window, o.Grace = 2*time.Second, time.Second })
	id := register(t, d.Addr(), map[string]any{
		"name": "Feed MCP", "url": srv.url, "schedule": "@every 1s", "timeout": "1s", "public": true, "slug": "feed-mcp",
	})
	register(t, d.Addr(), map[string]any{
		"name": "Private MCP", "url": srv.url, "schedule": "@every 1s", "timeout": "1s", "slug": "private-mcp",
	})
	eventually(t, 20*time.Second, "an up verdict", func() bool { return latestState(t, d.Addr(), id) == "up" })
	srv.set(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "internal failure, "+errorSecret, http.StatusInternalServerError)
	}))
	eventually(t, 30*time.Second, "an open incident", func() bool { return incidentState(t, d.Addr(), id) == "open" })
	srv.set(sdkHandler("fixture", "1.0.0"))
	eventually(t, 30*time.Second, "the incident resolved", func() bool { return incidentState(t, d.Addr(), id) == "resolved" })

	base := "http://" + d.Addr()
	code, hdr, body := fetch(t, base+"/status/feed-mcp/feed.atom")
	if code != http.StatusOK || hdr.Get("Content-Type") != publicstatus.FeedContentType || hdr.Get("Cache-Control") != publicstatus.CacheControl {
		t.Fatalf("feed: %d %v\n%s", code, hdr, body)
	}
	feed, err := gofeed.NewParser().ParseString(body)
	if err != nil {
		t.Fatalf("gofeed: %v\n%s", err, body)
	}
	if feed.FeedType != "atom" || feed.FeedLink != "/status/feed-mcp/feed.atom" || len(feed.Items) != 2 {
		t.Fatalf("feed type %q, self %q, %d entries, want atom, its own path, 2:\n%s", feed.FeedType, feed.FeedLink, len(feed.Items), body)
	}
	resolved, opened := feed.Items[0], feed.Items[1]
	if !strings.HasSuffix(resolved.GUID, "/resolved") || !strings.HasSuffix(opened.GUID, "/opened") ||
		strings.TrimSuffix(resolved.GUID, "/resolved") != strings.TrimSuffix(opened.GUID, "/opened") {
		t.Errorf("entries %q, %q: want one incident's resolution, then its opening", resolved.GUID, opened.GUID)
	}
	if !resolved.UpdatedParsed.After(*opened.UpdatedParsed) || !strings.Contains(opened.Title, "server error") {
		t.Errorf("opened %q at %v, resolved %q at %v", opened.Title, opened.UpdatedParsed, resolved.Title, resolved.UpdatedParsed)
	}
	for _, secret := range []string{"FEEDSECRET", id, "127.0.0.1", srv.url, "default"} {
		if strings.Contains(body, secret) {
			t.Errorf("the feed shows %q", secret)
		}
	}
	if _, _, again := fetch(t, base+"/status/feed-mcp/feed.atom"); again != body {
		t.Errorf("a second fetch differs:\n%s\n---\n%s", body, again)
	}
	if _, _, page := fetch(t, base+"/status/feed-mcp"); !strings.Contains(page, `rel="alternate" type="application/atom+xml"`) {
		t.Error("the page does not link its feed")
	}

	_, _, unknown := fetch(t, base+"/status/no-such-slug/feed.atom")
	for _, path := range []string{"/status/private-mcp/feed.atom", "/status/private-mcp", "/status"} {
		if code, _, body := fetch(t, base+path); code != http.StatusNotFound || body != unknown {
			t.Errorf("%s: %d %q, want the 404 of an unknown slug", path, code, body)
		}
	}

	indexed := startEmbedded(t, func(o *config.Options) { o.PublicIndex = true })
	register(t, indexed.Addr(), map[string]any{
		"name": "Listed MCP", "url": srv.url, "schedule": "@every 1h", "public": true, "slug": "listed-mcp",
	})
	if code, _, body := fetch(t, "http://"+indexed.Addr()+"/status"); code != http.StatusOK || !strings.Contains(body, "Listed MCP") {
		t.Errorf("/status with --public-index: %d\n%s", code, body)
	}
}

func fetch(t *testing.T, url string) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, string(b)
}
