package api

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/mcpmon/mcpmon/pkg/auth"
	"github.com/mcpmon/mcpmon/pkg/model"
)

// TestNoteRefusalWritesOnePerMinute: the first refusal of an address
// writes, the next ones within refusalAuditEvery are counted, and the
// first one after it writes with the count.
func TestNoteRefusalWritesOnePerMinute(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name        string
		w           refusalWindow
		seen        bool
		at          time.Time
		emit        bool
		earlier     int
		suppressed  int
		lastWritten time.Time
	}{
		{"first", refusalWindow{}, false, t0, true, 0, 0, t0},
		{"within the minute", refusalWindow{last: t0, suppressed: 2}, true, t0.Add(59 * time.Second), false, 0, 3, t0},
		{"after the minute, nothing suppressed", refusalWindow{last: t0}, true, t0.Add(time.Minute), true, 0, 0, t0.Add(time.Minute)},
		{"after the minute, with a count", refusalWindow{last: t0, suppressed: 41}, true, t0.Add(90 * time.Second), true, 41, 0, t0.Add(90 * time.Second)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			next, emit, earlier := noteRefusal(tc.w, tc.seen, tc.at)
			if emit != tc.emit || earlier != tc.earlier || next.suppressed != tc.suppressed || !next.last.Equal(tc.lastWritten) {
				t.Fatalf("noteRefusal = %+v, %v, %d; want suppressed %d last %s, %v, %d", next, emit, earlier, tc.suppressed, tc.lastWritten, tc.emit, tc.earlier)
			}
		})
	}
}

// TestRefusalLogIsBounded: past maxRefusalClients, new addresses share one
// window, so a spray from many addresses still writes one entry a minute
// for them; windows that suppress nothing are forgotten first.
func TestRefusalLogIsBounded(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	var l refusalLog
	writes := 0
	for i := range maxRefusalClients + 100 {
		addr := fmt.Sprintf("10.0.%d.%d", i/256, i%256)
		if _, emit, _ := l.note("default", addr, t0); emit {
			writes++
		}
	}
	// One window per address up to the bound, then the overflow's: its
	// first refusal writes, the other 99 are counted.
	if len(l.windows) > maxRefusalClients+1 || writes != maxRefusalClients+1 {
		t.Fatalf("%d windows, %d writes; want at most %d of each", len(l.windows), writes, maxRefusalClients+1)
	}
	// A minute on, the quiet windows make room again.
	addr, emit, _ := l.note("default", "192.0.2.1", t0.Add(2*time.Minute))
	if addr != "192.0.2.1" || !emit {
		t.Fatalf("after a minute: %q, %v; want its own window and an entry", addr, emit)
	}
}

func TestTenantDeliveries(t *testing.T) {
	ds := []model.Delivery{
		{Kind: "open", Sink: "own-hook"},
		{Kind: "open", Sink: "webhook"},  // the operator's --webhook-url
		{Kind: "open", Sink: "ops-mail"}, // the operator's, unknown to this replica
		{Kind: "open", Sink: "shadowed"}, // the endpoint's name, but a global sink's too
	}
	own := map[string]bool{"own-hook": true, "shadowed": true}
	operator := map[string]bool{"webhook": true, "shadowed": true}
	for _, tc := range []struct {
		name, tenant string
		own          map[string]bool
		want         []string
		hidden       int
	}{
		{"operator sees all", auth.DefaultTenant, nil, []string{"own-hook", "webhook", "ops-mail", "shadowed"}, 0},
		{"tenant sees its own", "acme", own, []string{"own-hook"}, 3},
		{"endpoint gone", "acme", map[string]bool{}, nil, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, hidden := tenantDeliveries(ds, tc.tenant, tc.own, operator)
			var names []string
			for _, d := range got {
				names = append(names, d.Sink)
			}
			if !slices.Equal(names, tc.want) || hidden != tc.hidden || got == nil {
				t.Fatalf("shown %v (nil %v), hidden %d; want %v, %d", names, got == nil, hidden, tc.want, tc.hidden)
			}
		})
	}
}

func TestEndpointSinkNames(t *testing.T) {
	for _, tc := range []struct {
		raw  string
		want []string
	}{
		{``, nil},
		{`null`, nil},
		{`{"name":"x"}`, nil},
		{`[{"name":"a","type":"webhook"},{"type":"slack"},{"name":"b"}]`, []string{"a", "b"}},
	} {
		got := endpointSinkNames(json.RawMessage(tc.raw))
		var names []string
		for n := range got {
			names = append(names, n)
		}
		slices.Sort(names)
		if !slices.Equal(names, tc.want) {
			t.Errorf("endpointSinkNames(%s) = %v, want %v", tc.raw, names, tc.want)
		}
	}
}

func TestSlugHeldOnlyByPublicEndpoints(t *testing.T) {
	all := []model.Endpoint{
		{ID: "pub", Slug: "taken", Public: true},
		{ID: "priv", Slug: "private-name"},
	}
	for _, tc := range []struct {
		name string
		e    model.Endpoint
		want bool
	}{
		{"another public holder", model.Endpoint{ID: "new", Slug: "taken", Public: true}, true},
		{"its own slug", model.Endpoint{ID: "pub", Slug: "taken", Public: true}, false},
		{"a private holder reserves nothing", model.Endpoint{ID: "new", Slug: "private-name", Public: true}, false},
	} {
		if got := slugHeld(all, tc.e); got != tc.want {
			t.Errorf("%s: slugHeld = %v, want %v", tc.name, got, tc.want)
		}
	}
}
