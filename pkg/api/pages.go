// Pagination and filters shared by every list: ?limit= (default 100, at
// most 1000), an opaque ?cursor= naming where the previous page ended
// (keyset paging: creates and deletes between pages never repeat or skip
// an item that exists throughout), ?selector= over endpoint labels and
// ?state=. A filter applies within the page the store reads, so a page may
// hold fewer than limit items — or none — while nextCursor says more
// remain; a client walks until a response has no nextCursor.

package api

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	apiv1 "github.com/mcpmon/mcpmon/pkg/api/v1"
)

// cursor is a page boundary. On the wire it is base64url of its JSON: a
// client must treat it as opaque. Kind binds it to one list, so a cursor of
// another list is refused rather than misread.
type cursor struct {
	V    int       `json:"v"`
	Kind string    `json:"k"`
	ID   string    `json:"id,omitempty"`
	At   time.Time `json:"at,omitzero"`
}

// Cursor kinds.
const (
	cursorEndpoints   = "endpoints"
	cursorIncidents   = "incidents"
	cursorVerdicts    = "verdicts"
	cursorMaintenance = "maintenance"
	cursorKeys        = "keys"
	cursorAudit       = "audit"
)

// cursorIDRE accepts the IDs the API hands out (RandomID, incident and
// audit IDs) and the ones tests and older versions chose.
var cursorIDRE = regexp.MustCompile(`^[A-Za-z0-9._:-]{1,200}$`)

func encodeCursor(c cursor) string {
	c.V = 1
	b, _ := json.Marshal(c) // a struct of strings and a time always marshals
	return base64.RawURLEncoding.EncodeToString(b)
}

// cutPage keeps the first limit items of a list read as limit+1 (one more
// means another page) and returns the next page's cursor, made from the
// last item kept; "" on the last page.
func cutPage[T any](items []T, limit int, at func(last T) cursor) ([]T, string) {
	if len(items) <= limit {
		return items, ""
	}
	items = items[:limit]
	return items, encodeCursor(at(items[limit-1]))
}

// pageParams reads ?limit= and ?cursor= for a list of the given kind. A
// cursor that is not one this list issued is a 400 naming `cursor`.
func pageParams(r *http.Request, kind string) (limit int, c *cursor, p *apiv1.Problem) {
	limit, p = limitParam(r)
	if p != nil {
		return 0, nil, p
	}
	raw := r.URL.Query().Get("cursor")
	if raw == "" {
		return limit, nil, nil
	}
	bad := invalid(apiv1.FieldError{Pointer: "?cursor", Detail: "is not a cursor of this list; pass nextCursor from the previous page unchanged, or omit it to start over"})
	if len(raw) > maxCursorLen {
		return 0, nil, bad
	}
	b, err := base64.RawURLEncoding.DecodeString(raw)
	if err != nil {
		return 0, nil, bad
	}
	checked, cp := checkJSON(b, bodyLimits)
	if cp != nil {
		return 0, nil, bad
	}
	var got cursor
	if decodeStrict(checked, &got) != nil || got.V != 1 || got.Kind != kind || (got.ID != "" && !cursorIDRE.MatchString(got.ID)) ||
		(!got.At.IsZero() && timeInRange(got.At) != "") {
		return 0, nil, bad
	}
	switch kind {
	case cursorVerdicts:
		if got.At.IsZero() || got.ID != "" {
			return 0, nil, bad
		}
	case cursorIncidents, cursorAudit:
		if got.At.IsZero() || got.ID == "" {
			return 0, nil, bad
		}
	default:
		if got.ID == "" || !got.At.IsZero() {
			return 0, nil, bad
		}
	}
	return limit, &got, nil
}

// requirement is one term of a label selector.
type requirement struct {
	key    string
	not    bool     // != and notin
	values []string // one for = and !=
}

// selector is a conjunction of requirements over labels; nil matches all.
type selector []requirement

// matches applies Kubernetes semantics: k=v needs the label with that
// value; k!=v (and notin) also matches an endpoint without the label.
func (s selector) matches(labels map[string]string) bool {
	for _, req := range s {
		v, ok := labels[req.key]
		in := ok && slices.Contains(req.values, v)
		if in == !req.not {
			continue
		}
		return false
	}
	return true
}

var setRE = regexp.MustCompile(`^([^\s=!(),]+)\s+(in|notin)\s+\(([^()]*)\)$`)

// parseSelector reads ?selector=: comma-joined terms k=v, k==v, k!=v,
// k in (a,b) and k notin (a,b). Label names and values follow the rules
// of endpoint labels.
func parseSelector(r *http.Request) (selector, *apiv1.Problem) {
	raw := strings.TrimSpace(r.URL.Query().Get("selector"))
	if raw == "" {
		return nil, nil
	}
	bad := func(format string, args ...any) *apiv1.Problem {
		return invalid(apiv1.FieldError{Pointer: "?selector", Detail: fmt.Sprintf(format, args...) +
			`; a selector is comma-joined terms such as "team=search,env!=dev,tier in (a,b)"`})
	}
	if len(raw) > maxSelectorLen {
		return nil, bad("at most %d bytes", maxSelectorLen)
	}
	var terms []string
	depth, start := 0, 0
	for i, c := range raw {
		switch c {
		case '(':
			depth++
		case ')':
			depth--
		case ',':
			if depth == 0 {
				terms = append(terms, raw[start:i])
				start = i + 1
			}
		}
		if depth < 0 || depth > 1 {
			return nil, bad("unbalanced parentheses")
		}
	}
	if depth != 0 {
		return nil, bad("unbalanced parentheses")
	}
	terms = append(terms, raw[start:])
	if len(terms) > maxSelectorTerms {
		return nil, bad("at most %d terms", maxSelectorTerms)
	}
	var sel selector
	for _, term := range terms {
		term = strings.TrimSpace(term)
		var req requirement
		if m := setRE.FindStringSubmatch(term); m != nil {
			req = requirement{key: m[1], not: m[2] == "notin"}
			for v := range strings.SplitSeq(m[3], ",") {
				if len(req.values) == maxSelectorInValues {
					return nil, bad("term %d: at most %d values in a set", len(sel)+1, maxSelectorInValues)
				}
				req.values = append(req.values, strings.TrimSpace(v))
			}
		} else if k, v, ok := strings.Cut(term, "!="); ok {
			req = requirement{key: strings.TrimSpace(k), not: true, values: []string{strings.TrimSpace(v)}}
		} else if k, v, ok := strings.Cut(term, "="); ok {
			req = requirement{key: strings.TrimSpace(k), values: []string{strings.TrimSpace(strings.TrimPrefix(v, "="))}}
		} else {
			return nil, bad("term %d has no operator (=, !=, in, notin)", len(sel)+1)
		}
		if len(req.key) > maxLabelKeyLen || !labelKeyRE.MatchString(req.key) {
			return nil, bad("term %d: label names match %s and are at most %d characters", len(sel)+1, labelKeyRE, maxLabelKeyLen)
		}
		for _, v := range req.values {
			if len(v) > maxLabelValLen || !utf8.ValidString(v) || strings.ContainsAny(v, "=!(),") || (v != "" && textProblem(v) != "") {
				return nil, bad("term %d: a value is valid UTF-8 of at most %d bytes without = ! ( ) , or control characters", len(sel)+1, maxLabelValLen)
			}
		}
		sel = append(sel, req)
	}
	return sel, nil
}

// stateParam reads ?state=: one of allowed, or several comma-joined.
func stateParam(r *http.Request, allowed []string) (map[string]bool, *apiv1.Problem) {
	raw := r.URL.Query().Get("state")
	if raw == "" {
		return nil, nil
	}
	out := map[string]bool{}
	for s := range strings.SplitSeq(raw, ",") {
		s = strings.TrimSpace(s)
		if !slices.Contains(allowed, s) {
			return nil, invalid(apiv1.FieldError{Pointer: "?state", Detail: "must be one or more (comma-joined) of " + strings.Join(allowed, ", ")})
		}
		out[s] = true
	}
	return out, nil
}
