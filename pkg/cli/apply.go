package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"

	"github.com/spf13/cobra"

	"github.com/mcpmon/mcpmon/alerter/sinks"
	"github.com/mcpmon/mcpmon/pkg/client"
	"github.com/mcpmon/mcpmon/pkg/declarative"
)

func (a *app) applyCmd() *cobra.Command {
	var path string
	var o declarative.Options
	var dry bool
	var allowEnv []string
	cmd := &cobra.Command{
		Use:   "apply -f FILE|DIR [--prune] [--dry-run] [--force-secrets]",
		Short: "Make the tenant's endpoints (by name) and status pages (by slug) match YAML files",
		Long: `apply reads endpoints from a YAML file or a directory of *.yaml/*.yml files
and creates, updates and (with --prune) deletes the tenant's endpoints so the
server matches them. Endpoints are matched by name: names must be unique in
the files and on the server.

Secrets — header values, credential-like URL query parameters, sink URLs,
keys and passwords — are written only as references, ${env:NAME} or
${file:PATH}; a literal secret is an error. The files are treated as
untrusted (a pull request may have written them): ${file:} reads only
files inside the YAML file's directory (after resolving symbolic links),
and ${env:} reads only the variables --allow-env names, by default those
starting with MCPMON_APPLY_ (what export writes). Variables that configure
mcpmon itself (MCPMON_TOKEN, MCPMON_SERVER and every other MCPMON_*) are
never read.
The server never returns secrets, so the diff compares header names and
redacted sinks, not secret values: a rotated token alone is no change. Use
--force-secrets to re-send every endpoint's headers and sinks.

A statusPages: list declares the tenant's status pages, matched by slug and
replaced whole when they differ, after the endpoints. --prune deletes the
server's pages that no file declares only when some file has a statusPages
key (statusPages: [] for none), so a file of endpoints alone leaves the
pages be.`,
		Example: `  mcpmon apply -f endpoints.yaml --dry-run
  mcpmon apply -f config/ --prune
  MCPMON_APPLY_SEARCH_TOKEN=... mcpmon apply -f endpoints.yaml --force-secrets
  mcpmon apply -f endpoints.yaml --allow-env CI_SECRET_ --allow-env ONCALL_HOOK

  # endpoints.yaml
  endpoints:
    - name: search
      url: https://mcp.example.com/mcp
      schedule: "@every 1m"
      headers:
        Authorization: Bearer ${env:MCPMON_APPLY_SEARCH_TOKEN}
      labels: {team: search}
      sinks:
        - {name: oncall, type: webhook, url: "${env:MCPMON_APPLY_ONCALL_HOOK}"}
  statusPages:
    - slug: acme
      title: Acme status
      groups:
        - {name: Search, selector: {team: search}}`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if path == "" {
				return usagef("-f FILE|DIR is required")
			}
			ctx := cmd.Context()
			loaded, err := declarative.LoadAll(declarative.OSFS{}, path)
			if errors.Is(err, fs.ErrNotExist) {
				return usagef("-f %s: no such file or directory", path)
			}
			if err != nil {
				return err
			}
			desired, err := a.applyResolver(allowEnv).Resolve(loaded.Endpoints)
			if err != nil {
				return err
			}
			c, err := a.client()
			if err != nil {
				return err
			}
			current, err := c.ListEndpoints(ctx, "")
			if err != nil {
				return err
			}
			o.RedactSinks = sinks.RedactEndpointSinks
			plan, err := declarative.MakePlan(desired, current, o)
			if err != nil {
				return err
			}
			// Pages after endpoints: an endpoint that gives up a public
			// slug does so before a page takes it.
			if loaded.DeclaresPages {
				pages, err := c.ListStatusPages(ctx)
				if err != nil {
					return err
				}
				pp, err := declarative.PlanStatusPages(loaded.StatusPages, pages, o.Prune)
				if err != nil {
					return err
				}
				plan.Changes = append(plan.Changes, pp.Changes...)
			}
			if dry || plan.Empty() {
				return a.render(plan, func(w io.Writer) { printPlan(w, plan, dry) })
			}
			// Creates, then updates, then deletes. Each step is one request
			// and the plan is recomputed from the server on every run, so a
			// run cut short (a crash, a refused change) is finished by the
			// next one; an update carries If-Match, so an endpoint changed
			// since it was read is refused rather than overwritten.
			done := declarative.Plan{}
			for _, ch := range plan.Changes {
				if ch.Kind == declarative.KindStatusPage {
					if err := applyPageChange(ctx, c, &ch); err != nil {
						return fmt.Errorf("%s status page %q: %w (%d change(s) applied before it)", ch.Action, ch.Name, err, len(done.Changes))
					}
					done.Changes = append(done.Changes, ch)
					continue
				}
				switch ch.Action {
				case declarative.Create:
					v, err := c.CreateEndpoint(ctx, *ch.Input)
					if err != nil {
						return fmt.Errorf("create %q: %w (%d change(s) applied before it)", ch.Name, err, len(done.Changes))
					}
					ch.ID = v.ID
				case declarative.Update:
					if _, err := c.PatchEndpointIfMatch(ctx, ch.ID, ch.Patch, ch.Version); err != nil {
						return fmt.Errorf("update %q: %w (%d change(s) applied before it)", ch.Name, err, len(done.Changes))
					}
				case declarative.Delete:
					if err := c.DeleteEndpoint(ctx, ch.ID); err != nil {
						return fmt.Errorf("delete %q: %w (%d change(s) applied before it)", ch.Name, err, len(done.Changes))
					}
				}
				done.Changes = append(done.Changes, ch)
			}
			return a.render(done, func(w io.Writer) { printPlan(w, done, false) })
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&path, "filename", "f", "", "YAML file, or directory of *.yaml/*.yml files")
	fl.BoolVar(&o.Prune, "prune", false, "delete the tenant's endpoints that no file declares")
	fl.BoolVar(&dry, "dry-run", false, "print the changes, make none")
	fl.StringArrayVar(&allowEnv, "allow-env", nil, "an environment variable ${env:} may read, or a prefix ending in _ (repeatable; default MCPMON_APPLY_)")
	fl.BoolVar(&o.ForceSecrets, "force-secrets", false, "re-send every endpoint's headers and sinks (a changed secret value is not a diff otherwise)")
	_ = cmd.MarkFlagFilename("filename", "yaml", "yml")
	return cmd
}

// applyPageChange sends one status page change of a plan.
func applyPageChange(ctx context.Context, c *client.Client, ch *declarative.Change) error {
	switch ch.Action {
	case declarative.Create:
		v, err := c.CreateStatusPage(ctx, *ch.Page)
		ch.ID = v.ID
		return err
	case declarative.Update:
		_, err := c.ReplaceStatusPage(ctx, ch.ID, *ch.Page)
		return err
	case declarative.Delete:
		return c.DeleteStatusPage(ctx, ch.ID)
	}
	return nil
}

// applyResolver confines the files' references to their own directories
// and to the variables allow names (none given: declarative.DefaultAllowEnv).
func (a *app) applyResolver(allow []string) declarative.Resolver {
	r := a.resolver()
	r.Trusted = false
	r.Where = ""
	r.AllowEnv = allow
	return r
}

// printPlan writes one line per change: + create, ~ update with each field
// (never a secret value), - delete.
func printPlan(w io.Writer, p declarative.Plan, dry bool) {
	if p.Empty() {
		fmt.Fprintln(w, "no changes: the server matches the files")
		return
	}
	for _, c := range p.Changes {
		name := c.Name
		if c.Kind != "" {
			name = c.Kind + " " + c.Name
		}
		switch c.Action {
		case declarative.Create:
			fmt.Fprintf(w, "+ create %s\t\n", name)
		case declarative.Update:
			fmt.Fprintf(w, "~ update %s\t(%s)\n", name, c.ID)
			for _, f := range c.Fields {
				fmt.Fprintf(w, "    %s:\t%s → %s\n", f.Field, f.From, f.To)
			}
		case declarative.Delete:
			fmt.Fprintf(w, "- delete %s\t(%s)\n", name, c.ID)
		}
	}
	if dry {
		fmt.Fprintf(w, "dry run: %d change(s), none made\n", len(p.Changes))
	}
}

func (a *app) exportCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "export [-o yaml|json]",
		Short: "Write the tenant's endpoints and status pages in apply's format, secrets as ${env:…} references",
		Long: `export writes every endpoint and status page of the tenant as an apply file. Secrets never
leave the server, so each one is written as a reference to an environment
variable named MCPMON_APPLY_<ENDPOINT>_<HEADER> for a header, MCPMON_APPLY_<ENDPOINT>_SINK_<SINK>_<MEMBER>
for a sink secret and MCPMON_APPLY_<ENDPOINT>_URL_<PARAM> for a URL query secret
(upper case, other characters as _; apply reads only MCPMON_APPLY_* by default,
see --allow-env). Applying the export against the same
server changes nothing.`,
		Example: `  mcpmon export > endpoints.yaml
  mcpmon export -o json | jq '.endpoints[].name'`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			views, err := c.ListEndpoints(cmd.Context(), "")
			if err != nil {
				return err
			}
			pages, err := c.ListStatusPages(cmd.Context())
			if err != nil {
				return err
			}
			doc := declarative.Export(views)
			doc.StatusPages = declarative.ExportStatusPages(pages)
			if a.output == "json" {
				return a.render(doc, nil)
			}
			b, err := declarative.YAML(doc)
			if err != nil {
				return err
			}
			fmt.Fprintln(a.io.Stdout, "# mcpmon export: secrets are ${env:...} references; set them before applying elsewhere")
			_, err = a.io.Stdout.Write(b)
			return err
		},
	}
}
