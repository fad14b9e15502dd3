package model

import (
	"encoding/json"
	"fmt"
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
)

// StatusPage is a tenant's public status page: a title and description
// over ordered groups of the tenant's public endpoints. It is served at
// /status/{Slug} (and at / of Host when Host is set) by pkg/status.
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
	// whose Host header equals it is served this page at /.
	Host string `json:"host,omitempty"`
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

// DecodeStatusPage reads a stored status page document.
func DecodeStatusPage(doc []byte) (StatusPage, error) {
	var p StatusPage
	if err := json.Unmarshal(doc, &p); err != nil {
		return StatusPage{}, fmt.Errorf("decode status page: %w", err)
	}
	return p, nil
}
