package alert

import (
	"errors"
	"testing"
	"time"
)

func TestDigestPeriod(t *testing.T) {
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Skip("no tzdata:", err)
	}
	at := func(y int, m time.Month, d, h, min int) time.Time { return time.Date(y, m, d, h, min, 0, 0, berlin) }
	utc := func(y int, m time.Month, d, h, min int) time.Time { return time.Date(y, m, d, h, min, 0, 0, time.UTC) }
	daily9 := DigestRule{Severities: []string{"info"}, Every: DigestDaily, At: "09:00", TimeZone: "Europe/Berlin"}
	weekly := DigestRule{Severities: []string{"info"}, Every: DigestWeekly, At: "09:00", TimeZone: "Europe/Berlin", Weekday: "monday"}
	for _, c := range []struct {
		name       string
		rule       DigestRule
		t          time.Time
		start, end time.Time
		hours      float64
	}{
		{"daily, after the time", daily9, at(2026, 6, 10, 14, 0), at(2026, 6, 10, 9, 0), at(2026, 6, 11, 9, 0), 24},
		{"daily, before the time", daily9, at(2026, 6, 10, 8, 59), at(2026, 6, 9, 9, 0), at(2026, 6, 10, 9, 0), 24},
		{"daily, at the time: a period starts", daily9, at(2026, 6, 10, 9, 0), at(2026, 6, 10, 9, 0), at(2026, 6, 11, 9, 0), 24},
		{"daily, across the spring DST change: 23h", daily9, at(2026, 3, 29, 1, 0), at(2026, 3, 28, 9, 0), at(2026, 3, 29, 9, 0), 23},
		{"daily, across the autumn DST change: 25h", daily9, at(2026, 10, 25, 4, 0), at(2026, 10, 24, 9, 0), at(2026, 10, 25, 9, 0), 25},
		{"daily, a time the spring change skips", DigestRule{Severities: []string{"info"}, Every: DigestDaily, At: "02:30", TimeZone: "Europe/Berlin"},
			at(2026, 3, 29, 12, 0), at(2026, 3, 29, 3, 30), at(2026, 3, 30, 2, 30), 23},
		{"daily, UTC midnight by default", DigestRule{Severities: []string{"info"}, Every: DigestDaily}, utc(2026, 1, 1, 0, 0).Add(-time.Nanosecond),
			utc(2025, 12, 31, 0, 0), utc(2026, 1, 1, 0, 0), 24},
		{"weekly, mid-week", weekly, at(2026, 6, 10, 14, 0), at(2026, 6, 8, 9, 0), at(2026, 6, 15, 9, 0), 168},
		{"weekly, on the day before the time", weekly, at(2026, 6, 8, 8, 0), at(2026, 6, 1, 9, 0), at(2026, 6, 8, 9, 0), 168},
		{"weekly, sunday wraps to the monday before", weekly, at(2026, 6, 14, 23, 0), at(2026, 6, 8, 9, 0), at(2026, 6, 15, 9, 0), 168},
		{"weekly, across a year end", DigestRule{Severities: []string{"info"}, Every: DigestWeekly, Weekday: "friday"}, utc(2026, 1, 1, 12, 0),
			utc(2025, 12, 26, 0, 0), utc(2026, 1, 2, 0, 0), 168},
		{"weekly, across the autumn DST change", weekly, at(2026, 10, 28, 12, 0), at(2026, 10, 26, 9, 0), at(2026, 11, 2, 9, 0), 168},
		{"weekly, the week of the change", weekly, at(2026, 10, 24, 12, 0), at(2026, 10, 19, 9, 0), at(2026, 10, 26, 9, 0), 169},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, err := c.rule.Schedule()
			if err != nil {
				t.Fatal(err)
			}
			start, end := s.Period(c.t)
			if !start.Equal(c.start) || !end.Equal(c.end) {
				t.Fatalf("Period(%s) = [%s, %s), want [%s, %s)", c.t, start, end, c.start, c.end)
			}
			if got := end.Sub(start).Hours(); got != c.hours {
				t.Fatalf("period of %vh, want %vh", got, c.hours)
			}
			// Periods tile: the next begins where this one ends, and
			// the one before ends where this one begins.
			if ns, _ := s.Period(end); !ns.Equal(end) {
				t.Fatalf("the period at %s starts at %s", end, ns)
			}
			if _, pe := s.Period(start.Add(-time.Nanosecond)); !pe.Equal(start) {
				t.Fatalf("the period before %s ends at %s", start, pe)
			}
		})
	}
}

func TestDigestRuleProblems(t *testing.T) {
	for _, c := range []struct {
		name string
		rule DigestRule
		ok   bool
	}{
		{"daily", DigestRule{Severities: []string{"info"}, Every: "daily", At: "23:59", TimeZone: "America/New_York"}, true},
		{"weekly sunday", DigestRule{Severities: []string{"info", "warning"}, Every: "weekly", Weekday: "sunday"}, true},
		{"no severities", DigestRule{Every: "daily"}, false},
		{"unknown severity", DigestRule{Severities: []string{"low"}, Every: "daily"}, false},
		{"severity twice", DigestRule{Severities: []string{"info", "info"}, Every: "daily"}, false},
		{"hourly", DigestRule{Severities: []string{"info"}, Every: "hourly"}, false},
		{"24:00", DigestRule{Severities: []string{"info"}, Every: "daily", At: "24:00"}, false},
		{"9:00", DigestRule{Severities: []string{"info"}, Every: "daily", At: "9:00"}, false},
		{"unknown zone", DigestRule{Severities: []string{"info"}, Every: "daily", TimeZone: "Mars/Olympus"}, false},
		{"the process's zone", DigestRule{Severities: []string{"info"}, Every: "daily", TimeZone: "Local"}, false},
		{"weekday on a daily digest", DigestRule{Severities: []string{"info"}, Every: "daily", Weekday: "monday"}, false},
		{"unknown weekday", DigestRule{Severities: []string{"info"}, Every: "weekly", Weekday: "Mon"}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := c.rule.Schedule()
			if (err == nil) != c.ok || (err != nil && !errors.Is(err, ErrDigestRule)) {
				t.Fatalf("Schedule() error %v, want ok=%v", err, c.ok)
			}
		})
	}
}
