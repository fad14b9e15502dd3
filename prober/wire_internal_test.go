package prober

import (
	"encoding/json"
	"testing"
)

// The hand-spelled 2025-era requests must be the bytes json.Marshal gives.
func TestRequestBodyMatchesMarshal(t *testing.T) {
	p := New(Options{ClientName: `a"<b>&`, ClientVersion: "1\n2"})
	r := &run{p: p}
	for _, tc := range []struct {
		method string
		id     int64
		params any
		want   any
	}{
		{"initialize", 1, p.initializeParams(Version20251125), map[string]any{
			"protocolVersion": Version20251125,
			"capabilities":    map[string]any{},
			"clientInfo":      map[string]string{"name": p.opts.ClientName, "version": p.opts.ClientVersion},
		}},
		{"initialize", 1, p.initializeParams("1999-01-01"), map[string]any{
			"protocolVersion": "1999-01-01",
			"capabilities":    map[string]any{},
			"clientInfo":      map[string]string{"name": p.opts.ClientName, "version": p.opts.ClientVersion},
		}},
		{"ping", 12345, emptyParams, map[string]any{}},
		{"notifications/initialized", 0, nil, nil},
		{"tools/list", 3, map[string]any{"cursor": "c<1>"}, map[string]any{"cursor": "c<1>"}},
		{"odd\"<method>", 4, emptyParams, map[string]any{}},
	} {
		m := rpcRequest{JSONRPC: "2.0", ID: tc.id, Method: tc.method}
		if tc.want != nil {
			m.Params = tc.want
		}
		want, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		if got := r.body(tc.method, tc.id, tc.params); string(got) != string(want) {
			t.Errorf("%s: body\n%s\nwant\n%s", tc.method, got, want)
		}
	}
}
