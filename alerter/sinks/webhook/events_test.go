package webhook

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/mcpmon/mcpmon/pkg/alert"
	"github.com/mcpmon/mcpmon/pkg/clock"
)

func changeEvent() alert.EventNotification {
	return alert.EventNotification{
		Key: "event-ep1-catalog_breaking-3f2a:hook", Kind: "catalog_breaking", EndpointID: "ep1", EndpointName: "docs",
		EndpointURL: "https://mcp.example.com/mcp", EventID: "98", Fingerprint: "3f2a",
		ObservedAt: time.Date(2026, 3, 1, 12, 0, 10, 0, time.UTC), Severity: "breaking",
		Message: "tool catalog changed (breaking): removed fetch", Before: "sha256:a", After: "sha256:b",
		Diff: json.RawMessage(`{"severity":"breaking","removed":["fetch"]}`),
	}
}

// TestEventDeliverySignedWithKindAndDiff: a change event is POSTed as an
// EventPayload with the event kind in X-Mcpmon-Event, the ledger key as
// Idempotency-Key, the diff as sent, and a signature the receiver verifies.
func TestEventDeliverySignedWithKindAndDiff(t *testing.T) {
	rcv := newReceiver(t)
	now := time.Date(2026, 3, 1, 12, 0, 20, 0, time.UTC)
	s, err := New(Options{Name: "hook", URL: rcv.URL, Secret: "s3cret", Clock: clock.NewFake(now)})
	if err != nil {
		t.Fatal(err)
	}
	n := changeEvent()
	if err := s.NotifyEvent(t.Context(), n); err != nil {
		t.Fatal(err)
	}
	g := rcv.Next(time.Second)
	if g.Header.Get(HeaderEvent) != "catalog_breaking" || g.Header.Get(HeaderIdempotency) != n.Key {
		t.Fatalf("headers %v", g.Header)
	}
	if err := Verify("s3cret", g.Header.Get(HeaderTimestamp), g.Body, g.Header.Get(HeaderSignature), now, time.Minute); err != nil {
		t.Fatalf("signature: %v", err)
	}
	var p EventPayload
	if err := json.Unmarshal(g.Body, &p); err != nil {
		t.Fatal(err)
	}
	if p.Type != "event" || p.Version != EventPayloadVersion || p.Kind != n.Kind || p.Fingerprint != "3f2a" || p.Endpoint.ID != "ep1" ||
		string(p.Diff) != string(n.Diff) || p.Before != "sha256:a" || p.After != "sha256:b" || !p.ObservedAt.Equal(n.ObservedAt) {
		t.Fatalf("payload %s", g.Body)
	}
	// A redelivery carries the same body.
	if err := s.NotifyEvent(t.Context(), n); err != nil {
		t.Fatal(err)
	}
	if again := rcv.Next(time.Second); string(again.Body) != string(g.Body) {
		t.Fatalf("redelivery body differs:\n%s\n%s", again.Body, g.Body)
	}
}
