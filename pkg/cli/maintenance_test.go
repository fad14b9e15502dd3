package cli

import (
	"errors"
	"strings"
	"testing"
)

// TestMaintenanceShapeNamesTheMissingFlags: a window the flags cannot
// make is a usage error naming the flags to add, before any request.
func TestMaintenanceShapeNamesTheMissingFlags(t *testing.T) {
	type flags struct{ endpoint, selector, start, end, forDur, cron, duration bool }
	for _, tc := range []struct {
		name string
		f    flags
		want string // "" ok
	}{
		{"nothing", flags{}, "--endpoint ID|NAME or --selector"},
		{"no when", flags{endpoint: true}, "say when: --for D"},
		{"for", flags{endpoint: true, forDur: true}, ""},
		{"for and start", flags{selector: true, forDur: true, start: true}, "--for opens a window now"},
		{"for and duration", flags{selector: true, forDur: true, duration: true}, "--for opens a window now"},
		{"start alone", flags{endpoint: true, start: true}, "both --start and --end"},
		{"end alone", flags{endpoint: true, end: true}, "both --start and --end"},
		{"one-off", flags{endpoint: true, start: true, end: true}, ""},
		{"cron alone", flags{selector: true, cron: true}, "both --cron and --duration"},
		{"duration alone", flags{selector: true, duration: true}, "both --cron and --duration"},
		{"recurring", flags{selector: true, cron: true, duration: true}, ""},
		{"both kinds", flags{selector: true, start: true, end: true, cron: true, duration: true}, "not both"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := tc.f
			err := maintenanceShape(f.endpoint, f.selector, f.start, f.end, f.forDur, f.cron, f.duration)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("err = %v, want none", err)
				}
				return
			}
			var u usageError
			if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.As(err, &u) {
				t.Fatalf("err = %v, want a usage error naming %q", err, tc.want)
			}
		})
	}
}
