package cli

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"

	"github.com/spf13/cobra"

	"github.com/mcpmon/mcpmon/pkg/client"
)

// Status is what `mcpmon status` reports.
type Status struct {
	Server         string         `json:"server"`
	Ready          bool           `json:"ready"`
	Reason         string         `json:"reason,omitempty"`
	Endpoints      int            `json:"endpoints"`
	ByState        map[string]int `json:"byState"`
	OpenIncidents  int            `json:"openIncidents"`
	AckedIncidents int            `json:"acknowledgedIncidents"`
}

func (a *app) statusCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "status",
		Short: "Server readiness, the tenant's endpoints by state and its open incidents",
		Long: `status prints whether the server is ready (/readyz), the tenant's endpoints by
state and its open and acknowledged incidents. It exits 1 when the server
is unreachable or not ready, so scripts can wait on it.`,
		Example: `  mcpmon status
  mcpmon status -o json | jq .openIncidents`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			st := Status{Server: c.Base(), Ready: true, ByState: map[string]int{}}
			if err := c.Readyz(ctx); err != nil {
				var e *client.Error
				if !errors.As(err, &e) {
					return err // unreachable: nothing more to say
				}
				st.Ready, st.Reason = false, e.Detail
			}
			for e, err := range c.Endpoints(ctx, client.EndpointFilter{}) {
				if err != nil {
					return err
				}
				st.Endpoints++
				st.ByState[e.State]++
			}
			for _, s := range []struct {
				state string
				n     *int
			}{{"open", &st.OpenIncidents}, {"acknowledged", &st.AckedIncidents}} {
				for _, err := range c.Incidents(ctx, client.IncidentFilter{State: s.state}) {
					if err != nil {
						return err
					}
					*s.n++
				}
			}
			err = a.render(st, func(w io.Writer) {
				ready := "ready"
				if !st.Ready {
					ready = "NOT READY: " + st.Reason
				}
				fields(w, "Server", st.Server+" ("+ready+")", "Endpoints", st.Endpoints)
				for _, s := range slices.Sorted(maps.Keys(st.ByState)) {
					fields(w, "  "+s, st.ByState[s])
				}
				fields(w, "Open incidents", st.OpenIncidents, "Acknowledged", st.AckedIncidents)
			})
			if err == nil && !st.Ready {
				// Scripts gate on the exit status.
				return fmt.Errorf("%s is not ready: %s", st.Server, st.Reason)
			}
			return err
		},
	}
}
