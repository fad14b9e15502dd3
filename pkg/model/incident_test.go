package model

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestIncidentUpdateProblems(t *testing.T) {
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name string
		u    IncidentUpdate
		want []FieldError
	}{
		{"investigating", IncidentUpdate{At: at, Status: UpdateInvestigating, Message: "looking"}, nil},
		{"identified", IncidentUpdate{Status: UpdateIdentified, Message: "bad deploy"}, nil},
		{"monitoring", IncidentUpdate{Status: UpdateMonitoring, Message: "rolled back"}, nil},
		{"resolved", IncidentUpdate{Status: UpdateResolved, Message: "fixed"}, nil},
		{"message at the cap", IncidentUpdate{Status: UpdateResolved, Message: strings.Repeat("é", MaxUpdateMessage/2)}, nil},
		{"unknown status", IncidentUpdate{Status: "fixed", Message: "m"},
			[]FieldError{{"status", "must be one of investigating, identified, monitoring, resolved"}}},
		{"status case matters", IncidentUpdate{Status: "Resolved", Message: "m"},
			[]FieldError{{"status", "must be one of investigating, identified, monitoring, resolved"}}},
		{"no message", IncidentUpdate{Status: UpdateMonitoring}, []FieldError{{"message", "is required"}}},
		{"message one byte over", IncidentUpdate{Status: UpdateMonitoring, Message: strings.Repeat("a", MaxUpdateMessage+1)},
			[]FieldError{{"message", "must be at most 2000 bytes"}}},
		{"both, in field order", IncidentUpdate{}, []FieldError{
			{"status", "must be one of investigating, identified, monitoring, resolved"}, {"message", "is required"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.u.Problems(); !slices.Equal(got, tc.want) {
				t.Fatalf("Problems = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestAddUpdateCapsAndNeverSharesTheArray(t *testing.T) {
	inc := Incident{ID: "inc"}
	var err error
	for i := range MaxIncidentUpdates {
		if inc, err = inc.AddUpdate(IncidentUpdate{Status: UpdateInvestigating, Message: string(rune('a' + i%26))}); err != nil {
			t.Fatalf("update %d: %v", i+1, err)
		}
	}
	if _, err := inc.AddUpdate(IncidentUpdate{Status: UpdateResolved, Message: "one more"}); !errors.Is(err, ErrTooManyUpdates) ||
		!strings.Contains(err.Error(), "100") {
		t.Fatalf("update past the cap: %v, want ErrTooManyUpdates naming 100", err)
	}
	if _, err := (Incident{}).AddUpdate(IncidentUpdate{Status: "nope", Message: "m"}); !errors.Is(err, ErrInvalidUpdate) {
		t.Fatalf("invalid update: %v, want ErrInvalidUpdate", err)
	}

	// Two updates appended to one read copy (a retry on fresh state, or
	// two callers) must not see each other's.
	base := Incident{Updates: make([]IncidentUpdate, 1, 8)}
	a, _ := base.AddUpdate(IncidentUpdate{Status: UpdateIdentified, Message: "a"})
	b, _ := base.AddUpdate(IncidentUpdate{Status: UpdateIdentified, Message: "b"})
	if a.Updates[1].Message != "a" || b.Updates[1].Message != "b" || len(base.Updates) != 1 {
		t.Fatalf("appends share an array: a %v, b %v", a.Updates, b.Updates)
	}
}

func TestUpdatesNewestFirstIsPostingOrder(t *testing.T) {
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	inc := Incident{Updates: []IncidentUpdate{
		{At: at, Status: UpdateInvestigating, Message: "1"},
		{At: at.Add(-time.Second), Status: UpdateIdentified, Message: "2"}, // a replica whose clock is behind
		{At: at.Add(time.Minute), Status: UpdateMonitoring, Message: "3"},
	}}
	var got []string
	for _, u := range inc.UpdatesNewestFirst() {
		got = append(got, u.Message)
	}
	if !slices.Equal(got, []string{"3", "2", "1"}) || inc.Updates[0].Message != "1" {
		t.Fatalf("newest first = %v (stored %v)", got, inc.Updates)
	}
}

// TestIncidentRecordsWithoutUpdatesReadAndWriteAsBefore: a record written
// before updates existed reads with none, and one without updates writes
// no updates member.
func TestIncidentRecordsWithoutUpdatesReadAndWriteAsBefore(t *testing.T) {
	var inc Incident
	if err := json.Unmarshal([]byte(`{"id":"i","endpointId":"e","state":"open","openedWindow":"2026-03-01T12:00:00Z","openedAt":"2026-03-01T12:00:00Z","firstFailure":"2026-03-01T12:00:00Z","transitions":[],"version":3}`), &inc); err != nil {
		t.Fatal(err)
	}
	if inc.Updates != nil || inc.Version != 3 {
		t.Fatalf("old record read as %+v", inc)
	}
	b, _ := json.Marshal(inc)
	if strings.Contains(string(b), "updates") {
		t.Fatalf("an incident without updates writes %s", b)
	}
}
