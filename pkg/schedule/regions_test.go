package schedule

import (
	"slices"
	"testing"
)

func TestDueRegionsWithLocations(t *testing.T) {
	set := []string{"eu", "us"}
	for _, tc := range []struct {
		name               string
		configured, chosen []string
		want               []string
		central            bool
	}{
		{"no set, no choice", nil, nil, nil, true},
		{"no set, a location", nil, []string{"loc-office"}, []string{"loc-office"}, false},
		{"set, no choice", set, nil, set, true},
		{"set, one region", set, []string{"us"}, []string{"us"}, true},
		{"set, only a location", set, []string{"loc-office"}, []string{"loc-office"}, false},
		{"set, a region and a location", set, []string{"loc-office", "eu"}, []string{"eu", "loc-office"}, true},
		{"set, region outside it", set, []string{"ap"}, []string{}, true},
		{"malformed location is a plain region", set, []string{"loc-"}, []string{}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := DueRegions(tc.configured, tc.chosen)
			if !slices.Equal(got, tc.want) {
				t.Errorf("DueRegions(%v, %v) = %v, want %v", tc.configured, tc.chosen, got, tc.want)
			}
			if c := Central(tc.chosen); c != tc.central {
				t.Errorf("Central(%v) = %v, want %v", tc.chosen, c, tc.central)
			}
		})
	}
}

func TestDueRegionsDoesNotWriteTheSet(t *testing.T) {
	set := make([]string, 2, 4)
	copy(set, []string{"eu", "us"})
	_ = DueRegions(set, []string{"loc-a"})
	_ = DueRegions(set, []string{"eu", "loc-b"})
	if got := set[:4]; got[2] != "" || got[3] != "" {
		t.Fatalf("DueRegions appended into the configured set's spare capacity: %v", got)
	}
}

func TestLocationNames(t *testing.T) {
	for name, ok := range map[string]bool{"office": true, "a": true, "dc-1": true, "": false, "-x": false, "Office": false,
		"abcdefghijklmnopqrstuvwxyz01": true, "abcdefghijklmnopqrstuvwxyz012": false, "a:b": false} {
		if ValidLocation(name) != ok {
			t.Errorf("ValidLocation(%q) = %v, want %v", name, !ok, ok)
		}
		if ok && !IsLocation(Location(name)) {
			t.Errorf("IsLocation(Location(%q)) is false", name)
		}
	}
	if IsLocation("office") || IsLocation("eu") {
		t.Error("a plain region is not a location")
	}
}
