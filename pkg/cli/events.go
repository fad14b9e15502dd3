package cli

import (
	"strings"

	"github.com/spf13/cobra"

	apiv1 "github.com/mcpmon/mcpmon/pkg/api/v1"
	"github.com/mcpmon/mcpmon/pkg/client"
	"github.com/mcpmon/mcpmon/pkg/model"
)

func (a *app) eventsCmd() *cobra.Command {
	g := group("events", "An endpoint's change events: catalog, version, certificate and credential expiry",
		"  mcpmon events list search\n  mcpmon events list search --kind catalog_breaking")
	g.Aliases = []string{"event"}
	g.AddCommand(a.eventsList())
	return g
}

func (a *app) eventsList() *cobra.Command {
	var (
		f     client.EventFilter
		limit int
	)
	cmd := &cobra.Command{
		Use:   "list ID|NAME",
		Short: "List an endpoint's change events, newest first",
		Long: `events list shows the endpoint's durable change events, newest first: one per
change (a tool removed from the catalog, a new server version, a certificate
or credential about to expire) however many probes saw it.`,
		Example: `  mcpmon events list search
  mcpmon events list search --kind catalog_breaking --limit 10
  mcpmon events list search -o json | jq '.[0].diff'`,
		Args:              exactArgs(1, "one endpoint ID or name"),
		ValidArgsFunction: a.completeEndpoints(false),
		RunE: func(cmd *cobra.Command, args []string) error {
			if f.Kind != "" && !model.IsEventKind(f.Kind) {
				return usagef("--kind %q: want one of %s", f.Kind, strings.Join(model.EventKinds(), ", "))
			}
			if limit < 0 {
				return usagef("--limit %d: want 0 (all) or more", limit)
			}
			c, id, err := a.endpointClient(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			return renderList(a, take(c.Events(cmd.Context(), id, f), limit, nil),
				[]any{"OBSERVED", "KIND", "SEVERITY", "REGION", "MESSAGE"},
				func(e apiv1.EventView) []any {
					return []any{e.ObservedAt, e.Kind, e.Severity, e.Region, truncate(e.Message, 100)}
				})
		},
	}
	cmd.Flags().StringVar(&f.Kind, "kind", "", "only events of this kind: "+strings.Join(model.EventKinds(), ", "))
	cmd.Flags().IntVar(&limit, "limit", 100, "at most this many events (0: every one kept)")
	cmd.Flags().IntVar(&f.Limit, "page-size", 0, "events per request (0: the server's default)")
	_ = cmd.RegisterFlagCompletionFunc("kind", cobra.FixedCompletions(model.EventKinds(), cobra.ShellCompDirectiveNoFileComp))
	return cmd
}
