package model

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Caps on a status page, so a page's document, its render and its
// selector matching stay bounded whatever a tenant sends.
const (
	MaxPageTitle       = 200
	MaxPageDescription = 2000
	MaxPageGroups      = 20
	MaxGroupName       = 100
	MaxGroupSelector   = 10
	MaxPageLogoURL     = 2048 // bytes of the logo URL
	MaxPageHost        = 253  // bytes of the host name (the DNS limit)
	// MaxStatusPageBytes bounds a page's request body and its stored
	// document: above what the field caps allow together, every character
	// JSON-escaped.
	MaxStatusPageBytes = 128 << 10
)

// ErrInvalidStatusPage reports a page that breaks a rule of Problems.
var ErrInvalidStatusPage = errors.New("invalid status page")

// StatusPage is a tenant's public status page: a title and description
// over ordered groups of the tenant's public endpoints. It is served at
// /status/{Slug} (and at / of Host when Host is set and proven) by
// pkg/status.
//
// Page slugs share one namespace with public endpoints' slugs across the
// deployment: a page and a public endpoint never hold the same slug.
type StatusPage struct {
	ID string `json:"id"`
	// Tenant owns the page (empty: the default tenant). A page lists its
	// own tenant's public endpoints only.
	Tenant      string `json:"tenant,omitempty"`
	Slug        string `json:"slug"`
	Title       string `json:"title"`
	Description string `json:"description,omitempty"`
	// LogoURL is shown as the page's logo (https only).
	LogoURL string `json:"logoUrl,omitempty"`
	// Host is a custom host name (e.g. status.example.com): a request
	// whose Host header equals it is served this page at / once the host
	// is proven (ServesHost, statuspagehost.go).
	Host string `json:"host,omitempty"`
	// HostVerification is the proof of Host, or the token that will prove
	// it; nil with a Host is a host stored before hosts were verified
	// (HostGrandfathered).
	HostVerification *HostVerification `json:"hostVerification,omitempty"`
	// Groups are shown in order; an endpoint may appear in several.
	Groups    []PageGroup `json:"groups,omitempty"`
	CreatedAt time.Time   `json:"createdAt,omitzero"`
	UpdatedAt time.Time   `json:"updatedAt,omitzero"`
}

// PageGroup is one titled section of a page: the tenant's public
// endpoints whose labels match every Selector label (an empty Selector
// matches all of them).
type PageGroup struct {
	Name     string            `json:"name"`
	Selector map[string]string `json:"selector,omitempty"`
}

// Matches reports whether ep belongs in g on a page of tenant: same
// tenant, public, and every selector label equal.
func (g PageGroup) Matches(tenant string, ep Endpoint) bool {
	if !ep.Public || ep.Slug == "" || !SameTenant(tenant, ep.Tenant) {
		return false
	}
	for k, v := range g.Selector {
		if got, ok := ep.Labels[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// Members returns, per group in order, the endpoints of all that belong
// in it (in all's order).
func (p StatusPage) Members(all []Endpoint) [][]Endpoint {
	out := make([][]Endpoint, len(p.Groups))
	for i, g := range p.Groups {
		for _, ep := range all {
			if g.Matches(p.Tenant, ep) {
				out[i] = append(out[i], ep)
			}
		}
	}
	return out
}

// Problems are the rules p breaks, in field order, each Field a path in
// the page's JSON form ("title", "groups/1/selector"): a title present and
// within MaxPageTitle bytes, a description within MaxPageDescription, at
// most MaxPageGroups groups, each named (within MaxGroupName) with at most
// MaxGroupSelector selector labels, a logo URL that LogoURLProblem accepts
// and a host that HostProblem accepts. It reads lengths and the two URLs'
// syntax only, so it is cheap on any input. Display-text rules (control
// characters), the slug's form and the label syntax belong to whoever
// reads the page in: the API checks them beside these, with the same rules
// as an endpoint's.
func (p StatusPage) Problems() []FieldError {
	var errs []FieldError
	bad := func(field, format string, args ...any) {
		errs = append(errs, FieldError{Field: field, Detail: fmt.Sprintf(format, args...)})
	}
	switch {
	case strings.TrimSpace(p.Title) == "":
		bad("title", "is required")
	case len(p.Title) > MaxPageTitle:
		bad("title", "must be at most %d bytes", MaxPageTitle)
	}
	if len(p.Description) > MaxPageDescription {
		bad("description", "must be at most %d bytes", MaxPageDescription)
	}
	if detail := LogoURLProblem(p.LogoURL); detail != "" {
		bad("logoUrl", "%s", detail)
	}
	if detail := HostProblem(p.Host); detail != "" {
		bad("host", "%s", detail)
	}
	if len(p.Groups) > MaxPageGroups {
		bad("groups", "at most %d groups (got %d)", MaxPageGroups, len(p.Groups))
		return errs
	}
	for i, g := range p.Groups {
		at := "groups/" + strconv.Itoa(i)
		switch {
		case strings.TrimSpace(g.Name) == "":
			bad(at+"/name", "is required")
		case len(g.Name) > MaxGroupName:
			bad(at+"/name", "must be at most %d bytes", MaxGroupName)
		}
		if len(g.Selector) > MaxGroupSelector {
			bad(at+"/selector", "at most %d labels (got %d)", MaxGroupSelector, len(g.Selector))
		}
	}
	return errs
}

// Validate is nil when p keeps every rule of Problems, else an error
// wrapping ErrInvalidStatusPage that names the first rule broken.
func (p StatusPage) Validate() error {
	if errs := p.Problems(); len(errs) > 0 {
		return fmt.Errorf("%w %q: %s %s", ErrInvalidStatusPage, p.Slug, errs[0].Field, errs[0].Detail)
	}
	return nil
}

// LogoURLProblem returns why raw is not an acceptable logo URL, or "" (an
// empty one is no logo). The public page embeds it, so it is an absolute
// https URL of at most MaxPageLogoURL bytes, without credentials in its
// userinfo or in a credential-like query parameter (a page is public: a
// token there would be published).
func LogoURLProblem(raw string) string {
	if raw == "" {
		return ""
	}
	if len(raw) > MaxPageLogoURL {
		return fmt.Sprintf("must be at most %d bytes", MaxPageLogoURL)
	}
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return "is not a valid URL"
	case u.Scheme != "https":
		return "must be an https URL"
	case u.Opaque != "" || u.Hostname() == "":
		return "must be an absolute URL such as https://example.com/logo.png"
	case u.User != nil:
		return "must not contain credentials (user:password@): the page is public"
	case len(QuerySecrets(raw)) > 0:
		return "must not carry a credential-like query parameter (token, key, signature, ...): the page is public"
	}
	return ""
}

// HostProblem returns why h is not an acceptable custom host name, or ""
// (an empty one is no custom host). pkg/status compares it with a
// request's Host header (its port dropped), so it is the bare name as a
// browser sends it: a lowercase DNS name of at most MaxPageHost bytes, in
// labels of 1 to 63 letters, digits and inner hyphens; no port, no IP
// literal (an address names a server, not a page), no wildcard and no
// localhost.
func HostProblem(h string) string {
	if h == "" {
		return ""
	}
	if len(h) > MaxPageHost {
		return fmt.Sprintf("must be at most %d bytes", MaxPageHost)
	}
	if _, err := netip.ParseAddr(strings.Trim(h, "[]")); err == nil {
		return "must be a DNS name, not an IP address"
	}
	switch {
	case strings.Contains(h, "*"):
		return "must be one host name, not a wildcard"
	case strings.Contains(h, ":"):
		return "must be a host name without a port"
	case h != strings.ToLower(h):
		return "must be lowercase"
	}
	labels := strings.Split(h, ".")
	for _, l := range labels {
		if !dnsLabel(l) {
			return "must be a DNS name: dot-separated labels of 1 to 63 letters, digits and inner hyphens"
		}
	}
	if last := labels[len(labels)-1]; strings.Trim(last, "0123456789") == "" {
		return "must be a DNS name, not an IP address"
	}
	if h == "localhost" || strings.HasSuffix(h, ".localhost") {
		// RFC 6761: names the machine itself, never a public page; taken,
		// / of every local visit to mcpmon would be the tenant's page.
		return "must not be localhost or a name under it"
	}
	return ""
}

// dnsLabel reports whether l is one lowercase DNS label (RFC 1123).
func dnsLabel(l string) bool {
	if len(l) == 0 || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' {
		return false
	}
	for i := range len(l) {
		if c := l[i]; !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// DecodeStatusPage reads a stored status page document.
func DecodeStatusPage(doc []byte) (StatusPage, error) {
	var p StatusPage
	if err := json.Unmarshal(doc, &p); err != nil {
		return StatusPage{}, fmt.Errorf("decode status page: %w", err)
	}
	return p, nil
}
