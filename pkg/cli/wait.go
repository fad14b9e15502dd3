package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"

	apiv1 "github.com/mcpmon/mcpmon/pkg/api/v1"
)

// waitFlags are `mcpmon wait`'s flags.
type waitFlags struct {
	until             []string
	timeout, interval time.Duration
	fresh             bool
}

// waitCheck is the pure decision of one poll: whether v is in a wanted
// state, and (with fresh) decided by a window that began at or after
// since, so a verdict from before a deploy does not pass its gate.
func waitCheck(v apiv1.EndpointView, f waitFlags, since time.Time) bool {
	if !slices.Contains(f.until, v.State) {
		return false
	}
	if !f.fresh || v.State == "paused" || v.State == "pending" {
		return true
	}
	return v.StateWindow != nil && !v.StateWindow.Before(since)
}

func (a *app) waitCmd() *cobra.Command {
	f := waitFlags{}
	cmd := &cobra.Command{
		Use:   "wait ID|NAME",
		Short: "Block until an endpoint reaches a state (a deploy gate for CI)",
		Long: `wait polls the endpoint every --interval until its state is one of --until,
then exits 0. It prints each state it sees change on stderr, and every
5 s between changes how long it has been waiting. Past
--timeout it exits 1 with one line naming the state it was left in.
With --fresh, only a verdict of a window that began after wait started
counts: a pipeline that just deployed waits for the first verdict of the
new version, not the one from before it.

Exit status: 0 when the state was reached, 1 on timeout or an API error,
2 for a usage error.`,
		Example: `  mcpmon wait search --until up --timeout 5m
  mcpmon wait 3kq2v7xw5b4mzp6a --until up,degraded --fresh --timeout 10m`,
		Args:              exactArgs(1, "one endpoint ID or name"),
		ValidArgsFunction: a.completeEndpoints(false),
		PreRunE: func(cmd *cobra.Command, args []string) error {
			for _, s := range f.until {
				if !slices.Contains(endpointStates(), s) {
					return usagef("--until %q: want one or more of %s", s, strings.Join(endpointStates(), ", "))
				}
			}
			if len(f.until) == 0 {
				return usagef("--until: name at least one state")
			}
			if f.timeout <= 0 || f.interval <= 0 {
				return usagef("--timeout and --interval must be positive")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), f.timeout)
			defer cancel()
			since := time.Now()
			v, err := a.endpointByRef(ctx, c, args[0])
			if err != nil {
				return err
			}
			id, last := v.ID, ""
			var seen atomic.Pointer[string] // the state last read, for the progress lines
			first := v.State                // a copy: v itself is overwritten by each read below
			seen.Store(&first)
			name := v.Name
			stop := a.progress(func(elapsed time.Duration) string {
				return fmt.Sprintf("wait %s: %s after %s (until %s; timeout %s)", name, *seen.Load(), elapsed, strings.Join(f.until, " or "), f.timeout)
			})
			defer stop()
			tick := time.NewTicker(f.interval)
			defer tick.Stop()
			for {
				if v.State != last {
					fmt.Fprintf(a.io.Stderr, "%s %s: %s\n", time.Now().UTC().Format(time.RFC3339), v.Name, v.State)
					last = v.State
				}
				if waitCheck(v, f, since) {
					return a.render(v, func(w io.Writer) { fields(w, "ID", v.ID, "Name", v.Name, "State", v.State) })
				}
				select {
				case <-ctx.Done():
					if cmd.Context().Err() != nil {
						return cmd.Context().Err()
					}
					return fmt.Errorf("endpoint %s is %s after %s, not %s", v.Name, v.State, f.timeout, strings.Join(f.until, " or "))
				case <-tick.C:
				}
				next, err := c.GetEndpoint(ctx, id)
				switch {
				case errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil:
					continue // the select above reports the timeout
				case err != nil:
					return fmt.Errorf("wait for endpoint %s: %w", v.Name, err)
				}
				state := next.State
				seen.Store(&state)
				v = next
			}
		},
	}
	fl := cmd.Flags()
	fl.StringSliceVar(&f.until, "until", []string{"up"}, "the states that end the wait (comma-separated): "+strings.Join(endpointStates(), ", "))
	fl.DurationVar(&f.timeout, "timeout", 5*time.Minute, "give up (exit 1) after this long")
	fl.DurationVar(&f.interval, "interval", 5*time.Second, "how often to read the endpoint's state")
	fl.BoolVar(&f.fresh, "fresh", false, "count only a verdict of a window that began after wait started")
	_ = cmd.RegisterFlagCompletionFunc("until", cobra.FixedCompletions(endpointStates(), cobra.ShellCompDirectiveNoFileComp))
	return cmd
}
