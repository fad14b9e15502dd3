package daemon

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/mmcdole/gofeed"

	apiv1 "github.com/mcpmon/mcpmon/pkg/api/v1"
	"github.com/mcpmon/mcpmon/pkg/config"
	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/store"
	"github.com/mcpmon/mcpmon/pkg/testpeers"
)

// TestStatusPageObjectInRealChromium is the acceptance of a tenant's
// status page: tenant ta makes a page with two groups over its public
// endpoints through POST /v1/status-pages, one endpoint goes through an
// incident with three owner's updates, and a real headless Chromium
// (Debian's) sees the groups in order with their endpoints, the incident's
// timeline newest first, and the feed link; the feed parses with gofeed
// with an entry per event. Chromium then asks for the page's custom host
// (mapped to 127.0.0.1 by --host-resolver-rules, so the request really
// carries that Host) and gets the page at / and its JSON at /index.json.
// Tenant tb's key cannot read, change or delete the page (404), and none of
// tb's endpoints or ta's private one shows on it.
func TestStatusPageObjectInRealChromium(t *testing.T) {
	bin := testpeers.Chromium(t)
	if testing.Short() {
		t.Skip("drives an endpoint through an incident and a browser (~30s)")
	}
	const (
		pageSlug     = "acme"
		pageHost     = "status.acme.test"
		headerSecret = "sk-live-PAGEHEADERSECRET"
		errorSecret  = "password=PAGEERRORSECRET"
	)
	flaky := newSwitchServer(t, sdkHandler("fixture", "1.0.0"))
	steady := newSwitchServer(t, sdkHandler("fixture", "1.0.0"))
	// The custom host is served unproven here: its DNS proof has its own
	// test (TestStatusPageHostVerificationFlag).
	td := startTenants(t, func(o *config.Options) {
		o.Window, o.Grace = 2*time.Second, time.Second
		o.StatusPageHostVerification = false
	})
	ta, tb := td.ta, td.tb
	endpoint := func(c apiClient, name, url, slug, tier string, public bool) string {
		body := map[string]any{"name": name, "url": url, "schedule": "@every 1s", "timeout": "1s", "labels": map[string]string{"tier": tier}}
		if public {
			body["public"], body["slug"] = true, slug
		}
		if name == "Acme Search" {
			body["headers"] = map[string]string{"X-Api-Key": headerSecret}
		}
		return c.register(t, body)
	}
	search := endpoint(ta, "Acme Search", flaky.url, "acme-search", "core", true)
	endpoint(ta, "Acme Auth", steady.url, "acme-auth", "core", true)
	endpoint(ta, "Acme Docs", steady.url, "acme-docs", "extra", true)
	endpoint(ta, "Acme Billing Private", steady.url, "", "core", false)
	endpoint(tb, "Globex Tools", steady.url, "globex-tools", "core", true)

	code, raw := ta.send(t, http.MethodPost, "/v1/status-pages", map[string]any{
		"slug": pageSlug, "title": "Acme status", "description": "The public MCP servers of Acme.", "host": pageHost,
		"groups": []map[string]any{
			{"name": "Core APIs", "selector": map[string]string{"tier": "core"}},
			{"name": "Extras", "selector": map[string]string{"tier": "extra"}},
		},
	})
	if code != http.StatusCreated {
		t.Fatalf("POST /v1/status-pages: %d %s", code, raw)
	}
	var created struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(raw, &created); err != nil || created.ID == "" {
		t.Fatalf("created page %s: %v", raw, err)
	}

	// Another tenant's key: the page is 404 like a missing one, for
	// reading, changing and deleting, and absent from its list.
	for _, m := range []string{http.MethodGet, http.MethodPut, http.MethodDelete} {
		var body any
		if m == http.MethodPut {
			body = map[string]any{"slug": pageSlug, "title": "Taken over", "groups": []map[string]any{{"name": "All"}}}
		}
		if code, raw := tb.send(t, m, "/v1/status-pages/"+created.ID, body); code != http.StatusNotFound {
			t.Errorf("%s /v1/status-pages/{id} with the other tenant's key: %d %s, want 404", m, code, raw)
		}
	}
	if code, raw := tb.send(t, http.MethodGet, "/v1/status-pages", nil); code != http.StatusOK || strings.Contains(string(raw), created.ID) {
		t.Errorf("the other tenant's list: %d %s", code, raw)
	}
	if code, raw := ta.send(t, http.MethodGet, "/v1/status-pages/"+created.ID, nil); code != http.StatusOK || !strings.Contains(string(raw), `"Acme status"`) {
		t.Errorf("the owner reads its page: %d %s", code, raw)
	}

	// An incident on Acme Search with three updates, then resolved.
	eventually(t, 20*time.Second, "an up verdict", func() bool { return ta.latestState(t, search) == "up" })
	flaky.set(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "internal failure, "+errorSecret+" from 10.0.0.7", http.StatusInternalServerError)
	}))
	var incID string
	eventually(t, 30*time.Second, "an open incident", func() bool {
		var out struct{ Incidents []apiv1.IncidentView }
		if err := json.Unmarshal([]byte(ta.get(t, "/v1/incidents?state=open&endpoint="+search)), &out); err != nil {
			t.Fatal(err)
		}
		if len(out.Incidents) > 0 {
			incID = out.Incidents[0].ID
		}
		return incID != ""
	})
	for _, u := range []apiv1.UpdateInput{
		{Status: "investigating", Message: "Search is failing for some users."},
		{Status: "identified", Message: "A bad index <rebuild> & a full disk."},
		{Status: "monitoring", Message: "Disk freed; watching."},
	} {
		if code, raw := ta.send(t, http.MethodPost, "/v1/incidents/"+incID+"/updates", u); code != http.StatusCreated {
			t.Fatalf("post update %q: %d %s", u.Status, code, raw)
		}
	}
	flaky.set(sdkHandler("fixture", "1.0.0"))
	eventually(t, 30*time.Second, "the incident resolved", func() bool {
		var detail apiv1.IncidentDetail
		if err := json.Unmarshal([]byte(ta.get(t, "/v1/incidents/"+incID)), &detail); err != nil {
			t.Fatal(err)
		}
		return detail.State == "resolved"
	})

	// The page cache holds the slug index for its TTL: wait (bounded) for
	// the public page to show the resolved incident.
	addr := td.d.Addr()
	eventually(t, 45*time.Second, "the page showing the resolved incident", func() bool {
		code, body := pageGet(t, addr, "", "/status/"+pageSlug+".json")
		return code == http.StatusOK && strings.Contains(body, `"ongoing":false`) && strings.Contains(body, "Disk freed")
	})

	ctx := newChromium(t, bin, chromedp.Flag("host-resolver-rules", "MAP "+pageHost+" 127.0.0.1"))
	must := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("chromium: %s: %v", what, err)
		}
	}
	_, err := chromedp.Run(ctx, chromedp.Navigate("http://"+addr+"/status/"+pageSlug))
	must("navigate", err)
	_, err = chromedp.Run(ctx, chromedp.WaitVisible(chromedp.ID("state")))
	must("wait for the state", err)
	title, err := chromedp.Run(ctx, chromedp.Text(chromedp.ID("title")))
	must("title", err)
	groups, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll("section.group")].map(s =>
		s.querySelector("h2").textContent + ": " + [...s.querySelectorAll(".member-name")].map(a => a.textContent).join(", "))`))
	must("groups", err)
	updates, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll("#incidents .incident .timeline li")].map(li =>
		li.querySelector("strong").textContent + ": " + li.querySelector(".message").textContent)`))
	must("updates", err)
	updateTimes, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll("#incidents .incident .timeline time")].map(t => t.getAttribute("datetime"))`))
	must("update times", err)
	feedLink, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('link[rel="alternate"][type="application/atom+xml"]').getAttribute("href")`))
	must("feed link", err)
	feedVisible, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(() => { const a = document.getElementById("feed"); return a && a.offsetParent !== null ? a.getAttribute("href") : "" })()`))
	must("visible feed link", err)
	text, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("body")))
	must("page text", err)
	shot, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	must("screenshot", err)
	if err := os.WriteFile(filepath.Join(t.ArtifactDir(), "status-page-object.png"), shot, 0o644); err != nil {
		t.Fatal(err)
	}

	if title != "Acme status" {
		t.Errorf("title %q", title)
	}
	if want := []string{"Core APIs: Acme Auth, Acme Search", "Extras: Acme Docs"}; !slices.Equal(groups, want) {
		t.Errorf("groups %q, want %q", groups, want)
	}
	if want := []string{"Monitoring: Disk freed; watching.", "Identified: A bad index <rebuild> & a full disk.",
		"Investigating: Search is failing for some users."}; !slices.Equal(updates, want) {
		t.Errorf("timeline %q, want %q (newest first)", updates, want)
	}
	if len(updateTimes) != 3 || !slices.IsSortedFunc(updateTimes, func(a, b string) int { return strings.Compare(b, a) }) {
		t.Errorf("update times %q, want three, newest first", updateTimes)
	}
	if feedLink != "/status/"+pageSlug+"/feed.atom" || feedVisible != feedLink {
		t.Errorf("feed link %q, visible %q", feedLink, feedVisible)
	}
	for _, secret := range []string{headerSecret, "PAGEERRORSECRET", "10.0.0.7", "127.0.0.1", search, created.ID, "Globex", "Billing Private", "ta", "tb"} {
		if secret == "ta" || secret == "tb" {
			// Tenant names are short words: look for them as words.
			if slices.Contains(strings.Fields(text), secret) {
				t.Errorf("the page shows the tenant %q", secret)
			}
			continue
		}
		if strings.Contains(text, secret) {
			t.Errorf("the page shows %q", secret)
		}
	}

	// The feed the page links, parsed by a real feed parser: the incident's
	// opening, three updates and resolution, newest first.
	code, feedBody := pageGet(t, addr, "", feedLink)
	if code != http.StatusOK {
		t.Fatalf("GET %s: %d", feedLink, code)
	}
	feed, err := gofeed.NewParser().ParseString(feedBody)
	if err != nil {
		t.Fatalf("gofeed: %v\n%s", err, feedBody)
	}
	var events []string
	for _, it := range feed.Items {
		if strings.HasPrefix(it.Title, "Acme Search") {
			events = append(events, feedEvent(it.GUID))
		}
	}
	if want := []string{"/resolved", "/updated/3", "/updated/2", "/updated/1", "/opened"}; !slices.Equal(events, want) {
		t.Errorf("Acme Search's feed entries %q, want %q", events, want)
	}
	if feed.FeedType != "atom" || strings.Contains(feedBody, "Globex") {
		t.Errorf("feed type %q or the other tenant in it", feed.FeedType)
	}

	// The custom host, as Chromium asks for it.
	_, port, _ := net.SplitHostPort(addr)
	hostURL := "http://" + pageHost + ":" + port
	_, err = chromedp.Run(ctx, chromedp.Navigate(hostURL+"/"))
	must("navigate to the custom host", err)
	_, err = chromedp.Run(ctx, chromedp.WaitVisible(chromedp.ID("title")))
	must("wait for the custom host's page", err)
	hostTitle, err := chromedp.Run(ctx, chromedp.Text(chromedp.ID("title")))
	must("custom host title", err)
	where, err := chromedp.Run(ctx, chromedp.Evaluate[string](`location.host`))
	must("location", err)
	if hostTitle != "Acme status" || where != pageHost+":"+port {
		t.Errorf("custom host: title %q at %q", hostTitle, where)
	}
	_, err = chromedp.Run(ctx, chromedp.Navigate(hostURL+"/index.json"))
	must("navigate to the custom host's JSON", err)
	js, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("body")))
	must("custom host JSON", err)
	var view struct {
		Slug   string `json:"slug"`
		Groups []struct {
			Name string `json:"name"`
		} `json:"groups"`
	}
	if err := json.Unmarshal([]byte(js), &view); err != nil || view.Slug != pageSlug || len(view.Groups) != 2 {
		t.Errorf("custom host /index.json: %v %s", err, js)
	}
	// The same paths on another name are what they always were.
	if code, body := pageGet(t, addr, "", "/index.json"); code == http.StatusOK && strings.Contains(body, pageSlug) {
		t.Errorf("/index.json without the page's Host serves the page")
	}
	if code, body := pageGet(t, addr, pageHost, "/feed.atom"); code != http.StatusOK || !strings.Contains(body, "<feed") {
		t.Errorf("the custom host's /feed.atom: %d", code)
	}
}

// feedEvent is the event part of a feed entry ID, after
// "incident/<key>": "/opened", "/updated/2", "/resolved".
func feedEvent(guid string) string {
	_, rest, _ := strings.Cut(guid, "incident/")
	_, ev, _ := strings.Cut(rest, "/")
	return "/" + ev
}

// pageGet reads a public path with no key, with host as the Host header
// when set.
func pageGet(t *testing.T, addr, host, path string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, "http://"+addr+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if host != "" {
		req.Host = host
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// newChromium starts a headless Chromium (bin) with a fresh profile and
// any extra flags, for the test's lifetime; its actions share a 30 s
// budget.
func newChromium(t *testing.T, bin string, extra ...chromedp.ExecAllocatorOption) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:0:0],
		chromedp.ExecPath(bin),
		chromedp.Flag("headless", true),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true),
		chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("hide-scrollbars", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1100, 900),
	)
	opts = append(opts, extra...)
	actx, cancelA := chromedp.NewExecAllocator(t.Context(), opts...)
	t.Cleanup(cancelA)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(cancel)
	ctx, cancelT := context.WithTimeout(ctx, 30*time.Second)
	t.Cleanup(cancelT)
	return ctx
}

// TestStatusPageHostIsServedInFrontOfEveryRoute: with a status page whose
// host is status.acme.test in the store, a running mcpmon serves the page
// at / of that host (any case, with the port), its JSON and feed, while
// /healthz and the API on that host, and / on any other host, answer as
// they do without the page.
func TestStatusPageHostIsServedInFrontOfEveryRoute(t *testing.T) {
	d := startEmbedded(t, nil)
	addr := d.Addr()
	doc, err := json.Marshal(model.StatusPage{ID: "page-host-test", Slug: "acme-host", Title: "Acme hosted status",
		Host: "status.acme.test", Groups: []model.PageGroup{{Name: "All"}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Store().PutObject(t.Context(), store.KindStatusPage, "page-host-test", doc); err != nil {
		t.Fatal(err)
	}
	eventually(t, 45*time.Second, "the page on its host", func() bool {
		code, body := pageGet(t, addr, "Status.ACME.test:443", "/")
		return code == http.StatusOK && strings.Contains(body, "Acme hosted status")
	})
	for path, want := range map[string]string{"/index.json": `"slug":"acme-host"`, "/feed.atom": "<feed", "/status/acme-host": "Acme hosted status"} {
		if code, body := pageGet(t, addr, "status.acme.test", path); code != http.StatusOK || !strings.Contains(body, want) {
			t.Errorf("%s on the page's host: %d, lacks %q", path, code, want)
		}
	}
	if code, body := pageGet(t, addr, "status.acme.test", "/healthz"); code != http.StatusOK || strings.Contains(body, "Acme") {
		t.Errorf("/healthz on the page's host: %d %q", code, body)
	}
	if code, body := pageGet(t, addr, "status.acme.test", "/v1/endpoints"); strings.Contains(body, "Acme hosted status") {
		t.Errorf("/v1/endpoints on the page's host: %d serves the page", code)
	}
	codeOwn, rootOwn := pageGet(t, addr, "", "/")
	if strings.Contains(rootOwn, "Acme") {
		t.Errorf("/ on the listener's own address serves the page: %d", codeOwn)
	}
	if code, body := pageGet(t, addr, "other.acme.test", "/"); code != codeOwn || body != rootOwn {
		t.Errorf("/ on an unknown host: %d %q, want what the listener's address answers: %d %q", code, body, codeOwn, rootOwn)
	}
}
