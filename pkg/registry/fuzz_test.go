package registry

import (
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
)

// fuzzMaxPage is the bound the fuzz target holds DecodePage to.
const fuzzMaxPage = 64 << 10

// FuzzDecodePage: whatever a registry (or anything posing as one) answers,
// DecodePage does not panic, refuses bodies over its bound and anything
// without a "servers" array as ErrNotRegistry, and a page it accepts
// re-encodes to a page it accepts again with the same servers.
func FuzzDecodePage(f *testing.F) {
	if b, err := os.ReadFile("testdata/servers.json"); err == nil && len(b) <= fuzzMaxPage {
		f.Add(b)
	}
	for _, s := range []string{
		`{"servers":[],"metadata":{}}`,
		`{"servers":null}`,
		`{"servers":{"a":1}}`,
		`{"servers":"x"}`,
		`<html>not a registry</html>`,
		`{"servers":[{"server":{"name":"a","remotes":[{"type":"streamable-http","url":"https://a.example/mcp"}]},"_meta":{}}],"metadata":{"nextCursor":"c"}}`,
		strings.Repeat("[", 20000),
		`{"servers":[` + strings.Repeat(`{"server":{"name":"x"}},`, 100) + `{}]}`,
		"{\"servers\":[{\"server\":{\"name\":\"\xff\xfe\"}}]}",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		list, err := DecodePage(body, fuzzMaxPage)
		if err != nil {
			if !errors.Is(err, ErrNotRegistry) {
				t.Fatalf("error %v is not ErrNotRegistry", err)
			}
			return
		}
		if len(body) > fuzzMaxPage {
			t.Fatalf("accepted a %d-byte body over the %d-byte bound", len(body), fuzzMaxPage)
		}
		again, err := json.Marshal(list)
		if err != nil {
			t.Fatalf("an accepted page does not re-encode: %v", err)
		}
		back, err := DecodePage(again, int64(len(again)))
		if err != nil || len(back.Servers) != len(list.Servers) {
			t.Fatalf("re-encoded page: %d servers, %v; want %d", len(back.Servers), err, len(list.Servers))
		}
	})
}

// TestDecodePageRefusesOversizedBodies: the bound is checked before the
// body is looked at.
func TestDecodePageRefusesOversizedBodies(t *testing.T) {
	body := []byte(`{"servers":[]}` + strings.Repeat(" ", 100))
	if _, err := DecodePage(body, 50); !errors.Is(err, ErrNotRegistry) || !strings.Contains(err.Error(), "larger than 50 bytes") {
		t.Fatalf("DecodePage of %d bytes with a 50-byte bound: %v", len(body), err)
	}
}
