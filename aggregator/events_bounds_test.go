package aggregator

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/mcpmon/mcpmon/pkg/msg"
)

// TestCatalogEventsAreBounded: however many tools a drift names, the
// events it becomes keep a diff of at most maxEventDiffBytes and a message
// naming at most maxEventNames tools, the rest counted; a small diff is
// kept exactly as the prober wrote it.
func TestCatalogEventsAreBounded(t *testing.T) {
	diff := func(n int) map[string]any {
		var added, removed []string
		var changed []map[string]any
		for i := range n {
			added = append(added, fmt.Sprintf("added-%05d-%s", i, strings.Repeat("a", 100)))
			removed = append(removed, fmt.Sprintf("removed-%05d", i))
			changed = append(changed, map[string]any{"name": fmt.Sprintf("changed-%05d", i), "descriptionChanged": true, "info": []string{"input schema changed"}})
		}
		return map[string]any{"severity": "breaking", "added": added, "removed": removed, "changed": changed, "oldFingerprint": "sha256:a", "newFingerprint": "sha256:b"}
	}
	for _, tc := range []struct {
		name      string
		tools     int
		wantExact bool
	}{
		{"small diff kept as written", 3, true},
		{"thousands of tools", 3000, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := diff(tc.tools)
			r := msg.ProbeResult{EndpointID: "ep1", ProbeRunID: "r1", Events: []msg.Event{{Kind: msg.EventCatalogChanged, Severity: "breaking", Message: "changed", Details: d}}}
			evs := ChangeEvents(r, 0)
			if len(evs) != 2 {
				t.Fatalf("events %d, want breaking and security", len(evs))
			}
			written, _ := json.Marshal(d)
			for _, e := range evs {
				if len(e.Diff) > maxEventDiffBytes {
					t.Errorf("%s diff is %d bytes, cap %d", e.Kind, len(e.Diff), maxEventDiffBytes)
				}
				if tc.wantExact != (string(e.Diff) == string(written)) {
					t.Errorf("%s diff kept as written = %v, want %v", e.Kind, !tc.wantExact, tc.wantExact)
				}
				var got catalogDiff
				if err := json.Unmarshal(e.Diff, &got); err != nil {
					t.Fatalf("%s diff unreadable: %v", e.Kind, err)
				}
				if listed := len(got.Added) + len(got.Removed) + len(got.Changed); listed+got.More != 3*tc.tools || got.NewFingerprint != "sha256:b" {
					t.Errorf("%s diff lists %d and counts %d more, want %d in all, fingerprints kept", e.Kind, listed, got.More, 3*tc.tools)
				}
				if e.Kind == "catalog_security" {
					names := strings.Count(e.Message, "changed-")
					if names > maxEventNames || tc.tools > maxEventNames && !strings.Contains(e.Message, fmt.Sprintf("… and %d more", tc.tools-maxEventNames)) {
						t.Errorf("security message names %d tools: %.200s", names, e.Message)
					}
				}
			}
		})
	}
}

// TestEventDetailsAndVersionsAreBounded: an event's details are kept up to
// maxEventDetailsBytes and dropped past it (its fingerprint still the
// change's), and the versions read from them are display lines: a result
// posted by an agent carries whatever the agent was given.
func TestEventDetailsAndVersionsAreBounded(t *testing.T) {
	hostile := "1.0\x1b[2J\u202e" + strings.Repeat("v", 1000)
	big := map[string]string{"fromName": "s", "fromVersion": "1", "toName": "s", "toVersion": hostile, "pad": strings.Repeat("x", maxEventDetailsBytes)}
	small := map[string]string{"fromName": "s", "fromVersion": "1", "toName": "s", "toVersion": "2"}
	for _, tc := range []struct {
		name        string
		ev          msg.Event
		wantDetails bool
	}{
		{"a server change with small details", msg.Event{Kind: msg.EventServerChanged, Message: "m", Details: small}, true},
		{"a server change with huge details", msg.Event{Kind: msg.EventServerChanged, Message: "m", Details: big}, false},
		{"a credential expiry with huge details", msg.Event{Kind: "credential_expiry", Message: "m", Details: big}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			evs := ChangeEvents(msg.ProbeResult{EndpointID: "ep1", ProbeRunID: "r1", Events: []msg.Event{tc.ev}}, 0)
			if len(evs) != 1 {
				t.Fatalf("events %d, want 1", len(evs))
			}
			e := evs[0]
			if got := len(e.Details) > 0; got != tc.wantDetails || len(e.Details) > maxEventDetailsBytes {
				t.Errorf("details %d bytes, want kept=%v and at most %d", len(e.Details), tc.wantDetails, maxEventDetailsBytes)
			}
			if e.Fingerprint == "" {
				t.Error("no fingerprint")
			}
			for _, v := range []string{e.Before, e.After} {
				if len(v) > maxEventVersionLen+len("…") || strings.ContainsAny(v, "\x1b\u202e") {
					t.Errorf("version %q is not a bounded display line", v)
				}
			}
		})
	}
}
