package cli

import (
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"time"

	"github.com/spf13/cobra"

	apiv1 "github.com/mcpmon/mcpmon/pkg/api/v1"
)

func (a *app) uptimeCmd() *cobra.Command {
	var rng, from, to string
	cmd := &cobra.Command{
		Use:   "uptime ID|NAME",
		Short: "An endpoint's uptime, incidents and latency over a range",
		Long: `uptime shows the endpoint's uptime over a range ending now (--range 24h, 7d,
30d or 90d) or between two times (--from and --to, RFC 3339): the seconds
spent in each state, the uptime ratio ((up+degraded+regional) / (that+down);
unknown when nothing was measured), the incidents opened in the range and
the probe latency quantiles per phase, from the store's rollups.`,
		Example: `  mcpmon uptime search
  mcpmon uptime search --range 30d
  mcpmon uptime search --from 2026-11-01T00:00:00Z --to 2026-11-08T00:00:00Z -o json | jq .uptime.ratio`,
		Args:              exactArgs(1, "one endpoint ID or name"),
		ValidArgsFunction: a.completeEndpoints(false),
		RunE: func(cmd *cobra.Command, args []string) error {
			var f, t time.Time
			custom := from != "" || to != ""
			if custom {
				if changed(cmd, "range") {
					return usagef("--range and --from/--to: give one")
				}
				var err1, err2 error
				f, err1 = time.Parse(time.RFC3339, from)
				t, err2 = time.Parse(time.RFC3339, to)
				if err1 != nil || err2 != nil || !t.After(f) {
					return usagef("--from and --to: want both, RFC 3339 times (2026-11-01T00:00:00Z), --from first")
				}
			} else if !slices.Contains([]string{"24h", "7d", "30d", "90d"}, rng) {
				return usagef("--range %q: want 24h, 7d, 30d or 90d (or --from and --to)", rng)
			}
			c, id, err := a.endpointClient(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			var v apiv1.UptimeView
			if custom {
				v, err = c.UptimeBetween(cmd.Context(), id, f, t)
			} else {
				v, err = c.Uptime(cmd.Context(), id, rng)
			}
			if httpStatus(err) == http.StatusNotImplemented {
				return hintError{err, "this server's store keeps no rollups"}
			}
			if err != nil {
				return err
			}
			return a.render(v, func(w io.Writer) { uptimeTable(w, args[0], v) })
		},
	}
	cmd.Flags().StringVar(&rng, "range", "24h", "the range ending now: 24h, 7d, 30d or 90d")
	cmd.Flags().StringVar(&from, "from", "", "start of a custom range (RFC 3339), with --to")
	cmd.Flags().StringVar(&to, "to", "", "end of a custom range (RFC 3339)")
	_ = cmd.RegisterFlagCompletionFunc("range", cobra.FixedCompletions([]string{"24h", "7d", "30d", "90d"}, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

func uptimeTable(w io.Writer, ref string, v apiv1.UptimeView) {
	u := v.Uptime
	ratio := "unknown (nothing measured)"
	if u.Measured {
		ratio = fmt.Sprintf("%.3f%%", 100*u.Ratio)
	}
	fields(w, "Endpoint", endpointCell(ref, v.EndpointID), "Range", fmt.Sprintf("%s: %s → %s, by %s", v.Range, cell(u.From), cell(u.To), v.Resolution),
		"Uptime", ratio, "Up", durationCell(u.Up), "Degraded", durationCell(u.Degraded), "Regional", durationCell(u.Regional),
		"Down", durationCell(u.Down), "No data", durationCell(u.NoData), "Maintenance", durationCell(u.Maintenance),
		"Incidents", v.Incidents)
	for _, phase := range slices.Sorted(maps.Keys(v.Latency)) {
		l := v.Latency[phase]
		fields(w, "Latency "+phase, fmt.Sprintf("p50 %s  p95 %s  p99 %s  (%.0f probes)", seconds(l.P50), seconds(l.P95), seconds(l.P99), l.Count))
	}
}

// seconds is a latency in seconds for people, to the millisecond.
func seconds(s float64) string {
	return time.Duration(s * float64(time.Second)).Round(time.Millisecond).String()
}

// endpointCell names an endpoint in a command's table as the user named
// it: "search (3kq2v7xw5b4mzp6a)" for a name, the ID alone for an ID.
func endpointCell(ref, id string) string {
	if ref == id {
		return id
	}
	return ref + " (" + id + ")"
}
