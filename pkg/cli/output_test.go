package cli

import (
	"bytes"
	"encoding/json"
	"iter"
	"strings"
	"testing"
)

// TestStreamJSONWritesAngleBracketsAsThemselves: -o json of a list names
// a redacted URL as .../<redacted> and a query's & as itself, like -o json
// of one object, and is still one JSON array.
func TestStreamJSONWritesAngleBracketsAsThemselves(t *testing.T) {
	items := []map[string]string{{"url": "https://h.example/<redacted>"}, {"url": "https://h.example/?a=1&b=2"}}
	var seq iter.Seq2[map[string]string, error] = func(yield func(map[string]string, error) bool) {
		for _, it := range items {
			if !yield(it, nil) {
				return
			}
		}
	}
	var out bytes.Buffer
	if err := streamJSON(&out, seq); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"/<redacted>", "a=1&b=2"} {
		if !strings.Contains(out.String(), want) {
			t.Fatalf("stream lacks %q:\n%s", want, out.String())
		}
	}
	var back []map[string]string
	if err := json.Unmarshal(out.Bytes(), &back); err != nil || len(back) != 2 {
		t.Fatalf("not one array of two: %v\n%s", err, out.String())
	}
}
