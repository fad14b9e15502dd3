package declarative

import (
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	apiv1 "github.com/mcpmon/mcpmon/pkg/api/v1"
)

func pageView(slug string, mod func(*apiv1.StatusPageView)) apiv1.StatusPageView {
	v := apiv1.StatusPageView{ID: "id-" + slug, Tenant: "t", Slug: slug, Title: "Title " + slug,
		Groups: []apiv1.PageGroupInput{{Name: "Search", Selector: map[string]string{"team": "search"}}}}
	if mod != nil {
		mod(&v)
	}
	return v
}

func pageInput(slug string, mod func(*apiv1.StatusPageInput)) apiv1.StatusPageInput {
	in := apiv1.StatusPageInput{Slug: slug, Title: "Title " + slug,
		Groups: []apiv1.PageGroupInput{{Name: "Search", Selector: map[string]string{"team": "search"}}}}
	if mod != nil {
		mod(&in)
	}
	return in
}

func changeList(p Plan) []string {
	var out []string
	for _, c := range p.Changes {
		s := string(c.Action) + ":" + c.Name
		if f := fields(c); f != "" {
			s += ":" + f
		}
		out = append(out, s)
	}
	return out
}

// TestPlanStatusPagesMatchesBySlug: pages are created, updated (naming
// each changed field, sending the whole page) and, with prune, deleted,
// matched by slug; what the server stores the same way is no change.
func TestPlanStatusPagesMatchesBySlug(t *testing.T) {
	for _, tc := range []struct {
		name    string
		desired []apiv1.StatusPageInput
		current []apiv1.StatusPageView
		prune   bool
		want    []string
	}{
		{name: "equal is no change", desired: []apiv1.StatusPageInput{pageInput("a", nil)}, current: []apiv1.StatusPageView{pageView("a", nil)}},
		{name: "text the server trims is no change",
			desired: []apiv1.StatusPageInput{pageInput("a", func(in *apiv1.StatusPageInput) { in.Title = "  Title a \n"; in.Groups[0].Name = " Search" })},
			current: []apiv1.StatusPageView{pageView("a", nil)}},
		{name: "an empty selector is none", desired: []apiv1.StatusPageInput{pageInput("a", func(in *apiv1.StatusPageInput) { in.Groups[0].Selector = map[string]string{} })},
			current: []apiv1.StatusPageView{pageView("a", func(v *apiv1.StatusPageView) { v.Groups[0].Selector = nil })}},
		{name: "a new slug is created", desired: []apiv1.StatusPageInput{pageInput("b", nil)}, current: []apiv1.StatusPageView{pageView("a", nil)},
			want: []string{"create:b"}},
		{name: "without prune the server's extra page stays", current: []apiv1.StatusPageView{pageView("a", nil)}},
		{name: "prune deletes what no file declares", current: []apiv1.StatusPageView{pageView("a", nil)}, prune: true, want: []string{"delete:a"}},
		{name: "changed fields are named",
			desired: []apiv1.StatusPageInput{pageInput("a", func(in *apiv1.StatusPageInput) {
				in.Title, in.Host = "New", "status.example.com"
				in.Groups = append(in.Groups, apiv1.PageGroupInput{Name: "All"})
			})},
			current: []apiv1.StatusPageView{pageView("a", func(v *apiv1.StatusPageView) { v.Description = "gone" })},
			want:    []string{"update:a:title,description,host,groups"}},
		{name: "group order is a change",
			desired: []apiv1.StatusPageInput{pageInput("a", func(in *apiv1.StatusPageInput) {
				in.Groups = []apiv1.PageGroupInput{{Name: "B"}, {Name: "A"}}
			})},
			current: []apiv1.StatusPageView{pageView("a", func(v *apiv1.StatusPageView) { v.Groups = []apiv1.PageGroupInput{{Name: "A"}, {Name: "B"}} })},
			want:    []string{"update:a:groups"}},
		{name: "creates, updates, deletes, each by slug",
			desired: []apiv1.StatusPageInput{pageInput("z", nil), pageInput("c", func(in *apiv1.StatusPageInput) { in.Title = "x" }), pageInput("b", nil)},
			current: []apiv1.StatusPageView{pageView("c", nil), pageView("a", nil), pageView("d", nil)}, prune: true,
			want: []string{"create:b", "create:z", "update:c:title", "delete:a", "delete:d"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := PlanStatusPages(tc.desired, tc.current, tc.prune)
			if err != nil {
				t.Fatal(err)
			}
			if got := changeList(p); !slices.Equal(got, tc.want) {
				t.Fatalf("plan %q, want %q", got, tc.want)
			}
			for _, c := range p.Changes {
				if c.Kind != KindStatusPage || (c.Action != Delete && (c.Page == nil || c.Page.Slug != c.Name)) || (c.Action != Create && c.ID != "id-"+c.Name) {
					t.Errorf("change %+v: want kind %s, the page to send and the server's ID", c, KindStatusPage)
				}
			}
		})
	}
	if _, err := PlanStatusPages([]apiv1.StatusPageInput{pageInput("a", nil), pageInput("a", nil)}, nil, false); err == nil {
		t.Error("two desired pages of one slug planned")
	}
}

// TestStatusPagesLoadExportRoundTrip: a file's statusPages section loads
// (a slug declared in two files is refused), and what Export writes of
// the server's pages loads back to a plan with no change.
func TestStatusPagesLoadExportRoundTrip(t *testing.T) {
	fsys := fstest.MapFS{
		"conf/endpoints.yaml": {Data: []byte("endpoints:\n  - name: search\n    url: https://mcp.example.com/mcp\n")},
		"conf/pages.yaml": {Data: []byte(`statusPages:
  - slug: acme
    title: Acme status
    description: |
      Our servers.
      Live.
    host: status.acme.example
    groups:
      - {name: Search, selector: {team: search}}
      - name: Everything else
`)},
		"only-endpoints.yaml": {Data: []byte("endpoints: []\n")},
		"empty-pages.yaml":    {Data: []byte("statusPages: []\n")},
		"dup/a.yaml":          {Data: []byte("statusPages:\n  - {slug: acme, title: A}\n")},
		"dup/b.yaml":          {Data: []byte("statusPages:\n  - {slug: acme, title: B}\n")},
		"noslug.yaml":         {Data: []byte("statusPages:\n  - {title: A}\n")},
		"typo.yaml":           {Data: []byte("statusPages:\n  - {slug: acme, title: A, colour: red}\n")},
	}
	l, err := LoadAll(fsys, "conf")
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Endpoints) != 1 || len(l.StatusPages) != 1 || !l.DeclaresPages {
		t.Fatalf("loaded %+v", l)
	}
	p := l.StatusPages[0]
	if p.Description != "Our servers.\nLive.\n" || len(p.Groups) != 2 || p.Groups[0].Selector["team"] != "search" || p.Groups[1].Selector != nil {
		t.Fatalf("page %+v", p)
	}
	if l, err := LoadAll(fsys, "only-endpoints.yaml"); err != nil || l.DeclaresPages {
		t.Fatalf("a file without statusPages declares pages: %+v %v", l, err)
	}
	if l, err := LoadAll(fsys, "empty-pages.yaml"); err != nil || !l.DeclaresPages || len(l.StatusPages) != 0 {
		t.Fatalf("statusPages: [] = %+v %v, want pages declared, none", l, err)
	}
	for file, want := range map[string]string{"dup": "declared twice", "noslug.yaml": "slug is required", "typo.yaml": "colour"} {
		if _, err := LoadAll(fsys, file); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error naming %q", file, err, want)
		}
	}

	// The server as apply left it: text trimmed, an ID and times added.
	server := []apiv1.StatusPageView{{ID: "p1", Tenant: "t", Slug: "acme", Title: "Acme status", Description: "Our servers.\nLive.",
		Host: "status.acme.example", Groups: []apiv1.PageGroupInput{{Name: "Search", Selector: map[string]string{"team": "search"}}, {Name: "Everything else"}}}}
	if plan, err := PlanStatusPages(l.StatusPages, server, true); err != nil || !plan.Empty() {
		t.Fatalf("the applied file against its server: %q %v, want no change", changeList(plan), err)
	}
	doc := Document{Endpoints: []apiv1.EndpointInput{}, StatusPages: ExportStatusPages(server)}
	b, err := YAML(doc)
	if err != nil {
		t.Fatal(err)
	}
	back, err := Parse(b)
	if err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	if plan, err := PlanStatusPages(back.StatusPages, server, true); err != nil || !plan.Empty() {
		t.Fatalf("export → plan: %q %v, want no change\n%s", changeList(plan), err, b)
	}
	if !strings.Contains(string(b), "statusPages:") || strings.Contains(string(b), "p1") {
		t.Fatalf("export wrote\n%s\nwant a statusPages section without server IDs", b)
	}
	// An export without pages keeps the old document shape.
	if b, err := YAML(Export(nil)); err != nil || strings.Contains(string(b), "statusPages") {
		t.Fatalf("endpoint-only export:\n%s %v", b, err)
	}
}
