package api

// bodycheck.go is the one check every JSON request body passes before
// anything interprets it (readBody calls it; decodeStrict and decodePatch
// take only what it returned), and decodeStrict's exact-name check after
// it. checkJSON is one pass over the raw bytes that refuses, at the first
// byte past a cap: nesting deeper than bodyCaps.depth, an object or array
// of more than bodyCaps.members, more than bodyCaps.values values in the
// whole body, a string (name or value) that is not valid UTF-8, and an
// object member named twice. The pass stops at the refusal, and its
// memory is its stack of open containers plus, per object, the set of
// names seen (at most bodyCaps.members): a body of 90,000 labels costs the
// bytes up to its 1,025th member and no decoded value.
//
// Invalid JSON is not this pass's business: where the bytes stop making
// sense (a name that is not a string, a close with nothing open, an
// unclosed string) it hands the body on as is, and the decoder's syntax
// problem names the byte offset. The decoder checks the whole value
// before it builds anything, so it never builds a body this pass did not
// see through.

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"

	apiv1 "github.com/mcpmon/mcpmon/pkg/api/v1"
)

// checkedJSON is a body that passed checkJSON: within its caps, valid
// UTF-8, no duplicate member names (or, for readBody's allowEmpty, nil).
// It may still be invalid JSON. The decoders take only this type, so a
// body cannot reach them without the check.
type checkedJSON []byte

// bodyCaps bound the shape of one request body (caps.go has the values
// and why).
type bodyCaps struct {
	depth   int // open arrays and objects at any point
	members int // members of one object, elements of one array
	values  int // values in the whole body, containers included
}

// checkJSON returns body as checkedJSON, or the 400 that refuses it, with
// the JSON pointer of where the body broke a rule.
func checkJSON(body []byte, caps bodyCaps) (checkedJSON, *apiv1.Problem) {
	var stack []scanFrame
	values := 0
	lx := lexer{body: body}
	for {
		tok := lx.next()
		switch tok.kind {
		case tokEnd, tokInvalid:
			return checkedJSON(body), nil
		case tokClose:
			stack = stack[:len(stack)-1]
			continue
		case tokName:
			top := &stack[len(stack)-1]
			if top.n++; top.n > caps.members {
				return nil, bodyProblem(pointerOf(stack[:len(stack)-1]), fmt.Sprintf("at most %d members in one object", caps.members))
			}
			prev := top.key
			top.key = body[tok.start : tok.end+1]
			if tok.special && !validText(body[tok.start+1:tok.end]) {
				return nil, bodyProblem(pointerOf(stack[:len(stack)-1]), "member names must be valid UTF-8 (an unpaired \\u surrogate is not)")
			}
			if top.seen(prev) {
				return nil, bodyProblem(pointerOf(stack), "duplicate key: each member may appear once")
			}
			continue
		}
		// A value starts: an element of an array is counted here, a
		// member of an object at its name.
		if len(stack) > 0 {
			if top := &stack[len(stack)-1]; !top.obj {
				if top.n++; top.n > caps.members {
					return nil, bodyProblem(pointerOf(stack[:len(stack)-1]), fmt.Sprintf("at most %d elements in one array", caps.members))
				}
			}
		}
		if values++; values > caps.values {
			return nil, bodyProblem(pointerOf(stack), fmt.Sprintf("the body may hold at most %d JSON values in all", caps.values))
		}
		switch tok.kind {
		case tokOpenObject, tokOpenArray:
			stack = append(stack, scanFrame{obj: tok.kind == tokOpenObject})
			if len(stack) > caps.depth {
				return nil, bodyProblem("#", fmt.Sprintf("JSON is nested more than %d levels deep", caps.depth))
			}
		case tokString:
			if tok.special && !validText(body[tok.start+1:tok.end]) {
				return nil, bodyProblem(pointerOf(stack), "must be valid UTF-8 (an unpaired \\u surrogate is not)")
			}
		}
	}
}

func bodyProblem(pointer, detail string) *apiv1.Problem {
	return invalid(apiv1.FieldError{Pointer: pointer, Detail: detail})
}

// ---- the lexer: tokens of a JSON text, and where they stop making sense

type tokKind uint8

const (
	tokEnd        tokKind = iota // end of the body
	tokInvalid                   // the bytes are not JSON here; the decoder says where
	tokOpenObject                // {
	tokOpenArray                 // [
	tokClose                     // } or ]
	tokName                      // an object member's name
	tokString                    // a string value
	tokScalar                    // a number, true, false or null (or garbage the decoder refuses)
)

// token is one token; for names and strings, start and end are the
// indices of the quotes, and special says the string holds a byte of
// 0x80 or more or a \u escape, the only ways to spell text that is not
// valid UTF-8.
type token struct {
	kind       tokKind
	start, end int
	special    bool
}

// lexer splits a JSON text into tokens, telling a member's name from a
// string value. It checks only what it needs to tell them apart; the
// decoder checks the grammar. open holds, per open container, whether it
// is an object.
type lexer struct {
	body     []byte
	i        int
	open     []bool
	wantName bool // the next token of the open object is a name (or its close)
}

func (lx *lexer) next() token {
	for ; lx.i < len(lx.body); lx.i++ {
		switch c := lx.body[lx.i]; c {
		case ' ', '\t', '\n', '\r', ':':
			continue
		case ',':
			lx.wantName = len(lx.open) > 0 && lx.open[len(lx.open)-1]
			continue
		case '}', ']':
			if len(lx.open) == 0 || lx.open[len(lx.open)-1] != (c == '}') {
				return token{kind: tokInvalid}
			}
			// An empty object leaves wantName set: clear it, or the next
			// string of the enclosing array would count as a member name.
			lx.open = lx.open[:len(lx.open)-1]
			lx.wantName = false
			lx.i++
			return token{kind: tokClose}
		case '"':
			end, special := stringEnd(lx.body, lx.i)
			if end == len(lx.body) {
				return token{kind: tokInvalid}
			}
			t := token{kind: tokString, start: lx.i, end: end, special: special}
			if lx.wantName {
				t.kind, lx.wantName = tokName, false
			}
			lx.i = end + 1
			return t
		}
		if lx.wantName {
			return token{kind: tokInvalid}
		}
		switch c := lx.body[lx.i]; c {
		case '{', '[':
			lx.open = append(lx.open, c == '{')
			lx.wantName = c == '{'
			lx.i++
			if c == '{' {
				return token{kind: tokOpenObject}
			}
			return token{kind: tokOpenArray}
		}
		start := lx.i
		for lx.i < len(lx.body) && !endsScalar(lx.body[lx.i]) {
			lx.i++
		}
		return token{kind: tokScalar, start: start, end: lx.i}
	}
	return token{kind: tokEnd}
}

// endsScalar reports the bytes that end a number or literal.
func endsScalar(c byte) bool {
	switch c {
	case ' ', '\t', '\n', '\r', ',', ':', '[', ']', '{', '}', '"':
		return true
	}
	return false
}

// stringEnd returns the index of the quote closing the string that opens
// at body[start] (len(body) if it is not closed), and whether the string
// holds a byte of 0x80 or more or a \u escape.
func stringEnd(body []byte, start int) (end int, special bool) {
	for i := start + 1; i < len(body); i++ {
		switch c := body[i]; {
		case c == '\\':
			if i+1 < len(body) && body[i+1] == 'u' {
				special = true
			}
			i++
		case c == '"':
			return i, special
		case c >= utf8.RuneSelf:
			special = true
		}
	}
	return len(body), special
}

// validText reports whether a string's raw bytes (between the quotes)
// decode to valid UTF-8: the bytes themselves are, and every \u escape of
// a surrogate is a high one followed by a low one. encoding/json turns
// either fault into U+FFFD without a word, so "ab\xff" would be stored
// as something the client never sent. A malformed escape counts as valid
// here: it is a syntax error the decoder reports.
func validText(raw []byte) bool {
	if !utf8.Valid(raw) {
		return false
	}
	for i := 0; i < len(raw); i++ {
		if raw[i] != '\\' {
			continue
		}
		if i++; i >= len(raw) || raw[i] != 'u' {
			continue
		}
		r, ok := hex4(raw[i+1:])
		if !ok {
			return true
		}
		i += 4
		switch {
		case r >= 0xDC00 && r <= 0xDFFF:
			return false // a low surrogate alone
		case r >= 0xD800 && r <= 0xDBFF:
			if i+6 >= len(raw) || raw[i+1] != '\\' || raw[i+2] != 'u' {
				return false
			}
			lo, ok := hex4(raw[i+3:])
			if ok && (lo < 0xDC00 || lo > 0xDFFF) {
				return false
			}
			i += 6
		}
	}
	return true
}

// hex4 reads the four hex digits of a \u escape.
func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	n, err := strconv.ParseUint(string(b[:4]), 16, 16)
	return rune(n), err == nil
}

// nestingExceeds reports whether any point of body is inside more than
// limit open arrays and objects (brackets inside strings do not count).
// The tool check's arguments are held to their own depth with it.
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
			i, _ = stringEnd(body, i)
		}
	}
	return false
}

// ---- duplicate names

// scanFrame is one open container of checkJSON's walk: n counts its
// members or elements; an object remembers its current member's name and
// the names seen. Names are slices of the body (quotes included), decoded
// only to compare an escaped name and to spell the one pointer reported.
// An object of one member, the most common, costs no allocation: the set
// is made at the second name.
type scanFrame struct {
	obj   bool
	n     int
	key   []byte // the current member's quoted name
	names map[string]struct{}
}

// seen records the frame's current name and reports whether an earlier
// member had it; prev is the previous member's quoted name (nil for the
// first). Names compare as encoding/json decodes them: "a" and "\u0061"
// are the same member. encoding/json keeps the last of two duplicates
// silently, so {"url":"https://ok","url":"http://internal"} would be
// checked by one reader and used by another.
func (f *scanFrame) seen(prev []byte) bool {
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
func (f *scanFrame) add(quoted []byte) bool {
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

// decodeName is a quoted member name as encoding/json decodes it ("" if
// it does not decode: the decoder refuses the body).
func decodeName(quoted []byte) string {
	if len(quoted) < 2 {
		return ""
	}
	if raw := quoted[1 : len(quoted)-1]; plainName(raw) {
		return string(raw)
	}
	var s string
	_ = json.Unmarshal(quoted, &s)
	return s
}

// pointerOf spells the JSON pointer of the walk's position: one segment
// per open container, built once, for the problem reported.
func pointerOf(stack []scanFrame) string {
	var b strings.Builder
	b.WriteString("#")
	for _, f := range stack {
		b.WriteByte('/')
		if f.obj {
			b.WriteString(pointerEscape(decodeName(f.key)))
		} else {
			b.WriteString(strconv.Itoa(f.n - 1))
		}
	}
	return b.String()
}

// ---- exact member names

// inexactName returns the problem for the first member name of body that
// is no field's name of dst's type exactly, or nil. encoding/json matches
// names case-insensitively, so {"name":"a","NAME":"b"} passes the
// duplicate check and DisallowUnknownFields and decodes as name "b", and
// a PATCH of {"URL": …} answers 200 and changes nothing; the schemas say
// additionalProperties: false. decodeStrict calls it after a successful
// decode: the body is valid JSON within its caps then, so the walk is
// bounded. Maps take any name; json.RawMessage, interfaces and anything
// with its own UnmarshalJSON are not looked into.
func inexactName(body checkedJSON, dst reflect.Type) *apiv1.Problem {
	var pos []scanFrame    // where the walk is, for the pointer
	var shapes []jsonShape // what each open container holds
	fields := map[reflect.Type]map[string]reflect.Type{}
	lx := lexer{body: body}
	for {
		tok := lx.next()
		switch tok.kind {
		case tokEnd, tokInvalid:
			return nil
		case tokClose:
			pos, shapes = pos[:len(pos)-1], shapes[:len(shapes)-1]
			continue
		case tokName:
			top, sh := &pos[len(pos)-1], &shapes[len(shapes)-1]
			top.n++
			top.key = body[tok.start : tok.end+1]
			if sh.fields == nil {
				sh.next = sh.elem
				continue
			}
			name := decodeName(top.key)
			t, ok := sh.fields[name]
			if !ok {
				detail := "unknown field"
				for f := range sh.fields {
					if strings.EqualFold(f, name) {
						detail = fmt.Sprintf("unknown field: names are case-sensitive; did you mean %q?", f)
					}
				}
				return bodyProblem(pointerOf(pos), detail)
			}
			sh.next = t
			continue
		}
		t := dst
		if len(pos) > 0 {
			if top, sh := &pos[len(pos)-1], &shapes[len(shapes)-1]; top.obj {
				t = sh.next
			} else {
				top.n++
				t = sh.elem
			}
		}
		if tok.kind == tokOpenObject || tok.kind == tokOpenArray {
			pos = append(pos, scanFrame{obj: tok.kind == tokOpenObject})
			shapes = append(shapes, shapeOf(t, tok.kind == tokOpenObject, fields))
		}
	}
}

// jsonShape is what encoding/json decodes one object or array into:
// fields for a struct (by JSON name), elem for a map or slice, neither
// for a value whose members are not checked.
type jsonShape struct {
	fields map[string]reflect.Type
	elem   reflect.Type
	next   reflect.Type // the type of the current member's value
}

var jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()

// shapeOf is the shape of an object (obj) or array decoded into t (nil:
// unchecked); cache holds the field sets of the structs seen.
func shapeOf(t reflect.Type, obj bool, cache map[reflect.Type]map[string]reflect.Type) jsonShape {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || reflect.PointerTo(t).Implements(jsonUnmarshaler) {
		return jsonShape{}
	}
	switch {
	case obj && t.Kind() == reflect.Struct:
		fs, ok := cache[t]
		if !ok {
			fs = map[string]reflect.Type{}
			structFields(t, fs)
			cache[t] = fs
		}
		return jsonShape{fields: fs}
	case obj && t.Kind() == reflect.Map, !obj && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array):
		return jsonShape{elem: t.Elem()}
	}
	return jsonShape{}
}

// structFields adds t's fields to fs by the names encoding/json decodes
// them from: the tag's name, else the Go name; an untagged embedded
// struct's fields as the struct's own, its own fields winning.
func structFields(t reflect.Type, fs map[string]reflect.Type) {
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if !f.Anonymous || name != "" {
			continue
		}
		if et := f.Type; et.Kind() == reflect.Struct || et.Kind() == reflect.Pointer && et.Elem().Kind() == reflect.Struct {
			if et.Kind() == reflect.Pointer {
				et = et.Elem()
			}
			structFields(et, fs)
		}
	}
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		name, _, _ := strings.Cut(tag, ",")
		if tag == "-" || !f.IsExported() || f.Anonymous && name == "" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		fs[name] = f.Type
	}
}
