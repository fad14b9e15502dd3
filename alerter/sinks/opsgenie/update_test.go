package opsgenie

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mcpmon/mcpmon/pkg/alert"
	"github.com/mcpmon/mcpmon/pkg/testpeers"
)

// TestUpdateIsANoteOnTheAlert: an owner's update is added as a note to the
// incident's alert, found by its alias.
func TestUpdateIsANoteOnTheAlert(t *testing.T) {
	rcv := testpeers.NewReceiver(t, nil)
	rcv.Answer(http.StatusAccepted, nil, `{"result":"Request will be processed","requestId":"r1"}`)
	s, err := New(Options{Name: "og", APIKey: "K3Y", URL: rcv.URL})
	if err != nil {
		t.Fatal(err)
	}
	n := alert.Notification{Key: "alert-ep1-i1:update-1:og", Kind: alert.KindUpdate, EndpointID: "ep1", IncidentID: "i1", Sequence: 1,
		Update: &alert.Update{Seq: 1, At: time.Date(2026, 3, 1, 12, 5, 0, 0, time.UTC), Status: "monitoring", Message: "Rolled back."}}
	if err := s.Notify(t.Context(), n); err != nil {
		t.Fatal(err)
	}
	got := rcv.Requests()[0]
	if got.Path != "/v2/alerts/"+Alias("i1")+"/notes" || got.RawQuery != "identifierType=alias" {
		t.Fatalf("posted to %s?%s, want the alert's notes by alias", got.Path, got.RawQuery)
	}
	var note AddNote
	if err := json.Unmarshal(got.Body, &note); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(note.Note, "monitoring") || !strings.Contains(note.Note, "Rolled back.") || note.Source != Source {
		t.Fatalf("note %+v", note)
	}
}
