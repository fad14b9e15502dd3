package webhook

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/mcpmon/mcpmon/pkg/alert"
	"github.com/mcpmon/mcpmon/pkg/clock"
)

func groupNotification() alert.GroupNotification {
	return alert.GroupNotification{
		Key: "group-default-3f2a-1772366400:open:hook", Kind: alert.KindOpen, Tenant: "default", GroupID: "group-default-3f2a-1772366400",
		By: map[string]string{"class": "refused", "host": "gw.example.com"}, StartedAt: opened,
		Members: []alert.GroupMember{
			{EndpointID: "ep1", EndpointName: "docs", EndpointURL: "https://gw.example.com/docs", IncidentID: "ep1-i", Class: "refused", Reason: "connection refused", OpenedAt: opened},
			{EndpointID: "ep2", EndpointName: "search", EndpointURL: "https://gw.example.com/search", IncidentID: "ep2-i", Class: "refused", OpenedAt: opened},
		},
	}
}

// TestGroupDeliverySignedWithEveryMember: a grouped notification is POSTed
// as a GroupPayload listing every member, with the group's ledger key as
// Idempotency-Key, group-open in X-Mcpmon-Event, and a signature the
// receiver verifies; a redelivery carries the same body.
func TestGroupDeliverySignedWithEveryMember(t *testing.T) {
	rcv := newReceiver(t)
	s, err := New(Options{Name: "hook", URL: rcv.URL, Secret: hmacSecret, Clock: clock.NewFake(t0)})
	if err != nil {
		t.Fatal(err)
	}
	n := groupNotification()
	if err := s.NotifyGroup(t.Context(), n); err != nil {
		t.Fatal(err)
	}
	g := rcv.Next(time.Second)
	if g.Header.Get(HeaderEvent) != "group-open" || g.Header.Get(HeaderIdempotency) != n.Key {
		t.Fatalf("headers %v", g.Header)
	}
	if err := Verify(hmacSecret, g.Header.Get(HeaderTimestamp), g.Body, g.Header.Get(HeaderSignature), t0, DefaultTolerance); err != nil {
		t.Fatalf("signature: %v", err)
	}
	var p GroupPayload
	if err := json.Unmarshal(g.Body, &p); err != nil {
		t.Fatal(err)
	}
	if p.Type != "group" || p.Version != GroupPayloadVersion || p.Count != 2 || len(p.Members) != 2 || p.Members[1].Endpoint.ID != "ep2" ||
		p.By["host"] != "gw.example.com" || p.GroupID != n.GroupID || !p.StartedAt.Equal(opened) {
		t.Fatalf("payload %s", g.Body)
	}
	if err := s.NotifyGroup(t.Context(), n); err != nil {
		t.Fatal(err)
	}
	if again := rcv.Next(time.Second); string(again.Body) != string(g.Body) {
		t.Fatalf("redelivery body differs:\n%s\n%s", again.Body, g.Body)
	}
}
