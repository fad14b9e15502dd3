package api

import (
	"testing"

	apiv1 "github.com/mcpmon/mcpmon/pkg/api/v1"
)

// TestWrongTypeDetailNamesJSONKind: a member of the wrong JSON type is
// described by the JSON kind it must be, never by the Go type behind it.
func TestWrongTypeDetailNamesJSONKind(t *testing.T) {
	for _, tc := range []struct{ body, pointer, detail string }{
		{`{"name":5}`, "#/name", "must be a string, not number"},
		{`{"paused":"yes"}`, "#/paused", "must be a boolean, not string"},
		{`{"rules":5}`, "#/rules", "must be an object, not number"},
		{`{"toolCheck":"x"}`, "#/toolCheck", "must be an object, not string"},
		{`{"oauth":[]}`, "#/oauth", "must be an object, not array"},
		{`{"headers":"x"}`, "#/headers", "must be an object, not string"},
		{`{"regions":"eu"}`, "#/regions", "must be an array, not string"},
		{`{"rules":{"openAfter":"2"}}`, "#/rules/openAfter", "must be a number, not string"},
	} {
		checked, p := checkJSON([]byte(tc.body), bodyLimits)
		if p != nil {
			t.Fatalf("%s: checkJSON: %+v", tc.body, p)
		}
		var in apiv1.EndpointInput
		p = decodeStrict(checked, &in)
		if p == nil || len(p.Errors) != 1 || p.Errors[0].Pointer != tc.pointer || p.Errors[0].Detail != tc.detail {
			t.Errorf("%s: got %+v, want %s %q", tc.body, p, tc.pointer, tc.detail)
		}
	}
}
