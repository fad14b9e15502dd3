package webhook

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/mcpmon/mcpmon/pkg/alert"
	"github.com/mcpmon/mcpmon/pkg/testpeers"
)

// TestUpdateAndDigestPayloads: an update carries the owner's status and
// message in the incident payload; a digest is its own payload, told
// apart by type and the event header, with the ledger key as the
// Idempotency-Key.
func TestUpdateAndDigestPayloads(t *testing.T) {
	rcv := testpeers.NewReceiver(t, nil)
	s, err := New(Options{Name: "hook", URL: rcv.URL, Secret: "s3cret"})
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 3, 1, 12, 5, 0, 0, time.FixedZone("CET", 3600))
	if err := s.Notify(t.Context(), alert.Notification{Key: "alert-ep1-i1:update-2:hook", Kind: alert.KindUpdate, IncidentID: "i1", EndpointID: "ep1",
		Sequence: 2, Update: &alert.Update{Seq: 2, At: at, Status: "identified", Message: "Found it."}}); err != nil {
		t.Fatal(err)
	}
	start := time.Date(2026, 6, 10, 7, 0, 0, 0, time.UTC)
	dn := alert.DigestNotification{Key: alert.DigestKey("hook", "acme", start), Scope: "acme", Every: alert.DigestDaily, PeriodStart: start,
		PeriodEnd: start.Add(24 * time.Hour), Total: 101, Events: []alert.DigestEvent{{EventID: "e1", EndpointID: "ep1", Kind: "catalog_info", Message: "added search", ObservedAt: start.Add(time.Hour)}}}
	if err := s.NotifyDigest(t.Context(), dn); err != nil {
		t.Fatal(err)
	}
	reqs := rcv.Requests()
	var p Payload
	if err := json.Unmarshal(reqs[0].Body, &p); err != nil {
		t.Fatal(err)
	}
	if p.Kind != alert.KindUpdate || p.Sequence != 2 || p.Update == nil || p.Update.Message != "Found it." || p.Update.Status != "identified" ||
		!p.Update.At.Equal(at) || p.Update.At.Location() != time.UTC || reqs[0].Header.Get(HeaderEvent) != "update" {
		t.Fatalf("update payload %s", reqs[0].Body)
	}
	var d DigestPayload
	if err := json.Unmarshal(reqs[1].Body, &d); err != nil {
		t.Fatal(err)
	}
	if d.Type != "digest" || d.Total != 101 || len(d.Events) != 1 || d.Key != "digest-hook-acme-2026-06-10T07:00:00Z" ||
		reqs[1].Header.Get(HeaderEvent) != "digest" || reqs[1].Header.Get(HeaderIdempotency) != d.Key || reqs[1].Header.Get(HeaderSignature) == "" {
		t.Fatalf("digest payload %s, headers %v", reqs[1].Body, reqs[1].Header)
	}
	if rcv.Requests()[1].Status != http.StatusNoContent && rcv.Requests()[1].Status != http.StatusOK {
		t.Fatalf("receiver answered %d", rcv.Requests()[1].Status)
	}
}
