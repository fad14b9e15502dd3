package cli

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	apiv1 "github.com/mcpmon/mcpmon/pkg/api/v1"
)

func (a *app) dlqCmd() *cobra.Command {
	g := group("dlq", "Dead-letter queues of the stages (operator: admin key of the default tenant)",
		"  mcpmon dlq list\n  mcpmon dlq show verdicts\n  mcpmon dlq replay verdicts")
	g.AddCommand(a.dlqList(), a.dlqShow(), a.dlqReplay(), a.dlqPurge())
	return g
}

var dlqQueues = []string{"commands", "results", "verdicts"}

func (a *app) dlqList() *cobra.Command {
	return &cobra.Command{
		Use:     "list",
		Short:   "Depth and age of each dead-letter queue",
		Example: "  mcpmon dlq list\n  mcpmon dlq list -o json",
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			qs, err := c.DeadLetterQueues(cmd.Context())
			if err != nil {
				return err
			}
			if qs == nil {
				qs = []apiv1.DLQView{}
			}
			return a.render(qs, func(w io.Writer) {
				row(w, "QUEUE", "DEPTH", "IN FLIGHT", "OLDEST")
				for _, q := range qs {
					row(w, q.Queue, q.Depth, q.InFlight, q.OldestAge)
				}
			})
		},
	}
}

func (a *app) dlqShow() *cobra.Command {
	var limit int
	cmd := &cobra.Command{
		Use:       "show QUEUE",
		Short:     "Peek at a queue's dead letters, with why each failed",
		Example:   "  mcpmon dlq show verdicts --limit 10",
		ValidArgs: dlqQueues,
		Args:      exactArgs(1, "one QUEUE: commands, results or verdicts"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			ms, err := c.PeekDeadLetters(cmd.Context(), args[0], limit)
			if err != nil {
				return err
			}
			if ms == nil {
				ms = []apiv1.DeadLetterView{}
			}
			return a.render(ms, func(w io.Writer) {
				row(w, "ID", "GROUP", "RECEIVES", "DEAD SINCE", "REASON")
				for _, m := range ms {
					row(w, m.ID, m.GroupID, m.ReceiveCount, m.SentAt, m.Reason)
				}
			})
		},
	}
	cmd.Flags().IntVar(&limit, "limit", 100, "most messages to show")
	return cmd
}

func (a *app) dlqReplay() *cobra.Command {
	var ids []string
	cmd := &cobra.Command{
		Use:       "replay QUEUE [--id ID]...",
		Short:     "Move dead letters back to their queue (all, or the ones named)",
		Example:   "  mcpmon dlq replay verdicts\n  mcpmon dlq replay verdicts --id 7 --id 9",
		ValidArgs: dlqQueues,
		Args:      exactArgs(1, "one QUEUE: commands, results or verdicts"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			r, err := c.RedriveDeadLetters(cmd.Context(), args[0], ids)
			if err != nil {
				return err
			}
			if err := a.render(r, func(w io.Writer) {
				if r.Task != "" {
					fmt.Fprintf(w, "replaying %s's dead letters: SQS move task %s\n", args[0], r.Task)
				} else {
					fmt.Fprintf(w, "replayed %d message(s) to %s\n", r.Moved, args[0])
				}
			}); err != nil {
				return err
			}
			if len(r.Missing) > 0 {
				return notFoundError{fmt.Errorf("not in the dead-letter queue of %s: %s (mcpmon dlq show %s lists them)", args[0], strings.Join(r.Missing, ", "), args[0])}
			}
			return nil
		},
	}
	cmd.Flags().StringArrayVar(&ids, "id", nil, "only this message ID (repeatable)")
	return cmd
}

func (a *app) dlqPurge() *cobra.Command {
	var yes bool
	cmd := &cobra.Command{
		Use:       "purge QUEUE --yes",
		Short:     "Delete every dead letter of a queue for good",
		Example:   "  mcpmon dlq purge results --yes",
		ValidArgs: dlqQueues,
		Args:      exactArgs(1, "one QUEUE: commands, results or verdicts"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !yes {
				return usagef("purge deletes every dead letter of %s for good: add --yes", args[0])
			}
			c, err := a.client()
			if err != nil {
				return err
			}
			n, err := c.PurgeDeadLetters(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			return a.render(map[string]int{"purged": n}, func(w io.Writer) {
				fmt.Fprintf(w, "purged %d message(s) from the dead-letter queue of %s\n", n, args[0])
			})
		},
	}
	cmd.Flags().BoolVar(&yes, "yes", false, "really delete")
	return cmd
}
