package api

// bodycheck.go is the one check every JSON request body passes before
// anything interprets it (readBody calls it; decodeStrict and decodePatch
// take only what it returned): nesting at most maxBodyDepth levels, then
// valid JSON, then no object member named twice. Each step is one pass
// over the raw bytes whose time and memory are linear in the body's size,
// so the cost of a request is bounded by --max-body-bytes whatever its
// shape: a body of ten thousand nested arrays is refused after reading
// its first 65 bytes of brackets.

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	apiv1 "github.com/mcpmon/mcpmon/pkg/api/v1"
)

// checkedJSON is a body that passed checkJSON: valid JSON (or, for
// readBody's allowEmpty, nil), nested at most maxBodyDepth deep, with no
// duplicate member names. The decoders take only this type, so a body
// cannot reach them without the check.
type checkedJSON []byte

// checkJSON returns body as checkedJSON, or the 400 that refuses it.
// Invalid JSON that is not too deep passes as is: the decoder's syntax
// problem names the byte offset, which this check does not repeat.
func checkJSON(body []byte) (checkedJSON, *apiv1.Problem) {
	if nestingExceeds(body, maxBodyDepth) {
		return nil, invalid(apiv1.FieldError{Pointer: "#", Detail: fmt.Sprintf("JSON is nested more than %d levels deep", maxBodyDepth)})
	}
	if ptr := duplicateKey(body); ptr != "" {
		return nil, invalid(apiv1.FieldError{Pointer: ptr, Detail: "duplicate key: each member may appear once"})
	}
	return checkedJSON(body), nil
}

// nestingExceeds reports whether any point of body is inside more than
// limit open arrays and objects. Brackets inside strings do not count; on
// invalid JSON the count is still of the brackets outside strings, which
// is enough to refuse before the decoder's own depth (10,000) applies.
func nestingExceeds(body []byte, limit int) bool {
	depth := 0
	for i := 0; i < len(body); i++ {
		switch body[i] {
		case '{', '[':
			if depth++; depth > limit {
				return true
			}
		case '}', ']':
			depth--
		case '"':
			i = stringEnd(body, i)
		}
	}
	return false
}

// stringEnd returns the index of the quote closing the string that opens
// at body[start], or len(body) if it is not closed.
func stringEnd(body []byte, start int) int {
	for i := start + 1; i < len(body); i++ {
		switch body[i] {
		case '\\':
			i++
		case '"':
			return i
		}
	}
	return len(body)
}

// dupFrame is one open container of the walk: an array counts its
// elements, an object remembers its member names. Names are slices of the
// body (quotes included), decoded only to compare an escaped or non-UTF-8
// name and to spell the one pointer reported. An object of one member, the
// most common, costs no allocation: the set is made at the second name.
type dupFrame struct {
	obj   bool
	idx   int
	key   []byte // the current member's quoted name
	names map[string]struct{}
}

// seen records the frame's current name and reports whether an earlier
// member had it; prev is the previous member's quoted name (nil for the
// first).
func (f *dupFrame) seen(prev []byte) bool {
	if prev == nil {
		return false
	}
	if f.names == nil {
		f.names = map[string]struct{}{}
		f.add(prev)
	}
	return f.add(f.key)
}

// add puts a quoted name into the set and reports whether it was there.
func (f *dupFrame) add(quoted []byte) bool {
	if raw := quoted[1 : len(quoted)-1]; plainName(raw) {
		// string(raw) as a map index does not copy; the insert does.
		if _, dup := f.names[string(raw)]; dup {
			return true
		}
		f.names[string(raw)] = struct{}{}
		return false
	}
	name := decodeName(quoted)
	if _, dup := f.names[name]; dup {
		return true
	}
	f.names[name] = struct{}{}
	return false
}

// duplicateKey returns the JSON pointer of the first object member whose
// name repeats an earlier member of the same object, or "" if none does or
// body is not valid JSON (the decoder reports that). encoding/json keeps
// the last of two duplicates silently, so {"url":"https://ok","url":
// "http://internal"} would be checked by one reader and used by another.
// Names compare as encoding/json decodes them: "a" and "\u0061" are the
// same member, and so are two names whose invalid UTF-8 both decode to
// U+FFFD.
func duplicateKey(body []byte) string {
	if !json.Valid(body) {
		return ""
	}
	var stack []dupFrame
	expectKey := false // the next string is a member name
	for i := 0; i < len(body); i++ {
		switch c := body[i]; c {
		case '{':
			stack = append(stack, dupFrame{obj: true})
			expectKey = true
		case '[':
			stack = append(stack, dupFrame{})
		case '}', ']':
			// An empty object leaves expectKey set: clear it, or the next
			// string of the enclosing array would count as a member name.
			stack = stack[:len(stack)-1]
			expectKey = false
		case ',':
			if top := &stack[len(stack)-1]; top.obj {
				expectKey = true
			} else {
				top.idx++
			}
		case '"':
			end := stringEnd(body, i)
			if expectKey {
				top := &stack[len(stack)-1]
				prev := top.key
				top.key = body[i : end+1]
				if top.seen(prev) {
					return pointerOf(stack)
				}
				expectKey = false
			}
			i = end
		}
	}
	return ""
}

// plainName reports whether a member name's bytes (between the quotes)
// are what encoding/json decodes them to: no escape, valid UTF-8.
func plainName(raw []byte) bool {
	ascii := true
	for _, c := range raw {
		switch {
		case c == '\\':
			return false
		case c >= utf8.RuneSelf:
			ascii = false
		}
	}
	return ascii || utf8.Valid(raw)
}

// decodeName is a quoted member name as encoding/json decodes it.
func decodeName(quoted []byte) string {
	if raw := quoted[1 : len(quoted)-1]; plainName(raw) {
		return string(raw)
	}
	var s string
	_ = json.Unmarshal(quoted, &s) // valid: duplicateKey checked the body
	return s
}

// pointerOf spells the JSON pointer of the walk's position: one segment
// per open container, built once, for the duplicate reported.
func pointerOf(stack []dupFrame) string {
	var b strings.Builder
	b.WriteString("#")
	for _, f := range stack {
		b.WriteByte('/')
		if f.obj {
			b.WriteString(pointerEscape(decodeName(f.key)))
		} else {
			b.WriteString(strconv.Itoa(f.idx))
		}
	}
	return b.String()
}
