package jsonpath_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/mcpmon/mcpmon/pkg/jsonpath"
)

// FuzzJSONPath: Parse never panics, refuses what is over MaxLen or not a
// path with ErrSyntax, keeps at most MaxLen steps, and what it accepts
// renders (String) to a path that parses back to the same steps; Select
// of an accepted path on any document never panics.
func FuzzJSONPath(f *testing.F) {
	f.Add("$.status", []byte(`{"status":"ok"}`))
	f.Add(`$["odd key"]["a]b"][2]`, []byte(`{"odd key":{"a]b":[0,1,2]}}`))
	f.Add("$.items[1048576]", []byte(`{"items":[]}`))
	f.Add(`$["\xff"]`, []byte(`{}`))
	f.Add("$[00][-0][+1]", []byte(`[[[1,2]]]`))
	f.Fuzz(func(t *testing.T, path string, doc []byte) {
		p, err := jsonpath.Parse(path)
		if err != nil {
			if !errors.Is(err, jsonpath.ErrSyntax) {
				t.Fatalf("error %v does not wrap ErrSyntax", err)
			}
			return
		}
		if len(path) > jsonpath.MaxLen || len(p) > jsonpath.MaxLen {
			t.Fatalf("accepted %d characters, %d steps; cap %d", len(path), len(p), jsonpath.MaxLen)
		}
		s := p.String()
		if len(s) <= jsonpath.MaxLen {
			again, err := jsonpath.Parse(s)
			if err != nil {
				t.Fatalf("String %q of %q does not parse: %v", s, path, err)
			}
			if len(p) > 0 && !reflect.DeepEqual(again, p) {
				t.Fatalf("round trip of %q through %q: %+v, want %+v", path, s, again, p)
			}
		}
		var v any
		if json.Unmarshal(doc, &v) == nil {
			_, _ = p.Select(v)
		}
	})
}
