package declarative

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	apiv1 "github.com/mcpmon/mcpmon/pkg/api/v1"
	"github.com/mcpmon/mcpmon/pkg/model"
)

// refRE matches a reference: ${env:NAME} or ${file:PATH}.
var refRE = regexp.MustCompile(`\$\{(env|file):([^}]+)\}`)

// Resolver fills in references. Env looks up an environment variable
// (ok false: unset; nil: every variable is unset); ReadFile reads a file
// (nil: os.ReadFile); EvalSymlinks resolves a path's symbolic links (nil:
// filepath.EvalSymlinks). They are injected so the pure part stays
// testable.
//
// The files Resolve reads are untrusted input (a GitOps pull request is
// applied with an admin key), so unless Trusted is set their references
// are confined (ConfineRef): ${env:NAME} reads only the variables AllowEnv
// names, and ${file:PATH} only files inside the declaring file's directory.
type Resolver struct {
	Env          func(name string) (string, bool)
	ReadFile     func(path string) ([]byte, error)
	EvalSymlinks func(path string) (string, error)
	// RedactSinks is the server's sinks redactor (the daemon wires
	// alerter/sinks.RedactEndpointSinks): a sink member it hides is a
	// secret and must come from a reference. Nil uses model.RedactSinks.
	RedactSinks func(json.RawMessage) json.RawMessage
	// AllowEnv are the variables a confined ${env:} may read: exact names,
	// or prefixes ending in "_" (nil: DefaultAllowEnv).
	AllowEnv []string
	// Trusted lifts the confinement: the references come from the
	// operator's own command line (endpoints add, probe), not a file
	// someone else may have written.
	Trusted bool
	// Where says where the endpoint's values were written, in the errors
	// that refuse a literal secret: "" is apply's "in the file"; the CLI's
	// flags are "on the command line". (A sinks document is a file either
	// way.)
	Where string
}

// writtenIn is Where, or the file.
func (r Resolver) writtenIn() string {
	if r.Where == "" {
		return "in the file"
	}
	return r.Where
}

// DefaultAllowEnv is what a confined ${env:} reads when the operator
// allows nothing else: the variables export names (PlaceholderName).
var DefaultAllowEnv = []string{"MCPMON_APPLY_"}

// selfPrefix names the variables that configure mcpmon itself: the CLI's
// credentials (MCPMON_TOKEN, MCPMON_SERVER) and every server flag
// (MCPMON_SECRETS_KEY, MCPMON_WEBHOOK_SECRET, …). A confined reference
// never reads one, whatever AllowEnv says, except under DefaultAllowEnv's
// prefix, which is apply's own.
const selfPrefix = "MCPMON_"

// envAllowed decides whether a confined ${env:name} may be read.
func envAllowed(name string, allow []string) error {
	if allow == nil {
		allow = DefaultAllowEnv
	}
	if strings.HasPrefix(name, selfPrefix) && !strings.HasPrefix(name, DefaultAllowEnv[0]) {
		return fmt.Errorf("${env:%s}: variables named %s* configure mcpmon itself (its API key, its flags) and apply never reads them; give the secret its own variable, e.g. %s%s", name, selfPrefix, DefaultAllowEnv[0], strings.TrimPrefix(name, selfPrefix))
	}
	for _, a := range allow {
		if name == a || (strings.HasSuffix(a, "_") && strings.HasPrefix(name, a)) {
			return nil
		}
	}
	return fmt.Errorf("${env:%s}: apply reads only the variables --allow-env names (now: %s); pass --allow-env %s if this file may read it", name, strings.Join(allowList(allow), ", "), name)
}

func allowList(allow []string) []string {
	out := make([]string, len(allow))
	for i, a := range allow {
		if strings.HasSuffix(a, "_") {
			a += "*"
		}
		out[i] = a
	}
	return out
}

// ErrRefOutside: a confined ${file:} points outside the directory of the
// file that declares it.
var ErrRefOutside = errors.New("outside the directory of the file that declares it")

// ConfineRef decides which file a confined ${file:arg} declared in a file
// of directory base reads: arg (relative to base, or absolute) must name a
// file inside base once cleaned, and still once every symbolic link of
// both is resolved (eval). It returns the resolved path to read.
func ConfineRef(base, arg string, eval func(string) (string, error)) (string, error) {
	if eval == nil {
		eval = filepath.EvalSymlinks
	}
	absBase, err := filepath.Abs(base)
	if err != nil {
		return "", fmt.Errorf("${file:%s}: %w", arg, err)
	}
	p := arg
	if !filepath.IsAbs(p) {
		p = filepath.Join(absBase, p)
	}
	p = filepath.Clean(p)
	refuse := func() error {
		return fmt.Errorf("${file:%s}: %w (%s); keep the secret's file beside the YAML file or below it", arg, ErrRefOutside, base)
	}
	if !within(absBase, p) {
		return "", refuse()
	}
	realBase, err := eval(absBase)
	if err != nil {
		return "", fmt.Errorf("${file:%s}: %w", arg, err)
	}
	real, err := eval(p)
	if err != nil {
		return "", fmt.Errorf("${file:%s}: %w", arg, err)
	}
	if !within(realBase, real) {
		return "", refuse()
	}
	return real, nil
}

// within reports whether clean absolute path p is dir or below it.
func within(dir, p string) bool {
	rel, err := filepath.Rel(dir, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

// hasRef reports whether s contains a reference.
func hasRef(s string) bool { return refRE.MatchString(s) }

// expand replaces every reference in s. base is the directory ${file:}
// paths are relative to.
func (r Resolver) expand(s, base string) (string, error) {
	var firstErr error
	out := refRE.ReplaceAllStringFunc(s, func(m string) string {
		sub := refRE.FindStringSubmatch(m)
		kind, arg := sub[1], strings.TrimSpace(sub[2])
		switch kind {
		case "env":
			var v string
			ok := false
			if !r.Trusted {
				if err := envAllowed(arg, r.AllowEnv); err != nil {
					if firstErr == nil {
						firstErr = err
					}
					return ""
				}
			}
			if r.Env != nil {
				v, ok = r.Env(arg)
			}
			if !ok && firstErr == nil {
				firstErr = fmt.Errorf("${env:%s}: the environment variable is not set", arg)
			}
			return v
		default:
			p := arg
			if !filepath.IsAbs(p) {
				p = filepath.Join(base, p)
			}
			if !r.Trusted {
				var err error
				if p, err = ConfineRef(base, arg, r.EvalSymlinks); err != nil {
					if firstErr == nil {
						firstErr = err
					}
					return ""
				}
			}
			read := r.ReadFile
			if read == nil {
				read = os.ReadFile
			}
			b, err := read(p)
			if err != nil && firstErr == nil {
				firstErr = fmt.Errorf("${file:%s}: %w", arg, err)
			}
			return strings.TrimRight(string(b), "\r\n")
		}
	})
	return out, firstErr
}

// Secret resolves one secret given on a command line: value must contain a
// reference (${env:NAME} or ${file:PATH}, relative to the working
// directory), so the secret itself never sits in argv or shell history.
// field names the flag in the error.
func (r Resolver) Secret(field, value string) (string, error) {
	if !hasRef(value) {
		return "", fmt.Errorf("%s: a secret must come from ${env:NAME} or ${file:PATH}, not be written on the command line", field)
	}
	r.Trusted = true // the operator's own command line
	v, err := r.expand(value, ".")
	if err != nil {
		return "", fmt.Errorf("%s: %w", field, err)
	}
	return v, nil
}

// Resolve returns the endpoints with every reference filled in, after
// checking that each secret comes from one: header values, the values of
// credential-like URL query parameters (key, token, sig, …) and the sink
// members the server redacts. A literal secret is an error naming the
// field, so secrets stay out of files that get committed.
func (r Resolver) Resolve(ds []Desired) ([]apiv1.EndpointInput, error) {
	redact := r.RedactSinks
	if redact == nil {
		redact = model.RedactSinks
	}
	out := make([]apiv1.EndpointInput, 0, len(ds))
	for _, d := range ds {
		in, err := r.resolveOne(d, redact)
		if err != nil && d.Input.Name == "" { // an edit that keeps the name: no `endpoint ""`
			return nil, fmt.Errorf("%s: %w", d.Source, err)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: endpoint %q: %w", d.Source, d.Input.Name, err)
		}
		out = append(out, in)
	}
	return out, nil
}

func (r Resolver) resolveOne(d Desired, redact func(json.RawMessage) json.RawMessage) (apiv1.EndpointInput, error) {
	in := d.Input
	base := filepath.Dir(d.Source)
	var err error

	if bad := literalURLSecret(in.URL); bad != "" {
		return in, fmt.Errorf("url: query parameter %q holds a literal secret; write its value as ${env:NAME} or ${file:PATH}", bad)
	}
	if in.URL, err = r.expand(in.URL, base); err != nil {
		return in, fmt.Errorf("url: %w", err)
	}
	if len(in.Headers) > 0 {
		hs := make(map[string]string, len(in.Headers))
		for _, k := range slices.Sorted(maps.Keys(in.Headers)) {
			v := in.Headers[k]
			// An agent-side reference (${agent:NAME}) is a name, not a
			// secret: the agent probing the endpoint fills it in.
			if !hasRef(v) && !model.AgentOnly(v) {
				return in, fmt.Errorf("headers.%s: header values are secrets and must come from ${env:NAME} or ${file:PATH} (e.g. \"Bearer ${env:TOKEN}\"), or from the probing agent as ${agent:NAME}, not be written %s", k, r.writtenIn())
			}
			if hs[k], err = r.expand(v, base); err != nil {
				return in, fmt.Errorf("headers.%s: %w", k, err)
			}
		}
		in.Headers = hs
	}
	if err := r.resolveDeep(&in, base); err != nil {
		return in, err
	}
	for _, f := range []*string{&in.Name, &in.Schedule, &in.Timeout, &in.Slug} {
		if hasRef(*f) {
			return in, fmt.Errorf("references are only for secrets (url, headers, sinks, toolCheck.arguments, oauth.clientSecret): found one in %q", *f)
		}
	}
	if s := bytes.TrimSpace(in.Sinks); len(s) > 0 && string(s) != "null" {
		resolved, err := r.resolveSinks(s, base, redact)
		if err != nil {
			return in, err
		}
		in.Sinks = resolved
	} else {
		in.Sinks = nil
	}
	return in, nil
}

// literalURLSecret names the first credential-like query parameter of raw
// (as model.RedactURL sees them) whose value is not a reference, or "".
func literalURLSecret(raw string) string {
	red := model.RedactURL(raw)
	if red == raw {
		return ""
	}
	_, rq, _ := strings.Cut(raw, "?")
	_, dq, _ := strings.Cut(red, "?")
	rp, dp := strings.Split(rq, "&"), strings.Split(dq, "&")
	for i := range rp {
		if i < len(dp) && rp[i] != dp[i] {
			name, val, _ := strings.Cut(rp[i], "=")
			if !isWholeRef(val) {
				return name
			}
		}
	}
	return ""
}

func isWholeRef(s string) bool {
	loc := refRE.FindStringIndex(s)
	return loc != nil && loc[0] == 0 && loc[1] == len(s)
}

// resolveSinks resolves the references of a sinks document and checks
// that every member the redactor hides came from one.
func (r Resolver) resolveSinks(raw []byte, base string, redact func(json.RawMessage) json.RawMessage) (json.RawMessage, error) {
	var doc any
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, fmt.Errorf("sinks: %w", err)
	}
	var walkErr error
	resolved := mapStrings(doc, "sinks", func(path, s string) string {
		v, err := r.expand(s, base)
		if err != nil && walkErr == nil {
			walkErr = fmt.Errorf("%s: %w", path, err)
		}
		return v
	})
	if walkErr != nil {
		return nil, walkErr
	}
	out, err := json.Marshal(resolved)
	if err != nil {
		return nil, fmt.Errorf("sinks: %w", err)
	}
	var red any
	if rb := redact(out); len(rb) > 0 && json.Unmarshal(rb, &red) == nil {
		if bad := literalSecret(doc, red, "sinks"); bad != "" {
			return nil, fmt.Errorf("%s: a sink secret (URL with a token, key, secret, password) must come from ${env:NAME} or ${file:PATH}, not be written in the file", bad)
		}
	}
	return out, nil
}

// literalSecret walks the raw document beside its redacted form and
// returns the path of the first string the redactor hid that is not from a
// reference, or "".
func literalSecret(raw, red any, path string) string {
	switch t := raw.(type) {
	case map[string]any:
		rm, _ := red.(map[string]any)
		for _, k := range slices.Sorted(maps.Keys(t)) {
			if p := literalSecret(t[k], rm[k], path+"."+k); p != "" {
				return p
			}
		}
	case []any:
		ra, _ := red.([]any)
		for i := range t {
			var rv any
			if i < len(ra) {
				rv = ra[i]
			}
			if p := literalSecret(t[i], rv, fmt.Sprintf("%s[%d]", path, i)); p != "" {
				return p
			}
		}
	case string:
		if rs, ok := red.(string); ok && strings.Contains(rs, apiv1.Redacted) && !hasRef(t) {
			return path
		}
	}
	return ""
}

// mapStrings returns a copy of v with f applied to every string leaf.
func mapStrings(v any, path string, f func(path, s string) string) any {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, c := range t {
			out[k] = mapStrings(c, path+"."+k, f)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, c := range t {
			out[i] = mapStrings(c, fmt.Sprintf("%s[%d]", path, i), f)
		}
		return out
	case string:
		return f(path, t)
	}
	return v
}
