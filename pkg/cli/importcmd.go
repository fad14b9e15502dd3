package cli

import (
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/spf13/cobra"

	"github.com/mcpmon/mcpmon/pkg/registry"
)

// importCmd is `mcpmon import registry`: pkg/registry reads the MCP
// Registry, plans against the tenant's imported endpoints and applies the
// plan through pkg/client.
func (a *app) importCmd() *cobra.Command {
	g := group("import", "Import endpoints from a catalogue of MCP servers",
		`  mcpmon import registry --url https://registry.modelcontextprotocol.io --dry-run`)
	g.AddCommand(a.importRegistryCmd())
	return g
}

func (a *app) importRegistryCmd() *cobra.Command {
	var (
		url       string
		sync      bool
		interval  time.Duration
		fullEvery time.Duration
		since     string
		opts      registry.Options
	)
	cmd := &cobra.Command{
		Use:   "registry --url URL",
		Short: "Register one endpoint per remote of every server an MCP Registry lists",
		Long: `import registry reads the MCP Registry v0.1 API (GET /v0.1/servers, every page)
and registers one endpoint per streamable-http or sse remote of each server's
latest entry, labelled source=mcp-registry (or --source) with the server's
name, version and status. Deleted and deprecated servers, package-only
servers and remotes that need a header the registry gives no value for are
skipped, each with its reason in the report. Only endpoints carrying the
source label are ever updated or removed: your own endpoints are never
touched. On imported endpoints only what the registry owns changes (name,
URL, transport, its labels and headers); schedule, timeout, rules and sinks
stay as you set them.

Without --sync it imports once: a full import, or with --since a sync of the
entries updated after that time (pass the highWater of the last report).
With --sync it keeps running: a full import now, a sync every --interval,
and a full import again every --full-every.`,
		Example: `  # what would be imported (nothing changes)
  mcpmon import registry --url https://registry.modelcontextprotocol.io --dry-run
  # import once, new endpoints every 5 minutes, at most 200 new ones per run
  mcpmon import registry --url https://registry.modelcontextprotocol.io --schedule '@every 5m' --max-create 200
  # keep it current
  mcpmon import registry --url https://registry.modelcontextprotocol.io --sync --interval 10m
  # one-shot sync from the last run's high-water mark
  mcpmon import registry --url https://registry.modelcontextprotocol.io --since 2026-11-30T10:00:00Z -o json`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if url == "" {
				return usagef("--url is required (the registry's base URL, e.g. https://registry.modelcontextprotocol.io)")
			}
			if since != "" {
				t, err := time.Parse(time.RFC3339, since)
				if err != nil {
					return usagef("--since %q: want an RFC 3339 time such as 2026-11-30T10:00:00Z", since)
				}
				opts.Since = t
			}
			if sync && interval <= 0 {
				return usagef("--interval must be positive with --sync")
			}
			c, err := a.client()
			if err != nil {
				return err
			}
			logger := slog.New(slog.NewTextHandler(a.io.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
			reg, err := registry.NewClient(url, registry.ClientOptions{
				HTTP: a.io.HTTPClient, Logger: logger,
				Progress: func(p registry.Progress) { fmt.Fprintln(a.io.Stderr, "registry:", p) },
			})
			if err != nil {
				return usageError{err}
			}
			im := &registry.Importer{Registry: reg, Endpoints: c, Logger: logger}
			if !sync {
				rep, err := im.Import(cmd.Context(), opts)
				if err != nil {
					return fmt.Errorf("import from %s: %w", reg.BaseURL(), err)
				}
				if err := a.render(rep, func(w io.Writer) { _ = rep.WriteTable(w) }); err != nil {
					return err
				}
				if rep.Failed > 0 {
					return fmt.Errorf("%d of the import's actions failed (see the report); run it again once the cause is fixed", rep.Failed)
				}
				return nil
			}
			err = im.Run(cmd.Context(), registry.RunOptions{Options: opts, Interval: interval, FullEvery: fullEvery,
				OnReport: func(rep registry.Report, err error) {
					if err != nil {
						fmt.Fprintf(a.io.Stderr, "import from %s failed (retrying in %s): %v\n", reg.BaseURL(), interval, err)
						return
					}
					_ = a.render(rep, func(w io.Writer) { _ = rep.WriteTable(w) })
				}})
			if cmd.Context().Err() != nil {
				return nil // interrupted: the way a --sync run ends
			}
			return err
		},
	}
	f := cmd.Flags()
	f.StringVar(&url, "url", "", "registry base URL (…/v0.1 or …/v0.1/servers accepted too)")
	f.BoolVar(&sync, "sync", false, "keep running: a full import now, then a sync every --interval")
	f.DurationVar(&interval, "interval", 10*time.Minute, "with --sync: time between syncs")
	f.DurationVar(&fullEvery, "full-every", registry.DefaultFullEvery, "with --sync: a full import at least this often (restores imported endpoints deleted by hand)")
	f.StringVar(&since, "since", "", "one-shot sync: only entries updated after this RFC 3339 time (the highWater of the last report)")
	f.BoolVar(&opts.DryRun, "dry-run", false, "print the plan, change nothing")
	f.StringVar(&opts.Schedule, "schedule", "", "schedule of new endpoints (default: mcpmon's)")
	f.StringVar(&opts.Timeout, "timeout", "", "probe timeout of new endpoints (default: mcpmon's)")
	f.IntVar(&opts.MaxCreate, "max-create", registry.DefaultMaxCreate, "at most this many creates per import (-1: no limit); the rest are created by the next run")
	f.StringVar(&opts.Source, "source", registry.DefaultSource, "value of the source label; one per registry if you import several")
	return cmd
}
