package cli

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	apiv1 "github.com/mcpmon/mcpmon/pkg/api/v1"
	"github.com/mcpmon/mcpmon/pkg/client"
)

func (a *app) auditCmd() *cobra.Command {
	g := group("audit", "The tenant's audit log: every change made over the API (admin)",
		"  mcpmon audit list --since 24h\n  mcpmon audit list -o json | jq -r '.[] | [.time, .actor.name, .action, .objectId] | @tsv'")
	g.AddCommand(a.auditList())
	return g
}

func (a *app) auditList() *cobra.Command {
	var (
		since, until string
		limit        int
		f            client.AuditFilter
	)
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the tenant's audit entries, newest first (admin key)",
		Long: `audit list shows who changed what over the API, newest first: the time, the
key (its name, or its ID), the action, the object and the names of the
fields sent, never their values. --since and --until take RFC 3339 times or
a duration back from now (24h, 30m).`,
		Example: `  mcpmon audit list
  mcpmon audit list --since 24h --limit 20
  mcpmon audit list --since 2026-11-01T00:00:00Z --until 2026-11-02T00:00:00Z -o yaml`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			now := time.Now()
			var err error
			if f.Since, err = timeFlag("--since", since, now); err != nil {
				return err
			}
			if f.Until, err = timeFlag("--until", until, now); err != nil {
				return err
			}
			if !f.Since.IsZero() && !f.Until.IsZero() && !f.Until.After(f.Since) {
				return usagef("--until must be after --since")
			}
			if limit < 0 {
				return usagef("--limit %d: want 0 (all) or more", limit)
			}
			c, err := a.client()
			if err != nil {
				return err
			}
			err = renderList(a, take(c.Audit(cmd.Context(), f), limit, nil),
				[]any{"TIME", "ACTOR", "ACTION", "OBJECT", "STATUS", "SUMMARY"},
				func(e apiv1.AuditEntryView) []any {
					return []any{e.Time, or(e.Actor.Name, e.Actor.KeyID), e.Action, e.ObjectKind + " " + e.ObjectID, e.Status, e.Summary}
				})
			if client.IsNotFound(err) {
				// Not a missing object: the server keeps no log (exit 1).
				return fmt.Errorf("%s (this server keeps no audit log)", err.Error())
			}
			return err
		},
	}
	cmd.Flags().StringVar(&since, "since", "", "entries at or after this time: RFC 3339, or a duration ago (24h)")
	cmd.Flags().StringVar(&until, "until", "", "entries before this time: RFC 3339, or a duration ago")
	cmd.Flags().IntVar(&limit, "limit", 100, "at most this many entries (0: every one kept)")
	cmd.Flags().IntVar(&f.Limit, "page-size", 0, "entries per request (0: the server's default)")
	return cmd
}

// timeFlag reads a time flag: an RFC 3339 time, or a Go duration back from
// now ("" is the zero time: unbounded).
func timeFlag(name, v string, now time.Time) (time.Time, error) {
	if v == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339, v); err == nil {
		return t, nil
	}
	if d, err := time.ParseDuration(v); err == nil && d > 0 {
		return now.Add(-d), nil
	}
	return time.Time{}, usagef("%s %q: want an RFC 3339 time (2026-11-01T00:00:00Z) or a duration ago (24h)", name, v)
}
