package model

import (
	"encoding/json"
	"strings"
	"testing"
)

// FuzzMaintenanceBounds: a window body that decodes and passes Bounds
// encodes to at most MaxWindowBytes (so the stored document is bounded by
// the caps alone), and Bounds never panics on what decodes.
func FuzzMaintenanceBounds(f *testing.F) {
	f.Add([]byte(`{"name":"w","endpointIds":["a","b"],"start":"2026-12-01T00:00:00Z","end":"2026-12-01T01:00:00Z"}`))
	f.Add([]byte(`{"selector":{"team":"<<<<"},"cron":"0 3 * * 1","duration":3600000000000}`))
	f.Add([]byte(`{"endpointIds":["` + "\\u003c" + `"]}`))
	f.Add([]byte(`{"selector":{"a/b~c":"v"}}`))
	// The attack of issue 20, scaled to the body cap: one more ID than a
	// window may hold.
	f.Add([]byte(`{"endpointIds":["` + strings.TrimSuffix(strings.Repeat(`ep-0123456789","`, MaxWindowEndpointIDs+1), `","`) + `"]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		if len(body) > MaxWindowBytes {
			return // the API refuses it before decoding
		}
		var m Maintenance
		if json.Unmarshal(body, &m) != nil {
			return
		}
		if p, _ := m.Bounds(); p != "" {
			return
		}
		m.ID, m.Tenant = "0123456789abcdef", "tenant-0123456789"
		doc, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		if len(doc) > MaxWindowBytes {
			t.Fatalf("a window within every cap encodes to %d bytes, over %d", len(doc), MaxWindowBytes)
		}
	})
}
