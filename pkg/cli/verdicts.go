package cli

import (
	"slices"
	"strings"

	"github.com/spf13/cobra"

	apiv1 "github.com/mcpmon/mcpmon/pkg/api/v1"
	"github.com/mcpmon/mcpmon/pkg/client"
	"github.com/mcpmon/mcpmon/pkg/msg"
)

// verdictStates are the states a verdict can have (endpoint states such as
// paused and pending are not verdicts).
func verdictStates() []string {
	return []string{string(msg.StateUp), string(msg.StateDegraded), string(msg.StateDown), string(msg.StateRegional), string(msg.StateNoData)}
}

// endpointStates are the states an endpoint can be in (GET /v1/endpoints
// ?state=, mcpmon wait --until): a verdict's, paused or pending.
func endpointStates() []string {
	return append(verdictStates(), apiv1.StatePaused, apiv1.StatePending)
}

// stateList is a --state flag's comma-separated states, each one of
// allowed (no-data spelled either way), joined again as the API takes
// them.
func stateList(flag, raw string, allowed []string) (string, error) {
	if raw == "" {
		return "", nil
	}
	var out []string
	for s := range strings.SplitSeq(raw, ",") {
		s = strings.ReplaceAll(strings.TrimSpace(s), "-", "_")
		if !slices.Contains(allowed, s) {
			return "", usagef("--%s %q: want one or more (comma-separated) of %s", flag, s, strings.Join(allowed, ", "))
		}
		out = append(out, s)
	}
	return strings.Join(out, ","), nil
}

func (a *app) verdictsCmd() *cobra.Command {
	g := group("verdicts", "An endpoint's verdicts: one per window, newest first",
		"  mcpmon verdicts list search\n  mcpmon verdicts list search --state down,degraded --limit 20")
	g.Aliases = []string{"verdict"}
	g.AddCommand(a.verdictsList())
	return g
}

func (a *app) verdictsList() *cobra.Command {
	var (
		states   []string
		limit    int
		pageSize int
	)
	cmd := &cobra.Command{
		Use:   "list ID|NAME",
		Short: "List an endpoint's verdicts, newest window first",
		Long: `verdicts list walks the endpoint's verdicts page by page, newest window first,
and stops after --limit of them. --state keeps the verdicts of those states:
the API filters verdicts by nothing, so the command reads pages until it has
--limit matches or the history ends.`,
		Example: `  mcpmon verdicts list search
  mcpmon verdicts list search --state down,degraded --limit 20
  mcpmon verdicts list 3kq2v7xw5b4mzp6a --limit 0 -o json | jq -r '.[] | [.window, .state] | @tsv'`,
		Args:              exactArgs(1, "one endpoint ID or name"),
		ValidArgsFunction: a.completeEndpoints(false),
		RunE: func(cmd *cobra.Command, args []string) error {
			keep, err := stateFilter(states)
			if err != nil {
				return err
			}
			if limit < 0 {
				return usagef("--limit %d: want 0 (all) or more", limit)
			}
			c, id, err := a.endpointClient(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			vs := take(c.Verdicts(cmd.Context(), id, client.VerdictFilter{Limit: pageSize}), limit, keep)
			return renderList(a, vs, []any{"WINDOW", "STATE", "CLASS", "RESULTS", "FAILING REGIONS", "REASON"},
				func(v apiv1.VerdictView) []any {
					return []any{v.Window, string(v.State), v.Class, v.Results, v.FailingRegions, v.Reason}
				})
		},
	}
	cmd.Flags().StringSliceVar(&states, "state", nil, "only these states, comma-separated: "+strings.Join(verdictStates(), ", "))
	cmd.Flags().IntVar(&limit, "limit", 100, "at most this many verdicts (0: every one kept)")
	cmd.Flags().IntVar(&pageSize, "page-size", 0, "verdicts per request (0: the server's default)")
	_ = cmd.RegisterFlagCompletionFunc("state", cobra.FixedCompletions(verdictStates(), cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

// stateFilter is --state as a filter (nil: every state), refusing a state
// no verdict has.
func stateFilter(states []string) (func(apiv1.VerdictView) bool, error) {
	if len(states) == 0 {
		return nil, nil
	}
	list, err := stateList("state", strings.Join(states, ","), verdictStates())
	if err != nil {
		return nil, err
	}
	want := map[msg.State]bool{}
	for s := range strings.SplitSeq(list, ",") {
		want[msg.State(s)] = true
	}
	return func(v apiv1.VerdictView) bool { return want[v.State] }, nil
}
