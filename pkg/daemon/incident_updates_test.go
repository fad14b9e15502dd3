package daemon

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	apiv1 "github.com/mcpmon/mcpmon/pkg/api/v1"
)

// TestIncidentUpdatesEndToEnd runs mcpmon in-process against a server
// that answers 500, and once its incident is open posts three updates
// over the API: the API shows them newest first, and so do the endpoint's
// public page and its .json (read for the first time after the posts, so
// the page cache holds them).
func TestIncidentUpdatesEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for an incident to open (~5s)")
	}
	const slug = "updates-demo"
	srv := newSwitchServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "down for the test", http.StatusInternalServerError)
	}))
	d := startEmbedded(t, nil)
	api := apiClient{addr: d.Addr()}
	id := register(t, d.Addr(), map[string]any{
		"name": "Updates Demo", "url": srv.url, "schedule": "@every 1s", "timeout": "1s", "public": true, "slug": slug,
	})
	var incID string
	eventually(t, 30*time.Second, "an open incident", func() bool {
		var out struct{ Incidents []apiv1.IncidentView }
		if err := json.Unmarshal([]byte(api.get(t, "/v1/incidents?state=open&endpoint="+id)), &out); err != nil {
			t.Fatal(err)
		}
		if len(out.Incidents) > 0 {
			incID = out.Incidents[0].ID
		}
		return incID != ""
	})

	posts := []apiv1.UpdateInput{
		{Status: "investigating", Message: "Seeing errors from the search tool."},
		{Status: "identified", Message: "A bad deploy <v2>; rolling back."},
		{Status: "monitoring", Message: "Rolled back; watching."},
	}
	for _, in := range posts {
		b, _ := json.Marshal(in)
		resp := api.do(t, http.MethodPost, "/v1/incidents/"+incID+"/updates", strings.NewReader(string(b)))
		raw, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusCreated {
			t.Fatalf("post update %q: %d %s", in.Status, resp.StatusCode, raw)
		}
	}

	want := []string{"monitoring: Rolled back; watching.", "identified: A bad deploy <v2>; rolling back.", "investigating: Seeing errors from the search tool."}
	var detail apiv1.IncidentDetail
	if err := json.Unmarshal([]byte(api.get(t, "/v1/incidents/"+incID)), &detail); err != nil {
		t.Fatal(err)
	}
	if got := updateLines(detail.Updates); got != strings.Join(want, "\n") {
		t.Fatalf("GET /v1/incidents/%s updates:\n%s\nwant\n%s", incID, got, strings.Join(want, "\n"))
	}
	for i := 1; i < len(detail.Updates); i++ {
		if detail.Updates[i].At.After(detail.Updates[i-1].At) {
			t.Fatalf("updates out of time order: %+v", detail.Updates)
		}
	}

	var pub struct {
		Incidents []struct {
			Ongoing bool `json:"ongoing"`
			Updates []struct {
				At      time.Time `json:"at"`
				Status  string    `json:"status"`
				Message string    `json:"message"`
			} `json:"updates"`
		} `json:"incidents"`
	}
	if err := json.Unmarshal([]byte(publicGet(t, d.Addr(), "/status/"+slug+".json")), &pub); err != nil {
		t.Fatal(err)
	}
	if len(pub.Incidents) == 0 || !pub.Incidents[0].Ongoing {
		t.Fatalf("public JSON incidents %+v, want the ongoing incident first", pub.Incidents)
	}
	var lines []string
	for _, u := range pub.Incidents[0].Updates {
		lines = append(lines, u.Status+": "+u.Message)
	}
	if got := strings.Join(lines, "\n"); got != strings.Join(want, "\n") {
		t.Fatalf("public JSON updates:\n%s\nwant\n%s", got, strings.Join(want, "\n"))
	}

	page := publicGet(t, d.Addr(), "/status/"+slug)
	prev := -1
	for _, w := range []string{"<strong>Monitoring</strong>", "<strong>Identified</strong> <span class=\"message\">A bad deploy &lt;v2&gt;; rolling back.</span>",
		"<strong>Investigating</strong>"} {
		at := strings.Index(page, w)
		if at < 0 || at < prev {
			t.Fatalf("public page lacks %q after the previous update (at %d, previous %d):\n%s", w, at, prev, page)
		}
		prev = at
	}
	if first := detail.Updates[0].At.UTC().Format("2006-01-02 15:04 UTC"); !strings.Contains(page, first) {
		t.Errorf("public page does not show the newest update's time %s", first)
	}
}

func updateLines(us []apiv1.UpdateView) string {
	var lines []string
	for _, u := range us {
		lines = append(lines, u.Status+": "+u.Message)
	}
	return strings.Join(lines, "\n")
}

// publicGet reads a public page (no key, outside /v1's contract).
func publicGet(t *testing.T, addr, path string) string {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, "http://"+addr+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %s", path, resp.StatusCode, b)
	}
	return string(b)
}
