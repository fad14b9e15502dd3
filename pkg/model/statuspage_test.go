package model_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/mcpmon/mcpmon/pkg/model"
)

func validPage() model.StatusPage {
	return model.StatusPage{
		Slug: "acme", Title: "Acme status", Description: "Our MCP servers.\nUpdated live.",
		LogoURL: "https://cdn.example.com/logo.png", Host: "status.example.com",
		Groups: []model.PageGroup{{Name: "Search", Selector: map[string]string{"team": "search"}}, {Name: "All"}},
	}
}

// TestStatusPageProblems: each rule names its field, and a valid page has
// none.
func TestStatusPageProblems(t *testing.T) {
	groups := func(n int) []model.PageGroup {
		out := make([]model.PageGroup, n)
		for i := range out {
			out[i] = model.PageGroup{Name: fmt.Sprint("g", i)}
		}
		return out
	}
	selector := func(n int) map[string]string {
		out := map[string]string{}
		for i := range n {
			out[fmt.Sprint("k", i)] = "v"
		}
		return out
	}
	for _, c := range []struct {
		name   string
		edit   func(*model.StatusPage)
		fields []string
	}{
		{"valid", func(*model.StatusPage) {}, nil},
		{"minimal", func(p *model.StatusPage) { *p = model.StatusPage{Slug: "acme", Title: "Acme"} }, nil},
		{"no title", func(p *model.StatusPage) { p.Title = "  " }, []string{"title"}},
		{"long title", func(p *model.StatusPage) { p.Title = strings.Repeat("t", model.MaxPageTitle+1) }, []string{"title"}},
		{"title at cap", func(p *model.StatusPage) { p.Title = strings.Repeat("t", model.MaxPageTitle) }, nil},
		{"long description", func(p *model.StatusPage) { p.Description = strings.Repeat("d", model.MaxPageDescription+1) }, []string{"description"}},
		{"http logo", func(p *model.StatusPage) { p.LogoURL = "http://cdn.example.com/logo.png" }, []string{"logoUrl"}},
		{"relative logo", func(p *model.StatusPage) { p.LogoURL = "/logo.png" }, []string{"logoUrl"}},
		{"logo with userinfo", func(p *model.StatusPage) { p.LogoURL = "https://u:p@cdn.example.com/logo.png" }, []string{"logoUrl"}},
		{"logo with a token", func(p *model.StatusPage) { p.LogoURL = "https://cdn.example.com/logo.png?token=abc" }, []string{"logoUrl"}},
		{"logo with a harmless query", func(p *model.StatusPage) { p.LogoURL = "https://cdn.example.com/logo.png?v=3" }, nil},
		{"long logo", func(p *model.StatusPage) {
			p.LogoURL = "https://cdn.example.com/" + strings.Repeat("a", model.MaxPageLogoURL)
		}, []string{"logoUrl"}},
		{"host with port", func(p *model.StatusPage) { p.Host = "status.example.com:8443" }, []string{"host"}},
		{"upper-case host", func(p *model.StatusPage) { p.Host = "Status.Example.com" }, []string{"host"}},
		{"IPv4 host", func(p *model.StatusPage) { p.Host = "192.0.2.10" }, []string{"host"}},
		{"IPv6 host", func(p *model.StatusPage) { p.Host = "[2001:db8::1]" }, []string{"host"}},
		{"numeric last label", func(p *model.StatusPage) { p.Host = "10.0.1" }, []string{"host"}},
		{"wildcard host", func(p *model.StatusPage) { p.Host = "*.example.com" }, []string{"host"}},
		{"empty label", func(p *model.StatusPage) { p.Host = "status..example.com" }, []string{"host"}},
		{"hyphen edge", func(p *model.StatusPage) { p.Host = "-status.example.com" }, []string{"host"}},
		{"underscore", func(p *model.StatusPage) { p.Host = "status_1.example.com" }, []string{"host"}},
		{"long label", func(p *model.StatusPage) { p.Host = strings.Repeat("a", 64) + ".example.com" }, []string{"host"}},
		{"long host", func(p *model.StatusPage) { p.Host = strings.Repeat("abcdefghi.", 26) + "com" }, []string{"host"}},
		{"single-label host", func(p *model.StatusPage) { p.Host = "status" }, nil},
		{"too many groups", func(p *model.StatusPage) { p.Groups = groups(model.MaxPageGroups + 1) }, []string{"groups"}},
		{"groups at cap", func(p *model.StatusPage) { p.Groups = groups(model.MaxPageGroups) }, nil},
		{"unnamed group", func(p *model.StatusPage) { p.Groups[1].Name = "" }, []string{"groups/1/name"}},
		{"long group name", func(p *model.StatusPage) { p.Groups[0].Name = strings.Repeat("n", model.MaxGroupName+1) }, []string{"groups/0/name"}},
		{"big selector", func(p *model.StatusPage) { p.Groups[1].Selector = selector(model.MaxGroupSelector + 1) }, []string{"groups/1/selector"}},
		{"selector at cap", func(p *model.StatusPage) { p.Groups[1].Selector = selector(model.MaxGroupSelector) }, nil},
		{"several, in field order", func(p *model.StatusPage) {
			p.Title, p.Host, p.LogoURL, p.Groups[0].Name = "", "a:1", "ftp://x", ""
		}, []string{"title", "logoUrl", "host", "groups/0/name"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := validPage()
			c.edit(&p)
			var got []string
			for _, fe := range p.Problems() {
				got = append(got, fe.Field)
			}
			if !slices.Equal(got, c.fields) {
				t.Fatalf("Problems() fields = %q, want %q (%+v)", got, c.fields, p.Problems())
			}
			err := p.Validate()
			if (err == nil) != (len(c.fields) == 0) || (err != nil && !errors.Is(err, model.ErrInvalidStatusPage)) {
				t.Fatalf("Validate() = %v", err)
			}
		})
	}
}
