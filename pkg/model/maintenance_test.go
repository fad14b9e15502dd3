package model

import (
	"encoding/json"
	"errors"
	"slices"
	"testing"
	"time"
)

func ts(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

func TestMaintenanceValidate(t *testing.T) {
	tests := []struct {
		name string
		m    Maintenance
		ok   bool
	}{
		{"one-off", Maintenance{EndpointIDs: []string{"a"}, Start: ts("2026-01-01T10:00:00Z"), End: ts("2026-01-01T11:00:00Z")}, true},
		{"recurring", Maintenance{Selector: map[string]string{"team": "x"}, Cron: "0 2 * * *", Duration: time.Hour}, true},
		{"no target", Maintenance{Start: ts("2026-01-01T10:00:00Z"), End: ts("2026-01-01T11:00:00Z")}, false},
		{"no window", Maintenance{EndpointIDs: []string{"a"}}, false},
		{"end before start", Maintenance{EndpointIDs: []string{"a"}, Start: ts("2026-01-01T11:00:00Z"), End: ts("2026-01-01T10:00:00Z")}, false},
		{"start only", Maintenance{EndpointIDs: []string{"a"}, Start: ts("2026-01-01T11:00:00Z")}, false},
		{"both kinds", Maintenance{EndpointIDs: []string{"a"}, Start: ts("2026-01-01T10:00:00Z"), End: ts("2026-01-01T11:00:00Z"), Cron: "@daily", Duration: time.Hour}, false},
		{"bad cron", Maintenance{EndpointIDs: []string{"a"}, Cron: "61 * * * *", Duration: time.Hour}, false},
		{"cron without duration", Maintenance{EndpointIDs: []string{"a"}, Cron: "@daily"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.m.Validate()
			if tt.ok && err != nil {
				t.Fatalf("Validate() = %v, want nil", err)
			}
			if !tt.ok && !errors.Is(err, ErrInvalidMaintenance) {
				t.Fatalf("Validate() = %v, want ErrInvalidMaintenance", err)
			}
		})
	}
}

func TestMaintenanceActiveAt(t *testing.T) {
	oneOff := Maintenance{EndpointIDs: []string{"a"}, Start: ts("2026-01-01T10:00:00Z"), End: ts("2026-01-01T11:00:00Z")}
	nightly := Maintenance{Selector: map[string]string{"env": "prod", "team": "x"}, Cron: "0 2 * * *", Duration: 30 * time.Minute}
	a := EndpointRef{ID: "a"}
	prodX := EndpointRef{ID: "b", Labels: map[string]string{"env": "prod", "team": "x", "extra": "1"}}
	prodY := EndpointRef{ID: "c", Labels: map[string]string{"env": "prod", "team": "y"}}
	tests := []struct {
		name string
		m    Maintenance
		ep   EndpointRef
		at   string
		want bool
	}{
		{"one-off before", oneOff, a, "2026-01-01T09:59:59Z", false},
		{"one-off at start", oneOff, a, "2026-01-01T10:00:00Z", true},
		{"one-off inside", oneOff, a, "2026-01-01T10:30:00Z", true},
		{"one-off at end is over", oneOff, a, "2026-01-01T11:00:00Z", false},
		{"one-off other endpoint", oneOff, prodX, "2026-01-01T10:30:00Z", false},
		{"nightly inside", nightly, prodX, "2026-03-05T02:10:00Z", true},
		{"nightly at activation", nightly, prodX, "2026-03-05T02:00:00Z", true},
		{"nightly after", nightly, prodX, "2026-03-05T02:30:00Z", false},
		{"nightly before", nightly, prodX, "2026-03-05T01:59:00Z", false},
		{"nightly selector mismatch", nightly, prodY, "2026-03-05T02:10:00Z", false},
		{"nightly no labels", nightly, a, "2026-03-05T02:10:00Z", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.m.ActiveAt(ts(tt.at), tt.ep); got != tt.want {
				t.Fatalf("ActiveAt(%s) = %v, want %v", tt.at, got, tt.want)
			}
		})
	}
}

func TestMaintenanceWindowMergesOverlaps(t *testing.T) {
	// Every 10 minutes for 15 minutes: occurrences overlap, so the silence
	// never ends; Window must stop merging at its bound instead of looping.
	m := Maintenance{EndpointIDs: []string{"a"}, Cron: "*/10 * * * *", Duration: 15 * time.Minute}
	start, end, ok := m.Window(ts("2026-01-01T10:12:00Z"))
	if !ok {
		t.Fatal("Window() not active")
	}
	if !start.Equal(ts("2026-01-01T10:00:00Z")) {
		t.Errorf("start = %s, want 10:00", start)
	}
	if !end.After(ts("2026-01-02T00:00:00Z")) {
		t.Errorf("end = %s, want merged far beyond one occurrence", end)
	}

	// Back-to-back hourly windows of one hour merge; 50-minute ones do not.
	contiguous := Maintenance{EndpointIDs: []string{"a"}, Cron: "0 1,2 * * *", Duration: time.Hour}
	if _, end, _ := contiguous.Window(ts("2026-01-01T01:30:00Z")); !end.Equal(ts("2026-01-01T03:00:00Z")) {
		t.Errorf("contiguous end = %s, want 03:00", end)
	}
	gap := Maintenance{EndpointIDs: []string{"a"}, Cron: "0 1,2 * * *", Duration: 50 * time.Minute}
	if _, end, _ := gap.Window(ts("2026-01-01T01:30:00Z")); !end.Equal(ts("2026-01-01T01:50:00Z")) {
		t.Errorf("gap end = %s, want 01:50", end)
	}
}

func TestMaintenanceJSONRoundTrip(t *testing.T) {
	m := Maintenance{ID: "m1", Name: "db upgrade", Selector: map[string]string{"team": "x"}, Cron: "CRON_TZ=Europe/Berlin 0 3 * * 0", Duration: 2 * time.Hour}
	if err := m.Validate(); err != nil {
		t.Fatal(err)
	}
	doc, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeMaintenance(doc)
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != m.ID || got.Cron != m.Cron || got.Duration != m.Duration || got.Selector["team"] != "x" {
		t.Fatalf("round trip = %+v, want %+v", got, m)
	}
}

// TestMaintenanceCronIsUTC: a recurring window without CRON_TZ= runs in UTC,
// as documented, whatever the host's time zone; CRON_TZ= picks another zone.
func TestMaintenanceCronIsUTC(t *testing.T) {
	saved := time.Local
	time.Local = time.FixedZone("UTC+5", 5*3600) // a host not on UTC
	t.Cleanup(func() { time.Local = saved })
	ep := EndpointRef{ID: "ep1"}
	// The same instant as time.Now() reports it on that host.
	at := time.Date(2026, 3, 2, 3, 30, 0, 0, time.UTC).In(time.Local)
	utc := Maintenance{EndpointIDs: []string{"ep1"}, Cron: "0 3 * * *", Duration: time.Hour}
	if !utc.ActiveAt(at, ep) {
		t.Errorf("%q for 1h is not active at %s: evaluated in the host's zone, not UTC", utc.Cron, at)
	}
	tokyo := Maintenance{EndpointIDs: []string{"ep1"}, Cron: "CRON_TZ=Asia/Tokyo 0 12 * * *", Duration: time.Hour}
	if !tokyo.ActiveAt(at, ep) { // 12:30 in Tokyo
		t.Errorf("%q for 1h is not active at %s", tokyo.Cron, at)
	}
}

func TestMaintenanceUntilJoinsTouchingWindows(t *testing.T) {
	a := EndpointRef{ID: "a", Tenant: "acme", Labels: map[string]string{"team": "x"}}
	first := Maintenance{Tenant: "acme", EndpointIDs: []string{"a"}, Start: ts("2026-01-01T10:00:00Z"), End: ts("2026-01-01T11:00:00Z")}
	meets := Maintenance{Tenant: "acme", Selector: map[string]string{"team": "x"}, Start: ts("2026-01-01T11:00:00Z"), End: ts("2026-01-01T12:00:00Z")}
	overlaps := Maintenance{Tenant: "acme", EndpointIDs: []string{"a"}, Start: ts("2026-01-01T11:30:00Z"), End: ts("2026-01-01T13:00:00Z")}
	later := Maintenance{Tenant: "acme", EndpointIDs: []string{"a"}, Start: ts("2026-01-01T13:01:00Z"), End: ts("2026-01-01T14:00:00Z")}
	otherTenant := Maintenance{Tenant: "other", EndpointIDs: []string{"a"}, Start: ts("2026-01-01T09:00:00Z"), End: ts("2026-01-01T20:00:00Z")}
	nightly := Maintenance{Tenant: "acme", EndpointIDs: []string{"a"}, Cron: "0 2 * * *", Duration: 30 * time.Minute}
	tests := []struct {
		name   string
		ms     []Maintenance
		at     string
		ok     bool
		wantAt string
	}{
		{"none", nil, "2026-01-01T10:30:00Z", false, ""},
		{"one window", []Maintenance{first}, "2026-01-01T10:30:00Z", true, "2026-01-01T11:00:00Z"},
		{"at its end it is over", []Maintenance{first}, "2026-01-01T11:00:00Z", false, ""},
		{"a window that meets it carries on", []Maintenance{first, meets}, "2026-01-01T10:30:00Z", true, "2026-01-01T12:00:00Z"},
		{"and one that overlaps that", []Maintenance{overlaps, meets, first}, "2026-01-01T10:30:00Z", true, "2026-01-01T13:00:00Z"},
		{"a gap ends the span", []Maintenance{first, meets, overlaps, later}, "2026-01-01T10:30:00Z", true, "2026-01-01T13:00:00Z"},
		{"another tenant's window never matches", []Maintenance{otherTenant}, "2026-01-01T10:30:00Z", false, ""},
		{"recurring", []Maintenance{nightly}, "2026-03-05T02:10:00Z", true, "2026-03-05T02:30:00Z"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			end, ok := MaintenanceUntil(tt.ms, a, ts(tt.at))
			if ok != tt.ok || ok && !end.Equal(ts(tt.wantAt)) {
				t.Fatalf("MaintenanceUntil(%s) = %s, %v; want %s, %v", tt.at, end, ok, tt.wantAt, tt.ok)
			}
		})
	}
}

func TestMaintenanceAheadListsSpansInOrder(t *testing.T) {
	a := EndpointRef{ID: "a", Tenant: "acme"}
	from := ts("2026-03-05T00:30:00Z")
	week := from.Add(7 * 24 * time.Hour)
	nightly := Maintenance{Tenant: "acme", EndpointIDs: []string{"a"}, Cron: "0 2 * * *", Duration: 30 * time.Minute}
	now := Maintenance{Tenant: "acme", EndpointIDs: []string{"a"}, Start: ts("2026-03-05T00:00:00Z"), End: ts("2026-03-05T01:00:00Z")}
	joins := Maintenance{Tenant: "acme", EndpointIDs: []string{"a"}, Start: ts("2026-03-06T02:30:00Z"), End: ts("2026-03-06T04:00:00Z")}
	past := Maintenance{Tenant: "acme", EndpointIDs: []string{"a"}, Start: ts("2026-03-01T00:00:00Z"), End: ts("2026-03-01T01:00:00Z")}
	far := Maintenance{Tenant: "acme", EndpointIDs: []string{"a"}, Start: ts("2026-04-01T00:00:00Z"), End: ts("2026-04-01T01:00:00Z")}
	foreign := Maintenance{Tenant: "other", EndpointIDs: []string{"a"}, Start: ts("2026-03-05T10:00:00Z"), End: ts("2026-03-05T11:00:00Z")}
	span := func(s, e string) MaintenanceSpan { return MaintenanceSpan{Start: ts(s), End: ts(e)} }
	got := MaintenanceAhead([]Maintenance{nightly, now, joins, past, far, foreign}, a, from, week, 3)
	want := []MaintenanceSpan{
		span("2026-03-05T02:00:00Z", "2026-03-05T02:30:00Z"),
		span("2026-03-06T02:00:00Z", "2026-03-06T04:00:00Z"), // the nightly run and the window that meets it
		span("2026-03-07T02:00:00Z", "2026-03-07T02:30:00Z"),
	}
	if !slices.Equal(got, want) {
		t.Fatalf("MaintenanceAhead = %v, want %v", got, want)
	}
	if got := MaintenanceAhead([]Maintenance{now, past, far, foreign}, a, from, week, 3); len(got) != 0 {
		t.Fatalf("MaintenanceAhead without a window starting in the week = %v, want none", got)
	}
}
