package cli

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	apiv1 "github.com/mcpmon/mcpmon/pkg/api/v1"
	"github.com/mcpmon/mcpmon/pkg/client"
)

func (a *app) incidentsCmd() *cobra.Command {
	g := group("incidents", "List, inspect, acknowledge and post updates to incidents",
		"  mcpmon incidents list --state open\n  mcpmon incidents ack INCIDENT_ID --by alice\n"+
			"  mcpmon incidents update INCIDENT_ID --status identified --message 'bad deploy; rolling back'")
	g.Aliases = []string{"incident", "inc"}
	g.AddCommand(a.incidentsList(), a.incidentsGet(), a.incidentsAck(), a.incidentsUpdate())
	return g
}

func (a *app) incidentsList() *cobra.Command {
	var f client.IncidentFilter
	cmd := &cobra.Command{
		Use:     "list",
		Short:   "List the tenant's incidents, newest first",
		Example: "  mcpmon incidents list\n  mcpmon incidents list --state open --endpoint search -o json",
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			switch f.State {
			case "", "open", "acknowledged", "resolved":
			default:
				return usagef("--state %q: want open, acknowledged or resolved", f.State)
			}
			c, err := a.client()
			if err != nil {
				return err
			}
			if f.Endpoint != "" {
				if f.Endpoint, err = a.endpointID(cmd.Context(), c, f.Endpoint); err != nil {
					return err
				}
			}
			incs, err := c.ListIncidents(cmd.Context(), f)
			if err != nil {
				return err
			}
			if incs == nil {
				incs = []apiv1.IncidentView{}
			}
			return a.render(incs, func(w io.Writer) {
				var names map[string]string
				if len(incs) > 0 {
					names = a.endpointNames(cmd.Context(), c)
				}
				row(w, "ID", "ENDPOINT", "STATE", "OPENED", "CLASS", "REASON")
				for _, i := range incs {
					row(w, i.ID, endpointName(names, i.EndpointID), string(i.State), i.OpenedAt, i.Class, i.Reason)
				}
			})
		},
	}
	cmd.Flags().StringVar(&f.State, "state", "", "open, acknowledged or resolved")
	cmd.Flags().StringVar(&f.Endpoint, "endpoint", "", "only this endpoint's (ID or name)")
	return cmd
}

func (a *app) incidentsGet() *cobra.Command {
	return &cobra.Command{
		Use:     "get ID",
		Short:   "Show an incident, its transitions and what each sink was told",
		Example: "  mcpmon incidents get 3kq2v7xw5b4mzp6a-20260301T1200",
		Args:    exactArgs(1, "one incident ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			v, err := c.GetIncident(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			return a.render(v, func(w io.Writer) {
				endpoint := v.EndpointID
				if ep, err := c.GetEndpoint(cmd.Context(), v.EndpointID); err == nil && ep.Name != "" {
					endpoint = ep.Name + " (" + ep.ID + ")"
				}
				fields(w, "ID", v.ID, "Endpoint", endpoint, "State", string(v.State), "Opened", v.OpenedAt,
					"First failure", v.FirstFailure, "Class", v.Class, "Reason", v.Reason, "Acked", v.AckedAt,
					"Acked by", v.AckedBy, "Resolved", v.ResolvedAt)
				for _, t := range v.Transitions {
					fields(w, "Transition", fmt.Sprintf("%s %s → %s %s", cell(t.At), or(string(t.From), "-"), t.To, t.Reason))
				}
				for _, u := range v.Updates {
					fields(w, "Update", fmt.Sprintf("%s %s: %s", cell(u.At), u.Status, u.Message))
				}
				for _, d := range v.Notifications {
					fields(w, "Notification", fmt.Sprintf("%s via %s: %s", d.Kind, d.Sink, d.Outcome))
				}
			})
		},
	}
}

func (a *app) incidentsAck() *cobra.Command {
	var in apiv1.AckInput
	cmd := &cobra.Command{
		Use:     "ack ID",
		Short:   "Acknowledge an open incident (stops reminders)",
		Example: "  mcpmon incidents ack 3kq2v7xw5b4mzp6a-20260301T1200 --by alice --reason 'rolling back'",
		Args:    exactArgs(1, "one incident ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			v, err := c.AckIncident(cmd.Context(), args[0], in)
			if err != nil {
				return err
			}
			return a.render(v, func(w io.Writer) { fmt.Fprintf(w, "incident %s is %s\n", v.ID, v.State) })
		},
	}
	cmd.Flags().StringVar(&in.By, "by", "", "who acknowledges (default: the API key's name)")
	cmd.Flags().StringVar(&in.Reason, "reason", "", "why, for the record")
	return cmd
}
