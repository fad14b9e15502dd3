package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpmon/mcpmon/pkg/api/apispec"
	apiv1 "github.com/mcpmon/mcpmon/pkg/api/v1"
	"github.com/mcpmon/mcpmon/pkg/declarative"
)

// TestStatusPagesCommandsAgainstARealServer drives `mcpmon status-pages`
// and apply/export of a statusPages section against a real `mcpmon run`
// with keys on, every exchange held to openapi.yaml: create from flags
// and from -f, get and update by slug, the API's field problems and
// conflicts as exit 1, a missing page as exit 3, and apply → export →
// apply --dry-run converging.
func TestStatusPagesCommandsAgainstARealServer(t *testing.T) {
	dataDir := t.TempDir()
	h := &harness{t: t, hc: apispec.Client(t), env: map[string]string{}}
	key := strings.TrimSpace(h.ok("keys", "create", "--local", "--init", "--name", "admin", "--scope", "admin", "--data-dir", dataDir))
	addr, stop := h.startServer(dataDir)
	defer stop()
	h.setenv("MCPMON_SERVER", "http://"+addr)
	h.setenv("MCPMON_TOKEN", key)

	// A page of a tenant with no public endpoint lists nothing: the owner
	// is told why, on stderr, and how to publish one.
	out, errOut, code := h.run("status-pages", "create", "--slug", "acme", "--title", "Acme status", "--host", "status.acme.example",
		"--group", "Search:team=search,env=prod", "--group", "Everything else", "-o", "json")
	if code != ExitOK || !strings.Contains(errOut, "no endpoint of this tenant is public") || !strings.Contains(errOut, "--public --slug") {
		t.Fatalf("create: exit %d, stderr %q; want a warning that no endpoint is public", code, errOut)
	}
	var created apiv1.StatusPageView
	if err := json.Unmarshal([]byte(out), &created); err != nil {
		t.Fatalf("create -o json: %v\n%s", err, out)
	}
	if created.ID == "" || created.Slug != "acme" || len(created.Groups) != 2 || created.Groups[0].Selector["env"] != "prod" || created.Groups[1].Selector != nil {
		t.Fatalf("create = %+v", created)
	}
	if out := h.ok("status-pages", "list"); !strings.Contains(out, "acme") || !strings.Contains(out, "status.acme.example") {
		t.Fatalf("list:\n%s", out)
	}
	// The confirmation says where the page is, to open it.
	if out := h.ok("status-pages", "update", "acme", "--description", "Ours"); out != "updated status page "+created.ID+": http://"+addr+"/status/acme\n" {
		t.Fatalf("update's confirmation = %q, want the page's URL", out)
	}

	// update by slug: the flags given replace their field, the rest stays.
	var updated apiv1.StatusPageView
	h.json(&updated, "status-pages", "update", "acme", "--title", "Acme, Inc.")
	if updated.ID != created.ID || updated.Title != "Acme, Inc." || updated.Host != "status.acme.example" || len(updated.Groups) != 2 {
		t.Fatalf("update --title = %+v", updated)
	}
	h.json(&updated, "status-pages", "update", created.ID, "--group", "Only")
	if len(updated.Groups) != 1 || updated.Groups[0].Name != "Only" {
		t.Fatalf("update --group = %+v", updated)
	}

	// -f: the whole page from a file, and not with flags.
	file := filepath.Join(t.TempDir(), "page.json")
	if err := os.WriteFile(file, []byte(`{"slug":"beta","title":"Beta","description":"Two\nlines","groups":[{"name":"All"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	var beta apiv1.StatusPageView
	h.json(&beta, "status-pages", "create", "-f", file)
	if beta.Slug != "beta" || beta.Description != "Two\nlines" {
		t.Fatalf("create -f = %+v", beta)
	}
	h.fails(ExitUsage, "not both", "status-pages", "create", "-f", file, "--title", "x")
	h.fails(ExitUsage, "NAME[:KEY=VALUE", "status-pages", "create", "--slug", "x-page", "--title", "x", "--group", "g:team")
	h.fails(ExitError, "#/slug", "status-pages", "create", "--slug", "acme", "--title", "again")
	h.fails(ExitError, "#/logoUrl", "status-pages", "create", "--slug", "gamma", "--title", "g", "--logo-url", "http://x.example/l.png")
	h.fails(ExitNotFound, "no status page", "status-pages", "get", "nosuch")

	// The host is pending: get says what to publish and the list its
	// state; verify-host of a page without a host is the API's 409. (The
	// lookup itself is the API's test, against a DNS server on loopback:
	// this server would ask the machine's resolver.)
	if created.HostVerification == nil || created.HostVerification.State != "pending" {
		t.Fatalf("create with --host: %+v", created.HostVerification)
	}
	if out := h.ok("status-pages", "get", "acme"); !strings.Contains(out, "publish _mcpmon-challenge.status.acme.example TXT \"mcpmon-verify=") ||
		!strings.Contains(out, "mcpmon status-pages verify-host acme") {
		t.Fatalf("get of a pending host:\n%s", out)
	}
	if out := h.ok("status-pages", "list"); !strings.Contains(out, "HOST STATE") || !strings.Contains(out, "pending") {
		t.Fatalf("list:\n%s", out)
	}
	h.fails(ExitError, "no host to verify", "status-pages", "verify-host", "beta")

	// release-host: this admin key is the default tenant's, the
	// operator's. A pending host is held by no page; a host no page has
	// is exit 3; a name that is not a host is the API's 400 on #/host.
	if out := h.ok("status-pages", "release-host", "status.acme.example"); !strings.Contains(out, "no page held it") {
		t.Fatalf("release-host of a pending host:\n%s", out)
	}
	h.fails(ExitNotFound, "no status page has the host", "status-pages", "release-host", "status.nobody.example")
	h.fails(ExitError, "#/host", "status-pages", "release-host", "Status.Acme.Example")
	h.fails(ExitUsage, "one HOST", "status-pages", "release-host")

	var got apiv1.StatusPageView
	h.json(&got, "status-pages", "get", "beta")
	if got.ID != beta.ID {
		t.Fatalf("get beta = %+v", got)
	}

	// The documented round trip: what get -o json prints, update -f takes
	// (its read-only members dropped), but not as another page's.
	printed := h.ok("status-pages", "get", "beta", "-o", "json")
	roundTrip := filepath.Join(t.TempDir(), "beta.json")
	if err := os.WriteFile(roundTrip, []byte(strings.Replace(printed, `"title": "Beta"`, `"title": "Beta 2"`, 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	h.json(&got, "status-pages", "update", "beta", "-f", roundTrip)
	if got.ID != beta.ID || got.Title != "Beta 2" || got.Description != "Two\nlines" {
		t.Fatalf("update -f of get's output = %+v", got)
	}
	h.fails(ExitUsage, "another status page", "status-pages", "update", "acme", "-f", roundTrip)
	if err := os.WriteFile(roundTrip, []byte(`{"slug":"beta","title":"Beta","colour":"red"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	h.fails(ExitUsage, `unknown field "colour"`, "status-pages", "update", "beta", "-f", roundTrip)

	// apply: a statusPages section is planned by slug; --prune deletes the
	// pages no file declares once the files declare pages.
	dir := t.TempDir()
	conf := filepath.Join(dir, "conf.yaml")
	if err := os.WriteFile(conf, []byte(`endpoints: []
statusPages:
  - slug: acme
    title: Acme, Inc.
    host: status.acme.example
    groups:
      - {name: Search, selector: {team: search}}
  - slug: delta
    title: Delta
`), 0o600); err != nil {
		t.Fatal(err)
	}
	dry := h.ok("apply", "-f", conf, "--prune", "--dry-run")
	for _, want := range []string{"+ create status-page delta", "~ update status-page acme", "groups:", "- delete status-page beta", "dry run: 3 change(s)"} {
		if !strings.Contains(dry, want) {
			t.Fatalf("apply --dry-run lacks %q:\n%s", want, dry)
		}
	}
	h.ok("apply", "-f", conf, "--prune")
	var pages []apiv1.StatusPageView
	h.json(&pages, "status-pages", "list")
	if len(pages) != 2 || pages[0].Slug != "acme" || pages[0].Groups[0].Selector["team"] != "search" || pages[1].Slug != "delta" {
		t.Fatalf("after apply: %+v", pages)
	}
	if out := h.ok("apply", "-f", conf, "--prune", "--dry-run"); !strings.Contains(out, "no changes") {
		t.Fatalf("second apply plans:\n%s", out)
	}

	exported := h.ok("export")
	if doc, err := declarative.Parse([]byte(exported)); err != nil || len(doc.StatusPages) != 2 {
		t.Fatalf("export: %v\n%s", err, exported)
	}
	back := filepath.Join(dir, "export.yaml")
	if err := os.WriteFile(back, []byte(exported), 0o600); err != nil {
		t.Fatal(err)
	}
	if out := h.ok("apply", "-f", back, "--prune", "--dry-run"); !strings.Contains(out, "no changes") {
		t.Fatalf("apply of the export plans:\n%s", out)
	}

	if out := h.ok("status-pages", "delete", "delta", pages[0].ID); strings.Count(out, "deleted status page") != 2 {
		t.Fatalf("status-pages delete printed %q, want a confirmation per page on stdout", out)
	}
	h.json(&pages, "status-pages", "list")
	if len(pages) != 0 {
		t.Fatalf("after delete: %+v", pages)
	}
}
