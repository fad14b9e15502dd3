package jsonpath_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/mcpmon/mcpmon/pkg/jsonpath"
)

func TestSelect(t *testing.T) {
	var doc any
	if err := json.Unmarshal([]byte(`{"status":"ok","items":[{"id":7},{"id":8}],"odd key":{"a]b":true},"n":null}`), &doc); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path  string
		want  string // JSON of the selected value
		found bool
	}{
		{"$", "", true},
		{"$.status", `"ok"`, true},
		{"$.items[1].id", `8`, true},
		{`$["odd key"]["a]b"]`, `true`, true},
		{"$.n", `null`, true},
		{"$.items[2]", "", false},
		{"$.status.x", "", false},
		{"$.missing", "", false},
		{"$.items.id", "", false},
	} {
		p, err := jsonpath.Parse(tc.path)
		if err != nil {
			t.Fatalf("%s: %v", tc.path, err)
		}
		v, ok := p.Select(doc)
		if ok != tc.found {
			t.Errorf("%s: found %v, want %v", tc.path, ok, tc.found)
			continue
		}
		if tc.want != "" {
			if b, _ := json.Marshal(v); string(b) != tc.want {
				t.Errorf("%s = %s, want %s", tc.path, b, tc.want)
			}
		}
	}
}

func TestParseRefusesWhatItDoesNotSpeak(t *testing.T) {
	for _, bad := range []string{"", "status", "$.", "$..a", "$[*]", "$[-1]", "$.a[?(@.x)]", `$["a"`, "$[1:2]", "$ .a"} {
		if _, err := jsonpath.Parse(bad); !errors.Is(err, jsonpath.ErrSyntax) {
			t.Errorf("Parse(%q) = %v, want ErrSyntax", bad, err)
		}
	}
}

func TestStringRoundTrips(t *testing.T) {
	for _, s := range []string{"$", "$.a.b[0]", `$["x y"][3]`} {
		p, err := jsonpath.Parse(s)
		if err != nil {
			t.Fatal(err)
		}
		if p.String() != s {
			t.Errorf("String() = %s, want %s", p, s)
		}
	}
}
