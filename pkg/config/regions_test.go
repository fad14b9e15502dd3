package config

import (
	"io"
	"slices"
	"strings"
	"testing"
)

func TestRegionsFlag(t *testing.T) {
	o, err := Parse("mcpmon", []string{"--regions", "eu-west, us-east,ap"}, envOf(nil), io.Discard)
	if err != nil || !slices.Equal(o.Regions, []string{"eu-west", "us-east", "ap"}) {
		t.Fatalf("--regions = %v %v", o.Regions, err)
	}
	o, err = Parse("mcpmon", nil, envOf(map[string]string{"MCPMON_REGIONS": "a,b"}), io.Discard)
	if err != nil || !slices.Equal(o.Regions, []string{"a", "b"}) {
		t.Fatalf("MCPMON_REGIONS = %v %v", o.Regions, err)
	}
	if o, err := Parse("mcpmon", nil, envOf(nil), io.Discard); err != nil || o.Regions != nil {
		t.Fatalf("default regions = %v %v, want none (one commands queue)", o.Regions, err)
	}
	for _, bad := range []string{"EU", "eu,eu", "-eu", "eu_west", strings.Repeat("a", 33), "loc-office"} {
		if _, err := Parse("mcpmon", []string{"--regions", bad}, envOf(nil), io.Discard); err == nil || !strings.Contains(err.Error(), "--regions") {
			t.Errorf("--regions %q: %v, want an error naming --regions", bad, err)
		}
	}
}
