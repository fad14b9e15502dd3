package cli

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	apiv1 "github.com/mcpmon/mcpmon/pkg/api/v1"
	"github.com/mcpmon/mcpmon/pkg/model"
)

// incidentsUpdate posts the owner's update to an incident. The status is
// checked here against the model's list, so a typo is a usage error (exit
// 2) before any request; the message's rules are the server's.
func (a *app) incidentsUpdate() *cobra.Command {
	var in apiv1.UpdateInput
	statuses := make([]string, len(model.UpdateStatuses))
	for i, s := range model.UpdateStatuses {
		statuses[i] = string(s)
	}
	cmd := &cobra.Command{
		Use:   "update ID",
		Short: "Post an update (status and message) to an incident and its public page",
		Example: "  mcpmon incidents update 3kq2v7xw5b4mzp6a-20260301T1200 --status investigating --message 'Looking into errors'\n" +
			"  mcpmon incidents update 3kq2v7xw5b4mzp6a-20260301T1200 --status resolved --message 'Rolled back' -o json",
		Args: exactArgs(1, "one incident ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !slices.Contains(statuses, in.Status) {
				return usagef("--status %q: want one of %s", in.Status, strings.Join(statuses, ", "))
			}
			if strings.TrimSpace(in.Message) == "" {
				return usagef("--message is required")
			}
			c, err := a.client()
			if err != nil {
				return err
			}
			v, err := c.PostIncidentUpdate(cmd.Context(), args[0], in)
			if err != nil {
				return err
			}
			return a.render(v, func(w io.Writer) {
				fmt.Fprintf(w, "incident %s (%s) has %d update(s); the newest says %s\n", v.ID, v.State, len(v.Updates), v.Updates[0].Status)
			})
		},
	}
	cmd.Flags().StringVar(&in.Status, "status", "", strings.Join(statuses, ", ")+" (the owner's word: resolved does not resolve the incident)")
	cmd.Flags().StringVar(&in.Message, "message", "", "what to tell the incident's readers (public on the endpoint's status page)")
	_ = cmd.RegisterFlagCompletionFunc("status", cobra.FixedCompletions(statuses, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}
