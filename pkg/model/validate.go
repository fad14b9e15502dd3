package model

import (
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Endpoint rules that hold for the stored values whatever wrote them. The
// API adds what belongs to a request (defaults, duration syntax, size caps
// of the body, the redaction placeholder) and to a deployment (its target
// policy, regions, sinks and the protocol revisions its prober speaks).

// Transports an endpoint may pin; empty is auto (records written before
// the field existed).
var Transports = []string{"auto", "streamable-http", "sse"}

const (
	// MaxURLLen bounds an endpoint URL and an OAuth token URL.
	MaxURLLen = 2048
	// MaxRuleCount bounds each count of Rules.
	MaxRuleCount = 100
)

var protocolVersionRE = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}$`)

// FieldError is one field of an endpoint that breaks a rule. Field is the
// field's path in the endpoint's JSON form ("url", "rules/openWindow").
type FieldError struct {
	Field  string
	Detail string
}

// FieldErrors are the field errors of one endpoint, in field order.
type FieldErrors []FieldError

func (fe FieldErrors) Error() string {
	parts := make([]string, len(fe))
	for i, f := range fe {
		parts[i] = f.Field + ": " + f.Detail
	}
	return "invalid endpoint: " + strings.Join(parts, "; ")
}

// Validate checks e's URL, transport, protocol revision and rules. It
// returns nil or the FieldErrors found, every one of them.
func (e Endpoint) Validate() error {
	var errs FieldErrors
	bad := func(field, detail string) { errs = append(errs, FieldError{Field: field, Detail: detail}) }
	if detail := URLProblem(e.URL); detail != "" {
		bad("url", detail)
	}
	if e.Transport != "" && !slices.Contains(Transports, e.Transport) {
		bad("transport", "must be one of "+strings.Join(Transports, ", "))
	}
	if e.ProtocolVersion != "" && !protocolVersionRE.MatchString(e.ProtocolVersion) {
		bad("protocolVersion", "must be a protocol revision date such as 2025-06-18")
	}
	if e.Rules != nil {
		errs = append(errs, e.Rules.problems()...)
	}
	if len(errs) == 0 {
		return nil
	}
	return errs
}

// problems checks each count against MaxRuleCount and that the open
// window can hold openAfter failures.
func (r Rules) problems() FieldErrors {
	var errs FieldErrors
	// A slice, not a map: problems come out in the same order every time.
	for _, f := range []struct {
		field string
		n     int
	}{{"rules/openAfter", r.OpenAfter}, {"rules/openWindow", r.OpenWindow}, {"rules/resolveAfter", r.ResolveAfter}, {"rules/regionQuorum", r.RegionQuorum}} {
		if f.n < 0 || f.n > MaxRuleCount {
			errs = append(errs, FieldError{Field: f.field, Detail: fmt.Sprintf("must be between 0 (default) and %d", MaxRuleCount)})
		}
	}
	if r.OpenAfter > 0 && r.OpenWindow > 0 && r.OpenWindow < r.OpenAfter {
		errs = append(errs, FieldError{Field: "rules/openWindow", Detail: fmt.Sprintf("must be at least openAfter (%d)", r.OpenAfter)})
	}
	return errs
}

// URLProblem returns why raw is not an acceptable endpoint (or token) URL,
// or "": an absolute http(s) URL with a host, no credentials and no
// fragment.
func URLProblem(raw string) string {
	if raw == "" {
		return "is required"
	}
	if len(raw) > MaxURLLen {
		return fmt.Sprintf("must be at most %d characters", MaxURLLen)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "is not a valid URL"
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return "scheme must be http or https"
	case u.Opaque != "":
		return "must be an absolute URL such as https://example.com/mcp"
	case u.User != nil:
		return "must not contain credentials (user:password@); use headers instead"
	case u.Hostname() == "":
		return "must include a host"
	case u.Fragment != "":
		return "must not contain a fragment"
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return "port must be between 1 and 65535"
		}
	}
	return ""
}
