package daemon

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/mcpmon/mcpmon/pkg/config"
	"github.com/mcpmon/mcpmon/pkg/testpeers"
)

// TestStatusPageInRealChromium is the public status page's acceptance: a
// real headless Chromium (Debian's) loads /status/{slug} from a running
// mcpmon whose endpoint went up, down through an incident and back up,
// and sees what a person sees: the state sentence, 90 daily bars, the
// incident with its duration, and the badge image loaded. The screenshot
// goes to the test's artifact dir (go test -artifacts), or to
// $MCPMON_STATUS_SCREENSHOT (how docs/status-page.png is refreshed).
func TestStatusPageInRealChromium(t *testing.T) {
	bin := testpeers.Chromium(t)
	if testing.Short() {
		t.Skip("drives an endpoint through an incident and a browser (~20s)")
	}
	const (
		slug         = "acme-tools"
		headerSecret = "sk-live-HEADERSECRET"
		queryToken   = "QUERYTOKEN123"
		errorSecret  = "password=ERRORSECRET"
	)
	srv := newSwitchServer(t, sdkHandler("fixture", "1.0.0"))
	// Two-second windows and a second of grace: under a loaded `make test`
	// a one-second window can close before its probe reports (no_data),
	// and the page would honestly say so.
	d := startEmbedded(t, func(o *config.Options) { o.Window, o.Grace = 2*time.Second, time.Second })
	id := register(t, d.Addr(), map[string]any{
		"name": "Acme Tools MCP", "url": srv.url + "?token=" + queryToken, "schedule": "@every 1s", "timeout": "1s",
		"headers": map[string]string{"X-Api-Key": headerSecret}, "public": true, "slug": slug,
	})
	eventually(t, 20*time.Second, "an up verdict", func() bool { return latestState(t, d.Addr(), id) == "up" })

	srv.set(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "internal failure, "+errorSecret+" from 10.0.0.7", http.StatusInternalServerError)
	}))
	eventually(t, 30*time.Second, "an open incident", func() bool { return incidentState(t, d.Addr(), id) == "open" })
	srv.set(sdkHandler("fixture", "1.0.0"))
	eventually(t, 30*time.Second, "the incident resolved", func() bool { return incidentState(t, d.Addr(), id) == "resolved" })
	eventually(t, 20*time.Second, "an up verdict after the incident", func() bool { return latestState(t, d.Addr(), id) == "up" })

	ctx := newChromium(t, bin)

	// must runs one browser action and fails the test on its error.
	must := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("chromium: %s: %v", what, err)
		}
	}
	_, err := chromedp.Run(ctx, chromedp.Navigate("http://"+d.Addr()+"/status/"+slug))
	must("navigate", err)
	_, err = chromedp.Run(ctx, chromedp.WaitVisible(chromedp.ID("state")))
	must("wait for the state", err)
	sentence, err := chromedp.Run(ctx, chromedp.Text(chromedp.ID("state")))
	must("state sentence", err)
	bars, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("ol.bars > li").length`))
	must("bars", err)
	duration, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("#incidents tr.incident td.duration")))
	must("incident duration", err)
	incidentRow, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("#incidents tr.incident")))
	must("incident row", err)
	badgeWidth, err := chromedp.Run(ctx, chromedp.Poll[float64](
		`(() => { const b = document.getElementById("badge"); return b.complete && b.naturalWidth > 0 ? b.naturalWidth : 0 })()`,
		chromedp.WithPollingTimeout(10*time.Second)))
	must("badge loaded", err)
	text, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("body")))
	must("page text", err)
	shot, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	must("screenshot", err)
	writeScreenshot(t, shot)

	if sentence != "Acme Tools MCP is operational." {
		t.Errorf("state sentence %q", sentence)
	}
	if bars != 90 {
		t.Errorf("%d daily bars, want 90", bars)
	}
	if !regexp.MustCompile(`^\d+ (s|min)$`).MatchString(strings.TrimSpace(duration)) || !strings.Contains(incidentRow, "resolved") {
		t.Errorf("incident row %q, duration %q", incidentRow, duration)
	}
	if badgeWidth <= 0 {
		t.Error("the badge image did not load")
	}
	for _, secret := range []string{headerSecret, queryToken, "ERRORSECRET", "10.0.0.7", id, "127.0.0.1"} {
		if strings.Contains(text, secret) {
			t.Errorf("the page shows %q", secret)
		}
	}
}

func incidentState(t *testing.T, addr, id string) string {
	t.Helper()
	var out struct {
		Incidents []struct {
			EndpointID string `json:"endpointId"`
			State      string `json:"state"`
		} `json:"incidents"`
	}
	if err := json.Unmarshal([]byte(get(t, addr, "/v1/incidents")), &out); err != nil {
		t.Fatal(err)
	}
	for _, inc := range out.Incidents {
		if inc.EndpointID == id {
			return inc.State
		}
	}
	return ""
}

func writeScreenshot(t *testing.T, png []byte) {
	t.Helper()
	dir := t.ArtifactDir()
	path := filepath.Join(dir, "status-page.png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s (%d bytes)", path, len(png))
	if out := os.Getenv("MCPMON_STATUS_SCREENSHOT"); out != "" {
		if err := os.WriteFile(out, png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
