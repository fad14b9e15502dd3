package declarative

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// billionLaughs is the YAML alias bomb: nine levels of nine aliases, a few
// hundred bytes that expand to 9^9 values.
func billionLaughs() string {
	var b strings.Builder
	b.WriteString("a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n")
	prev := "a"
	for _, n := range []string{"b", "c", "d", "e", "f", "g", "h", "i"} {
		b.WriteString(n + ": &" + n + " [")
		for j := range 9 {
			if j > 0 {
				b.WriteString(",")
			}
			b.WriteString("*" + prev)
		}
		b.WriteString("]\n")
		prev = n
	}
	return b.String()
}

func deepDocument(n int) string {
	return "endpoints:\n  - name: x\n    labels: " + strings.Repeat("[", n) + strings.Repeat("]", n) + "\n"
}

// TestParseBoundsTheDocument: size, depth and expanded size are refused
// as ErrTooLarge before the document is interpreted; a document within
// the bounds that uses an alias still parses.
func TestParseBoundsTheDocument(t *testing.T) {
	for _, c := range []struct {
		name, doc string
	}{
		{"billion laughs", billionLaughs()},
		{"deep", deepDocument(10000)},
		{"just too deep", deepDocument(MaxDocumentDepth)},
		{"huge", "endpoints: []\n#" + strings.Repeat("x", MaxDocumentBytes)},
	} {
		if _, err := Parse([]byte(c.doc)); !errors.Is(err, ErrTooLarge) {
			t.Errorf("%s: Parse = %v, want ErrTooLarge", c.name, err)
		}
	}
	doc, err := Parse([]byte("endpoints:\n  - &e {name: a, url: 'https://a.example/mcp', labels: &l {team: x}}\n  - {name: b, url: 'https://b.example/mcp', labels: *l}\n"))
	if err != nil || len(doc.Endpoints) != 2 || doc.Endpoints[1].Labels["team"] != "x" {
		t.Fatalf("a small document with an alias: %+v, %v", doc, err)
	}
}

// FuzzParse: no input panics Parse or gets past its bounds, and a document
// it accepts renders (YAML) to one it parses back to the same endpoints.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"endpoints:\n  - name: search\n    url: https://mcp.example.com/mcp\n    headers: {Authorization: 'Bearer ${env:MCPMON_APPLY_T}'}\n    labels: {team: search}\n",
		"endpoints:\n  - {name: a, url: 'https://a.example/mcp', sinks: [{name: h, type: webhook, url: '${env:MCPMON_APPLY_H}'}]}\n",
		"endpoints: []\n",
		"",
		"endpoints:\n  - name: ''\n",
		"endpoints:\n  - {name: a, unknown: 1}\n",
		"x: &x [*x]\n",
		billionLaughs(),
		deepDocument(200),
		"endpoints:\n  - &e {name: a}\n  - *e\n",
		"\xff\xfe",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		doc, err := Parse(b)
		if err != nil {
			return
		}
		if len(b) > MaxDocumentBytes {
			t.Fatalf("accepted %d bytes", len(b))
		}
		out, err := YAML(doc)
		if err != nil {
			t.Fatalf("an accepted document does not render: %v", err)
		}
		back, err := Parse(out)
		if err != nil {
			t.Fatalf("the rendering of an accepted document does not parse: %v\n%s", err, out)
		}
		j1, _ := json.Marshal(doc)
		j2, _ := json.Marshal(back)
		if !bytes.Equal(j1, j2) {
			t.Fatalf("round trip changed the document:\n%s\n%s", j1, j2)
		}
	})
}
