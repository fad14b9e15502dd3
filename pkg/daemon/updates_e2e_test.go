package daemon

import (
	"bytes"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/mcpmon/mcpmon/pkg/model"
)

// TestIncidentUpdateWithNotifyReachesTheWebhookOnce: through the real
// API, alerter, store and webhook sink, an update posted with notify
// reaches the receiver once, as an update notification carrying its status
// and message; one posted without notify does not reach it at all.
func TestIncidentUpdateWithNotifyReachesTheWebhookOnce(t *testing.T) {
	t.Parallel()
	rcv, hook := newReceiver(t)
	o := fastOptions(t)
	o.WebhookURL = model.SecretURL(hook)
	var banner bytes.Buffer
	d, err := Start(t.Context(), RoleAll, o, Deps{Logger: testLogger(t), Stdout: &banner})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		d.Stop()
		if err := d.Wait(); err != nil {
			t.Errorf("mcpmon stopped with: %v", err)
		}
	})
	c := apiClient{addr: d.Addr(), key: bootstrapKey(t, banner.String())}

	// An endpoint nothing listens on: down from its first window.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + ln.Addr().String() + "/mcp"
	ln.Close()
	id := c.register(t, map[string]any{"name": "gone", "url": dead, "schedule": "@every 1s", "timeout": "1s"})
	open := rcv.wait(t, 30*time.Second)
	incidentID, _ := open["incidentId"].(string)
	if open["kind"] != "open" || incidentID == "" {
		t.Fatalf("first alert %v, want the open of %s", open, id)
	}

	post := func(body map[string]any) {
		t.Helper()
		if code, _, raw := c.call(t, http.MethodPost, "/v1/incidents/"+incidentID+"/updates", body); code != http.StatusCreated {
			t.Fatalf("post update: %d %s", code, raw)
		}
	}
	post(map[string]any{"status": "identified", "message": "A bad deploy; rolling back.", "notify": true})
	got := rcv.wait(t, 30*time.Second)
	u, _ := got["update"].(map[string]any)
	if got["kind"] != "update" || got["incidentId"] != incidentID || u["status"] != "identified" || u["message"] != "A bad deploy; rolling back." {
		t.Fatalf("second alert %v, want the update", got)
	}
	post(map[string]any{"status": "monitoring", "message": "Kept to the page."})
	post(map[string]any{"status": "monitoring", "message": "Rolled back; watching.", "notify": true})
	got = rcv.wait(t, 30*time.Second)
	if u, _ := got["update"].(map[string]any); got["kind"] != "update" || u["message"] != "Rolled back; watching." || got["sequence"] != 3.0 {
		t.Fatalf("third alert %v, want the third update (the second had no notify)", got)
	}
	if all := rcv.all(); len(all) != 3 {
		t.Fatalf("received %d alerts, want open, update 1, update 3: %v", len(all), all)
	}
}
