package model

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/mcpmon/mcpmon/pkg/schedule"
)

// This file is the one home of agent-side secret references: the
// placeholder ${agent:NAME} that stands, in an endpoint's header value,
// OAuth client ID or secret, or any string inside its tool arguments, for
// a value only the agent probing it knows (issue 24's
// secretRef: "agent:NAME"). The reference is a name, not a secret: the
// API stores and shows it as written; the agent substitutes its own
// values (pkg/agent) just before probing. Every function here is pure.
//
// Syntax: "${agent:" NAME "}" with NAME 1-64 of [A-Za-z0-9_.-], anywhere in
// the value, any number of times ("Bearer ${agent:billing-token}",
// "${agent:user}:${agent:pass}"). There is no escape: any "${agent:" starts
// a reference, and one not followed by a valid NAME and "}" makes the
// value malformed ("$${agent:x}" is a literal "$" then a reference).

// MaxSecretNameLen bounds a reference's NAME.
const MaxSecretNameLen = 64

const agentRefOpen = "${agent:"

// ErrBadAgentRef: a value holds "${agent:" without a valid NAME and "}".
var ErrBadAgentRef = errors.New("malformed agent secret reference")

// validSecretNameByte is [A-Za-z0-9_.-].
func validSecretNameByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '.' || c == '-'
}

// ValidSecretName reports whether name may name an agent-side secret.
func ValidSecretName(name string) bool {
	if name == "" || len(name) > MaxSecretNameLen {
		return false
	}
	for i := 0; i < len(name); i++ {
		if !validSecretNameByte(name[i]) {
			return false
		}
	}
	return true
}

// SecretEnvVar is the environment variable an agent reads the secret name
// from: MCPMON_AGENT_SECRET_ and name upper-cased, '-' and '.' as '_'.
func SecretEnvVar(name string) string {
	return "MCPMON_AGENT_SECRET_" + strings.NewReplacer("-", "_", ".", "_").Replace(strings.ToUpper(name))
}

// refPart is one piece of a parsed value: literal text, or a reference.
type refPart struct {
	lit  string
	name string // non-empty: a reference
}

// parseRefs splits s into literal text and references. The error names
// the byte offset, never the value (which may hold a secret).
func parseRefs(s string) ([]refPart, error) {
	var parts []refPart
	for rest, at := s, 0; ; {
		i := strings.Index(rest, agentRefOpen)
		if i < 0 {
			if rest != "" {
				parts = append(parts, refPart{lit: rest})
			}
			return parts, nil
		}
		if i > 0 {
			parts = append(parts, refPart{lit: rest[:i]})
		}
		name := rest[i+len(agentRefOpen):]
		n := 0
		for n < len(name) && n <= MaxSecretNameLen && validSecretNameByte(name[n]) {
			n++
		}
		if n == 0 || n > MaxSecretNameLen || n == len(name) || name[n] != '}' {
			return nil, fmt.Errorf("%w at byte %d: want ${agent:NAME}, NAME 1-%d of [A-Za-z0-9_.-]", ErrBadAgentRef, at+i, MaxSecretNameLen)
		}
		parts = append(parts, refPart{name: name[:n]})
		skip := i + len(agentRefOpen) + n + 1
		rest, at = rest[skip:], at+skip
	}
}

// AgentRefs returns the names s refers to, each once, in order of first
// use; an error if a reference in s is malformed.
func AgentRefs(s string) ([]string, error) {
	if !strings.Contains(s, agentRefOpen) {
		return nil, nil
	}
	parts, err := parseRefs(s)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, p := range parts {
		if p.name != "" && !slices.Contains(names, p.name) {
			names = append(names, p.name)
		}
	}
	return names, nil
}

// ExpandAgentRefs replaces every reference in s with lookup's value for
// its name. missing lists the names lookup lacks, each once in order of
// first use (their references are left as written); err is a malformed
// reference.
func ExpandAgentRefs(s string, lookup func(name string) (string, bool)) (out string, missing []string, err error) {
	if !strings.Contains(s, agentRefOpen) {
		return s, nil, nil
	}
	parts, err := parseRefs(s)
	if err != nil {
		return "", nil, err
	}
	var b strings.Builder
	for _, p := range parts {
		if p.name == "" {
			b.WriteString(p.lit)
			continue
		}
		v, ok := lookup(p.name)
		if !ok {
			if !slices.Contains(missing, p.name) {
				missing = append(missing, p.name)
			}
			v = agentRefOpen + p.name + "}"
		}
		b.WriteString(v)
	}
	return b.String(), missing, nil
}

// authSchemes may precede references in a value that is still agent-only:
// the scheme of an Authorization header says nothing secret.
var authSchemes = []string{"bearer ", "basic ", "token ", "apikey "}

// AgentOnly reports whether s holds at least one reference and nothing
// secret besides: between and around its references only separators
// (" :;,/="), and before the first an HTTP auth scheme ("Bearer "). Such a
// value needs no central secret: the API may show it as written and send
// it over plain HTTP. Any other text beside a reference is treated as a
// central secret.
func AgentOnly(s string) bool {
	if !strings.Contains(s, agentRefOpen) {
		return false
	}
	parts, err := parseRefs(s)
	if err != nil {
		return false
	}
	for i, p := range parts {
		if p.name != "" {
			continue
		}
		lit := p.lit
		if i == 0 {
			for _, scheme := range authSchemes {
				if len(lit) >= len(scheme) && strings.EqualFold(lit[:len(scheme)], scheme) {
					lit = lit[len(scheme):]
					break
				}
			}
		}
		if strings.Trim(lit, " :;,/=") != "" {
			return false
		}
	}
	return true
}

// walkJSONStrings calls f with every string value (not member names) of
// the JSON document raw, replacing it with f's result; it reports whether
// the document decoded. Numbers keep their text.
func walkJSONStrings(raw json.RawMessage, f func(string) string) (json.RawMessage, bool) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var doc any
	if dec.Decode(&doc) != nil {
		return nil, false
	}
	var walk func(v any) any
	walk = func(v any) any {
		switch t := v.(type) {
		case string:
			return f(t)
		case map[string]any:
			for k, c := range t {
				t[k] = walk(c)
			}
		case []any:
			for i, c := range t {
				t[i] = walk(c)
			}
		}
		return v
	}
	doc = walk(doc)
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	if enc.Encode(doc) != nil {
		return nil, false
	}
	return bytes.TrimSpace(out.Bytes()), true
}

// JSONLeavesAgentOnly reports whether raw holds at least one reference and
// every scalar it holds is an AgentOnly string (null aside): a tool
// check's arguments that need no central secret.
func JSONLeavesAgentOnly(raw json.RawMessage) bool {
	if !bytes.Contains(raw, []byte(agentRefOpen)) {
		return false
	}
	var doc any
	if json.Unmarshal(raw, &doc) != nil {
		return false
	}
	var only func(v any) bool
	only = func(v any) bool {
		switch t := v.(type) {
		case nil:
			return true
		case string:
			return AgentOnly(t)
		case map[string]any:
			for _, c := range t {
				if !only(c) {
					return false
				}
			}
			return true
		case []any:
			for _, c := range t {
				if !only(c) {
					return false
				}
			}
			return true
		}
		return false
	}
	return only(doc)
}

// AgentRefUse is one reference an endpoint makes: the field that holds it
// (a JSON pointer into the endpoint's API form, without "#/") and the name.
type AgentRefUse struct {
	Field string
	Name  string
}

// pointerToken escapes a JSON pointer token (RFC 6901).
func pointerToken(s string) string { return strings.NewReplacer("~", "~0", "/", "~1").Replace(s) }

// AgentRefs lists the references e makes, by field in a fixed order
// (headers sorted by name, then oauth/clientId, oauth/clientSecret,
// toolCheck/arguments), and the fields whose references are malformed.
// Field errors never quote a value.
func (e Endpoint) AgentRefs() ([]AgentRefUse, FieldErrors) {
	var uses []AgentRefUse
	var errs FieldErrors
	add := func(field, value string) {
		names, err := AgentRefs(value)
		if err != nil {
			errs = append(errs, FieldError{Field: field, Detail: err.Error()})
			return
		}
		for _, n := range names {
			uses = append(uses, AgentRefUse{Field: field, Name: n})
		}
	}
	for _, k := range slices.Sorted(maps.Keys(e.Headers)) {
		add("headers/"+pointerToken(k), e.Headers[k])
	}
	if o := e.OAuth; o != nil {
		add("oauth/clientId", o.ClientID)
		add("oauth/clientSecret", o.ClientSecret)
	}
	if tc := e.ToolCheck; tc != nil && bytes.Contains(tc.Arguments, []byte(agentRefOpen)) {
		var firstErr error
		var names []string
		walkJSONStrings(tc.Arguments, func(s string) string {
			ns, err := AgentRefs(s)
			if err != nil && firstErr == nil {
				firstErr = err
			}
			names = append(names, ns...)
			return s
		})
		slices.Sort(names)
		for _, n := range slices.Compact(names) {
			uses = append(uses, AgentRefUse{Field: "toolCheck/arguments", Name: n})
		}
		if firstErr != nil {
			errs = append(errs, FieldError{Field: "toolCheck/arguments", Detail: "a string value: " + firstErr.Error()})
		}
	}
	return uses, errs
}

// ValidateAgentRefs checks e's references: each well-formed, and, when e
// makes any, e probed by agents alone (every region a location, at least
// one), since no central prober holds an agent's secrets.
func ValidateAgentRefs(e Endpoint) FieldErrors {
	uses, errs := e.AgentRefs()
	if len(uses) == 0 || !schedule.Central(e.Regions) {
		return errs
	}
	return append(errs, FieldError{Field: "regions", Detail: fmt.Sprintf(
		"%s refers to the agent-side secret %q, which only agents hold: name agent locations only (regions: [\"loc-NAME\"]), or give the value itself",
		"#/"+uses[0].Field, uses[0].Name)})
}

// CentralSecrets reports whether probing e needs a secret the central
// service holds: a header value, OAuth client secret or tool argument that
// is not AgentOnly, or a credential-like query parameter of its URL.
func CentralSecrets(e Endpoint) bool {
	for _, v := range e.Headers {
		if !AgentOnly(v) {
			return true
		}
	}
	if o := e.OAuth; o != nil && o.ClientSecret != "" && !AgentOnly(o.ClientSecret) {
		return true
	}
	if tc := e.ToolCheck; tc != nil && len(tc.Arguments) > 0 && !JSONLeavesAgentOnly(tc.Arguments) {
		return true
	}
	return len(QuerySecrets(e.URL)) > 0
}

// ResolveAgentRefs returns e with every reference replaced by lookup's
// value (e itself is not changed), the values it put in (for scrubbing
// target text), and the names lookup lacks, sorted. err is a malformed reference
// (the API refuses those, so only a hand-made command has one).
func ResolveAgentRefs(e Endpoint, lookup func(name string) (string, bool)) (out Endpoint, values, missing []string, err error) {
	used := map[string]bool{}
	track := func(name string) (string, bool) {
		v, ok := lookup(name)
		if ok && !used[name] {
			used[name] = true
			values = append(values, v)
		}
		return v, ok
	}
	expand := func(s string) string {
		if err != nil {
			return s
		}
		v, miss, xerr := ExpandAgentRefs(s, track)
		if xerr != nil {
			err = xerr
			return s
		}
		for _, m := range miss {
			if !slices.Contains(missing, m) {
				missing = append(missing, m)
			}
		}
		return v
	}
	out = e
	if len(e.Headers) > 0 {
		out.Headers = make(map[string]string, len(e.Headers))
		for _, k := range slices.Sorted(maps.Keys(e.Headers)) {
			out.Headers[k] = expand(e.Headers[k])
		}
	}
	if o := e.OAuth; o != nil {
		oc := *o
		oc.ClientID, oc.ClientSecret = expand(o.ClientID), expand(o.ClientSecret)
		out.OAuth = &oc
	}
	if tc := e.ToolCheck; tc != nil && bytes.Contains(tc.Arguments, []byte(agentRefOpen)) {
		tcc := *tc
		args, ok := walkJSONStrings(tc.Arguments, expand)
		if !ok {
			return Endpoint{}, nil, nil, errors.New("tool check arguments are not JSON")
		}
		tcc.Arguments = args
		out.ToolCheck = &tcc
	}
	if err != nil {
		return Endpoint{}, nil, nil, err
	}
	slices.Sort(missing)
	return out, values, missing, nil
}
