package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"testing"
)

// nested is n arrays nested inside each other around inner.
func nested(n int, inner string) string {
	return strings.Repeat("[", n) + inner + strings.Repeat("]", n)
}

// TestCheckJSON: the door refuses nesting past 64 levels at "#" and a
// duplicate member at its pointer, at any depth, and lets everything else
// through (invalid JSON included: the decoder names its byte offset).
func TestCheckJSON(t *testing.T) {
	for _, tc := range []struct {
		name, body, pointer, detail string // pointer "" = accepted
	}{
		{"flat object", `{"a":1,"b":"x"}`, "", ""},
		{"64 levels", nested(64, "1"), "", ""},
		{"65 levels", nested(65, "1"), "#", "nested more than 64"},
		{"10,000 levels", `{"sinks":` + nested(9990, "") + `}`, "#", "nested more than 64"},
		{"unclosed 10,000 levels", strings.Repeat("[", 10000), "#", "nested more than 64"},
		{"brackets in strings do not count", `{"a":"` + strings.Repeat("[", 100) + `"}`, "", ""},
		{"escaped quote in string", `{"a":"\"[[[[","b":1}`, "", ""},
		{"invalid JSON passes to the decoder", `{"a":}`, "", ""},
		{"duplicate at the top", `{"url":"https://a","url":"http://b"}`, "#/url", "duplicate key"},
		{"duplicate deep inside", `{"sinks":[{"type":"x"},{"cfg":[[{"k":1,"k":2}]]}]}`, "#/sinks/1/cfg/0/0/k", "duplicate key"},
		{"escaped duplicate", `{"url":1,"\u0075rl":2}`, "#/url", "duplicate key"},
		{"invalid UTF-8 names decode alike", "{\"\xff\":1,\"\xfe\":2}", "#/\ufffd", "duplicate key"},
		{"pointer escapes", `{"a/b":{"~":1,"~":2}}`, "#/a~1b/~0", "duplicate key"},
		{"same name in sibling objects", `{"a":{"x":1},"b":{"x":1}}`, "", ""},
		{"same name at two depths", `{"x":{"x":{"x":1}}}`, "", ""},
		{"name equal to a value", `{"a":"b","b":"a"}`, "", ""},
		{"strings after empty objects in an array are values", `[{},"a",{},"a"]`, "", ""},
		{"strings after empty objects in a member", `{"s":[{},"x",{},"x"],"t":1}`, "", ""},
		{"duplicate after an empty object", `{"a":{},"b":1,"b":2}`, "#/b", "duplicate key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, p := checkJSON([]byte(tc.body))
			if tc.pointer == "" {
				if p != nil {
					t.Fatalf("refused: %+v", p.Errors)
				}
				return
			}
			if p == nil || p.Status != 400 || len(p.Errors) != 1 {
				t.Fatalf("got %+v, want one 400 field problem at %s", p, tc.pointer)
			}
			if fe := p.Errors[0]; fe.Pointer != tc.pointer || !strings.Contains(fe.Detail, tc.detail) {
				t.Fatalf("problem %+v, want pointer %q and a detail with %q", fe, tc.pointer, tc.detail)
			}
		})
	}
}

// TestDuplicateKeyAgreesWithTheDecoderWalk: the linear walk finds the
// same duplicate, at the same pointer, as a walk of the decoder's tokens.
func TestDuplicateKeyAgreesWithTheDecoderWalk(t *testing.T) {
	for _, body := range []string{
		`{"a":[1,{"b":2,"c":[{"d":1,"d":2}]}]}`,
		`[{"a":1},{"a":1,"a":2}]`,
		`{"a":{"b":1},"a":{"b":2}}`,
		`{"":1,"":2}`,
		`{"x\"y":1,"x\"y":2}`,
		`[[[],[[],{"q":{},"q":[]}]]]`,
	} {
		if got, want := duplicateKey([]byte(body)), oldDuplicateKey([]byte(body)); got != want {
			t.Errorf("%s: duplicateKey = %q, the decoder walk says %q", body, got, want)
		}
	}
}

// ---- the peer: the decoder-token walk the API used, building a pointer
// string per value (quadratic in depth), kept as the benchmark's baseline.

func oldDuplicateKey(body []byte) string {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if ptr, err := oldDupValue(dec, "#"); errors.Is(err, errOldDuplicate) {
		return ptr
	}
	return ""
}

var errOldDuplicate = errors.New("duplicate key")

func oldDupValue(dec *json.Decoder, ptr string) (string, error) {
	tok, err := dec.Token()
	if err != nil {
		return "", err
	}
	d, ok := tok.(json.Delim)
	if !ok {
		return "", nil
	}
	switch d {
	case '{':
		seen := map[string]bool{}
		for dec.More() {
			kt, err := dec.Token()
			if err != nil {
				return "", err
			}
			k, _ := kt.(string)
			kp := ptr + "/" + pointerEscape(k)
			if seen[k] {
				return kp, errOldDuplicate
			}
			seen[k] = true
			if p, err := oldDupValue(dec, kp); err != nil {
				return p, err
			}
		}
	case '[':
		for i := 0; dec.More(); i++ {
			if p, err := oldDupValue(dec, ptr+"/"+strconv.Itoa(i)); err != nil {
				return p, err
			}
		}
	}
	_, err = dec.Token()
	if errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF
	}
	return "", err
}

// benchBodies builds the three shapes at about size bytes: flat (one
// object of many string members), wide (an array of many small objects)
// and deep (objects nested 64 levels, repeated side by side).
func benchBodies(size int) map[string][]byte {
	var flat, wide, deep bytes.Buffer
	flat.WriteString("{")
	for i := 0; flat.Len() < size; i++ {
		if i > 0 {
			flat.WriteString(",")
		}
		fmt.Fprintf(&flat, `"member%d":"a value of some length"`, i)
	}
	flat.WriteString("}")
	wide.WriteString("[")
	for i := 0; wide.Len() < size; i++ {
		if i > 0 {
			wide.WriteString(",")
		}
		fmt.Fprintf(&wide, `{"id":%d,"name":"n","on":true}`, i)
	}
	wide.WriteString("]")
	one := strings.Repeat(`{"k":`, maxBodyDepth-1) + "1" + strings.Repeat("}", maxBodyDepth-1)
	deep.WriteString("[")
	for i := 0; deep.Len() < size; i++ {
		if i > 0 {
			deep.WriteString(",")
		}
		deep.WriteString(one)
	}
	deep.WriteString("]")
	return map[string][]byte{"flat": flat.Bytes(), "wide": wide.Bytes(), "deep64": deep.Bytes()}
}

// BenchmarkBodyCheck measures the door (checkJSON) against the decoder
// walk it replaced (old) on the same bodies, per shape and size: ns/op
// and B/op grow linearly with the size for checkJSON; MB/s is its cost
// per byte. Compare with benchstat, or read the ratio off the old/new
// pairs.
func BenchmarkBodyCheck(b *testing.B) {
	for _, size := range []int{1 << 10, 16 << 10, 256 << 10, 1 << 20} {
		bodies := benchBodies(size)
		for _, shape := range []string{"flat", "wide", "deep64"} {
			body := bodies[shape]
			if _, p := checkJSON(body); p != nil {
				b.Fatalf("%s %d: refused: %+v", shape, size, p.Errors)
			}
			name := fmt.Sprintf("%s/%dKiB", shape, size>>10)
			b.Run("new/"+name, func(b *testing.B) {
				b.SetBytes(int64(len(body)))
				b.ReportAllocs()
				for b.Loop() {
					_, _ = checkJSON(body)
				}
			})
			b.Run("old/"+name, func(b *testing.B) {
				b.SetBytes(int64(len(body)))
				b.ReportAllocs()
				for b.Loop() {
					_ = oldDuplicateKey(body)
				}
			})
		}
	}
	// The attack: 20 KB of arrays nested 9,990 deep (within encoding/json's
	// own limit), which checkJSON refuses at the 65th bracket.
	attack := []byte(`{"sinks":` + nested(9990, "") + `}`)
	b.Run("new/attack-9990-deep", func(b *testing.B) {
		b.SetBytes(int64(len(attack)))
		b.ReportAllocs()
		for b.Loop() {
			_, _ = checkJSON(attack)
		}
	})
	b.Run("old/attack-9990-deep", func(b *testing.B) {
		b.SetBytes(int64(len(attack)))
		b.ReportAllocs()
		for b.Loop() {
			_ = oldDuplicateKey(attack)
		}
	})
}
