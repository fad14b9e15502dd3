package redis

import (
	"slices"
	"testing"
	"time"

	"github.com/mcpmon/mcpmon/pkg/msg"
)

// TestShardTagsSpreadOverSlots: shard i's tag hashes into the i-th 128th
// of the slots, so any split of the slots into contiguous ranges splits
// the shards evenly; the tags are distinct.
func TestShardTagsSpreadOverSlots(t *testing.T) {
	per := clusterSlots / shardCount
	seen := map[string]bool{}
	for i, tag := range shardTags {
		if slot := int(crc16(tag)) % clusterSlots; slot/per != i {
			t.Errorf("shard %d: tag %q hashes to slot %d, outside [%d, %d)", i, tag, slot, i*per, (i+1)*per)
		}
		if seen[tag] {
			t.Errorf("tag %q used twice", tag)
		}
		seen[tag] = true
	}
	// Redis Cluster's own test vector for its CRC16.
	if got := crc16("123456789"); got != 0x31C3 {
		t.Errorf("crc16(123456789) = %#x, want 0x31c3", got)
	}
}

// TestIncidentEndpoints: an incident ID names the endpoints whose shard
// may hold it.
func TestIncidentEndpoints(t *testing.T) {
	w := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		id   string
		want []string
	}{
		{msg.IncidentID("ep", w), []string{"ep"}},
		{msg.IncidentID("a-b-c", w), []string{"a-b-c"}},
		{msg.RegionalIncidentID("ep", w), []string{"ep-regional", "ep"}},
		{msg.IncidentID("x-regional", w), []string{"x-regional", "x"}},
		{"nope", nil},
		{"ep-20261201T100000", nil},
		{"-20261201T100000Z", nil},
	} {
		if got := incidentEndpoints(c.id); !slices.Equal(got, c.want) {
			t.Errorf("incidentEndpoints(%q) = %q, want %q", c.id, got, c.want)
		}
	}
	if !incidentOf(msg.RegionalIncidentID("ep", w), "ep") || incidentOf(msg.IncidentID("ep", w), "other") {
		t.Error("incidentOf disagrees with incidentEndpoints")
	}
}
