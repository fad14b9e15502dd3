// Package jsonpath owns the small JSON-path dialect of a tool check's
// expectation: a path such as $.status, $.items[0].id or $["odd key"][2]
// selects one value of a decoded JSON document. Data enters as the path
// text (Parse, at registration and at probe time) and a document decoded
// with encoding/json; it leaves as the selected value.
//
// It is deliberately not JSONPath (RFC 9535): no wildcards, filters,
// slices or recursive descent — a tool check compares one value, and a
// dialect this small is easy to document and cannot blow up.
package jsonpath

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// ErrSyntax reports a path that does not parse.
var ErrSyntax = errors.New("invalid JSON path")

// MaxLen bounds a path's text.
const MaxLen = 256

// Path is a parsed path: object member names and array indexes in order.
type Path []Step

// Step is one member name (Index < 0) or one array index.
type Step struct {
	Name  string
	Index int
}

// Parse reads $ followed by .name, ["name"] or [index] steps. Names after a
// dot are letters, digits, '_' and '-'; other names use the bracket form.
func Parse(s string) (Path, error) {
	if len(s) > MaxLen {
		return nil, fmt.Errorf("%w: longer than %d characters", ErrSyntax, MaxLen)
	}
	if !strings.HasPrefix(s, "$") {
		return nil, fmt.Errorf("%w: must start with $", ErrSyntax)
	}
	var p Path
	rest := s[1:]
	for rest != "" {
		switch rest[0] {
		case '.':
			n := 1
			for n < len(rest) && isNameByte(rest[n]) {
				n++
			}
			if n == 1 {
				return nil, fmt.Errorf("%w: empty name after '.' at %q", ErrSyntax, rest)
			}
			p = append(p, Step{Name: rest[1:n], Index: -1})
			rest = rest[n:]
		case '[':
			end := strings.IndexByte(rest, ']')
			if end < 0 {
				return nil, fmt.Errorf("%w: unclosed '[' at %q", ErrSyntax, rest)
			}
			inner := rest[1:end]
			if strings.HasPrefix(inner, `"`) {
				// A quoted name may itself hold ']': find the closing quote.
				q, err := strconv.QuotedPrefix(rest[1:])
				if err != nil {
					return nil, fmt.Errorf("%w: bad quoted name at %q", ErrSyntax, rest)
				}
				name, _ := strconv.Unquote(q)
				if !strings.HasPrefix(rest[1+len(q):], "]") {
					return nil, fmt.Errorf("%w: expected ']' after %s", ErrSyntax, q)
				}
				p = append(p, Step{Name: name, Index: -1})
				rest = rest[2+len(q):]
				continue
			}
			i, err := strconv.Atoi(inner)
			if err != nil || i < 0 || i > 1<<20 {
				return nil, fmt.Errorf("%w: [%s] is neither an index nor a quoted name", ErrSyntax, inner)
			}
			p = append(p, Step{Index: i})
			rest = rest[end+1:]
		default:
			return nil, fmt.Errorf("%w: unexpected %q", ErrSyntax, rest)
		}
	}
	return p, nil
}

func isNameByte(c byte) bool {
	return c == '_' || c == '-' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// Select returns the value p selects in doc (as decoded by encoding/json
// into any) and whether it exists.
func (p Path) Select(doc any) (any, bool) {
	cur := doc
	for _, st := range p {
		if st.Index < 0 {
			m, ok := cur.(map[string]any)
			if !ok {
				return nil, false
			}
			if cur, ok = m[st.Name]; !ok {
				return nil, false
			}
			continue
		}
		a, ok := cur.([]any)
		if !ok || st.Index >= len(a) {
			return nil, false
		}
		cur = a[st.Index]
	}
	return cur, true
}

// String renders p in canonical form.
func (p Path) String() string {
	var b strings.Builder
	b.WriteByte('$')
	for _, st := range p {
		switch {
		case st.Index >= 0:
			fmt.Fprintf(&b, "[%d]", st.Index)
		case st.Name != "" && strings.IndexFunc(st.Name, func(r rune) bool { return r > 0x7f || !isNameByte(byte(r)) }) < 0:
			b.WriteString("." + st.Name)
		default:
			b.WriteString("[" + strconv.Quote(st.Name) + "]")
		}
	}
	return b.String()
}
