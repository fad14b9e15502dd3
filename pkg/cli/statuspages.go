package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"
	"time"

	"github.com/spf13/cobra"

	apiv1 "github.com/mcpmon/mcpmon/pkg/api/v1"
	"github.com/mcpmon/mcpmon/pkg/client"
	"github.com/mcpmon/mcpmon/pkg/model"
)

func (a *app) statusPagesCmd() *cobra.Command {
	g := group("status-pages", "Status pages: a tenant's public pages of its public endpoints, in groups",
		"  mcpmon status-pages create --slug acme --title 'Acme status' --group 'Search:team=search' --group All\n  mcpmon status-pages list")
	g.Aliases = []string{"pages"}
	g.AddCommand(a.statusPagesList(), a.statusPagesGet(), a.statusPagesCreate(), a.statusPagesUpdate(), a.statusPagesDelete(), a.statusPagesVerifyHost(), a.statusPagesReleaseHost())
	return g
}

func (a *app) statusPagesList() *cobra.Command {
	return &cobra.Command{
		Use:     "list",
		Short:   "List the tenant's status pages",
		Example: "  mcpmon status-pages list\n  mcpmon status-pages list -o json",
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			ps, err := c.ListStatusPages(cmd.Context())
			if err != nil {
				return err
			}
			if ps == nil {
				ps = []apiv1.StatusPageView{}
			}
			return a.render(ps, func(w io.Writer) {
				row(w, "ID", "SLUG", "TITLE", "HOST", "HOST STATE", "GROUPS")
				for _, p := range ps {
					row(w, p.ID, p.Slug, p.Title, p.Host, hostState(p), len(p.Groups))
				}
			})
		},
	}
}

func (a *app) statusPagesGet() *cobra.Command {
	return &cobra.Command{
		Use:     "get ID|SLUG",
		Short:   "Show one status page and its groups",
		Example: "  mcpmon status-pages get acme\n  mcpmon status-pages get acme -o json > page.json",
		Args:    exactArgs(1, "a status page ID or slug"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			p, err := pageByRef(cmd.Context(), c, args[0])
			if err != nil {
				return err
			}
			return a.render(p, func(w io.Writer) {
				fields(w, "ID", p.ID, "Slug", p.Slug, "Title", p.Title, "Description", p.Description,
					"Logo URL", p.LogoURL, "Host", p.Host, "Host state", hostState(p), "Created", p.CreatedAt, "Updated", p.UpdatedAt)
				for _, g := range p.Groups {
					fmt.Fprintf(w, "group %q: %s\n", g.Name, cell(g.Selector))
				}
				printHostRecord(w, p)
			})
		},
	}
}

// pageFlags are the flags that build a StatusPageInput; -f reads one from
// a JSON file (or - for stdin) instead.
type pageFlags struct {
	in     apiv1.StatusPageInput
	groups []string
	file   string
}

func (f *pageFlags) add(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVarP(&f.file, "filename", "f", "", "the page as JSON (the API's body, or what get -o json printed), - for stdin; no other page flag with it")
	fl.StringVar(&f.in.Slug, "slug", "", "public name: /status/SLUG (shared with public endpoints' slugs)")
	fl.StringVar(&f.in.Title, "title", "", "the page's title")
	fl.StringVar(&f.in.Description, "description", "", "text under the title")
	fl.StringVar(&f.in.LogoURL, "logo-url", "", "https URL of a logo")
	fl.StringVar(&f.in.Host, "host", "", "custom host name whose requests are served this page at /")
	fl.StringArrayVar(&f.groups, "group", nil, "NAME[:KEY=VALUE,...]: a group of the public endpoints having every label, in order (repeatable)")
	_ = cmd.MarkFlagFilename("filename", "json")
}

var pageFlagNames = []string{"slug", "title", "description", "logo-url", "host", "group"}

// input returns the page the flags describe over base (the current page
// for update, empty for create): -f replaces it whole, each flag given
// replaces its field, --group replaces every group.
// id is the page's ID on update ("" on create): a -f document naming
// another page is refused.
func (f *pageFlags) input(cmd *cobra.Command, stdin io.Reader, id string, base apiv1.StatusPageInput) (apiv1.StatusPageInput, error) {
	if f.file != "" {
		for _, n := range pageFlagNames {
			if changed(cmd, n) {
				return base, usagef("-f and --%s: give the page in the file or as flags, not both", n)
			}
		}
		var in apiv1.StatusPageInput
		err := statusPageInput.read(f.file, stdin, id, &in)
		return in, err
	}
	in := base
	set := func(flag string, dst *string, v string) {
		if changed(cmd, flag) {
			*dst = v
		}
	}
	set("slug", &in.Slug, f.in.Slug)
	set("title", &in.Title, f.in.Title)
	set("description", &in.Description, f.in.Description)
	set("logo-url", &in.LogoURL, f.in.LogoURL)
	set("host", &in.Host, f.in.Host)
	if changed(cmd, "group") {
		in.Groups = nil
		for _, g := range f.groups {
			pg, err := parseGroupFlag(g)
			if err != nil {
				return in, err
			}
			in.Groups = append(in.Groups, pg)
		}
	}
	return in, nil
}

// parseGroupFlag reads NAME[:KEY=VALUE,...]. A name holding ':' goes in
// a -f file.
func parseGroupFlag(s string) (apiv1.PageGroupInput, error) {
	name, sel, hasSel := strings.Cut(s, ":")
	g := apiv1.PageGroupInput{Name: name}
	if !hasSel || strings.TrimSpace(sel) == "" {
		return g, nil
	}
	g.Selector = map[string]string{}
	for _, term := range strings.Split(sel, ",") {
		k, v, ok := strings.Cut(term, "=")
		if !ok || k == "" {
			return g, usagef("--group %q: want NAME[:KEY=VALUE,...]", s)
		}
		g.Selector[k] = v
	}
	return g, nil
}

func (a *app) statusPagesCreate() *cobra.Command {
	var f pageFlags
	cmd := &cobra.Command{
		Use:   "create (--slug SLUG --title TITLE [flags] | -f page.json)",
		Short: "Create a status page",
		Example: `  mcpmon status-pages create --slug acme --title 'Acme status' \
    --description 'Our public MCP servers' --host status.acme.example \
    --group 'Search:team=search' --group 'Everything else'
  mcpmon status-pages create -f page.json`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			in, err := f.input(cmd, a.io.Stdin, "", apiv1.StatusPageInput{})
			if err != nil {
				return err
			}
			if f.file == "" && (in.Slug == "" || in.Title == "") {
				return usagef("--slug and --title are required (or the whole page with -f FILE)")
			}
			c, err := a.client()
			if err != nil {
				return err
			}
			p, err := c.CreateStatusPage(cmd.Context(), in)
			if err != nil {
				return err
			}
			a.warnNoPublicEndpoint(cmd.Context(), c)
			return a.render(p, func(w io.Writer) { fmt.Fprintf(w, "created status page %s: %s\n", p.ID, a.pageURL(p.Slug)) })
		},
	}
	f.add(cmd)
	return cmd
}

func (a *app) statusPagesUpdate() *cobra.Command {
	var f pageFlags
	cmd := &cobra.Command{
		Use:   "update ID|SLUG (flags | -f page.json)",
		Short: "Change a status page: the flags given, or the whole page from -f",
		Example: `  mcpmon status-pages update acme --title 'Acme, Inc. status'
  mcpmon status-pages update acme --group 'Search:team=search' --group 'Billing:team=billing'
  mcpmon status-pages get acme -o json | jq '.title="New"' | mcpmon status-pages update acme -f -`,
		Args: exactArgs(1, "a status page ID or slug"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			cur, err := pageByRef(cmd.Context(), c, args[0])
			if err != nil {
				return err
			}
			base := apiv1.StatusPageInput{Slug: cur.Slug, Title: cur.Title, Description: cur.Description,
				LogoURL: cur.LogoURL, Host: cur.Host, Groups: cur.Groups}
			in, err := f.input(cmd, a.io.Stdin, cur.ID, base)
			if err != nil {
				return err
			}
			p, err := c.ReplaceStatusPage(cmd.Context(), cur.ID, in)
			if err != nil {
				return err
			}
			return a.render(p, func(w io.Writer) { fmt.Fprintf(w, "updated status page %s: %s\n", p.ID, a.pageURL(p.Slug)) })
		},
	}
	f.add(cmd)
	return cmd
}

func (a *app) statusPagesDelete() *cobra.Command {
	return &cobra.Command{
		Use:     "delete ID|SLUG...",
		Aliases: []string{"rm"},
		Short:   "Delete status pages",
		Example: "  mcpmon status-pages delete acme",
		Args:    minArgs(1, "at least one status page ID or slug"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			return deleteEach(a, args, func(ref string) (apiv1.StatusPageView, string, error) {
				p, err := pageByRef(cmd.Context(), c, ref)
				if err != nil {
					return p, "", err
				}
				return p, fmt.Sprintf("deleted status page %s (%s)", p.ID, p.Slug), c.DeleteStatusPage(cmd.Context(), p.ID)
			})
		},
	}
}

// pageByRef finds one of the tenant's pages by ID, else by slug (unique
// across the deployment, so at most one matches).
func pageByRef(ctx context.Context, c *client.Client, ref string) (apiv1.StatusPageView, error) {
	p, err := c.GetStatusPage(ctx, ref)
	if !client.IsNotFound(err) {
		return p, err
	}
	ps, lerr := c.ListStatusPages(ctx)
	if lerr != nil {
		return p, errors.Join(err, lerr)
	}
	for _, p := range ps {
		if p.Slug == ref {
			return p, nil
		}
	}
	return p, notFoundError{fmt.Errorf("no status page with ID or slug %q (mcpmon status-pages list shows them)", ref)}
}

func (a *app) statusPagesVerifyHost() *cobra.Command {
	return &cobra.Command{
		Use:   "verify-host ID|SLUG",
		Short: "Prove control of a status page's custom host: look up its DNS TXT record",
		Example: `  mcpmon status-pages get acme        # the TXT record to publish
  mcpmon status-pages verify-host acme`,
		Args: exactArgs(1, "a status page ID or slug"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			cur, err := pageByRef(cmd.Context(), c, args[0])
			if err != nil {
				return err
			}
			p, err := c.VerifyStatusPageHost(cmd.Context(), cur.ID)
			if err != nil {
				return err
			}
			return a.render(p, func(w io.Writer) {
				fmt.Fprintf(w, "status page %s: host %s is %s\n", p.Slug, p.Host, hostState(p))
			})
		},
	}
}

func (a *app) statusPagesReleaseHost() *cobra.Command {
	return &cobra.Command{
		Use:   "release-host HOST",
		Short: "Take a custom host back from whatever status page holds it, of any tenant (the operator's admin key)",
		Long: `Sends every status page, of any tenant, that holds HOST (verified or grandfathered) back to pending:
no page is served on HOST and none holds it against a new claim. A page that proves HOST again by DNS
gets it back. Needs an admin key of the default tenant (the deployment operator's); any other key is
told no such route exists.`,
		Example: "  mcpmon status-pages release-host status.bigco.com",
		Args:    exactArgs(1, "one HOST"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			v, err := c.ReleaseStatusPageHost(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			return a.render(v, func(w io.Writer) {
				if len(v.Released) == 0 {
					fmt.Fprintf(w, "host %s: no page held it (every page naming it was pending already)\n", v.Host)
					return
				}
				for _, p := range v.Released {
					fmt.Fprintf(w, "host %s released from status page %s (%s) of tenant %s: pending until it is proven again\n", v.Host, p.ID, p.Slug, p.Tenant)
				}
			})
		},
	}
}

// hostState is where a page's host stands ("" without a host).
func hostState(p apiv1.StatusPageView) string {
	if p.HostVerification == nil {
		return ""
	}
	return p.HostVerification.State
}

// printHostRecord tells what to publish while the host needs its record:
// pending (not served until verify-host finds it), grandfathered with a
// record issued, or served while its re-checks miss it (released once
// they have for the grace); and why a released host is pending again.
func printHostRecord(w io.Writer, p apiv1.StatusPageView) {
	v := p.HostVerification
	if v == nil || v.Record == "" {
		return
	}
	if v.FailingSince != nil {
		fmt.Fprintf(w, "host record missing since %s: %s\n", v.FailingSince.Format(time.RFC3339), model.OneLine(v.Failure))
	}
	if v.ReleasedAt != nil {
		fmt.Fprintf(w, "host released at %s by %s\n", v.ReleasedAt.Format(time.RFC3339), v.ReleasedBy)
	}
	if v.State != "verified" || v.FailingSince != nil {
		fmt.Fprintf(w, "publish %s %s %q, then run: mcpmon status-pages verify-host %s\n", v.Record, v.RecordType, v.Value, p.Slug)
	}
}

// pageURL is where the status page of slug is served: on the API's
// listener, at --server as this user reaches it (a custom host serves it
// at / too, once verified).
func (a *app) pageURL(slug string) string {
	return strings.TrimSuffix(a.server, "/") + "/status/" + url.PathEscape(slug)
}

// warnNoPublicEndpoint tells the owner of a new page that it will list
// nothing: a page's groups select among the tenant's public endpoints only,
// and a page that says "No endpoints are on this page yet" does not say
// why. Best effort: an error reading the list warns of nothing.
func (a *app) warnNoPublicEndpoint(ctx context.Context, c *client.Client) {
	for e, err := range c.Endpoints(ctx, client.EndpointFilter{}) {
		if err != nil || e.Public {
			return
		}
	}
	fmt.Fprintln(a.io.Stderr, "warning: no endpoint of this tenant is public, so the page lists none yet; "+
		"publish one with mcpmon endpoints edit NAME --public --slug SLUG")
}
