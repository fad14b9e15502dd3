package cli

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	apiv1 "github.com/mcpmon/mcpmon/pkg/api/v1"
)

func (a *app) maintenanceCmd() *cobra.Command {
	g := group("maintenance", "Maintenance windows: no alerts while they are open",
		"  mcpmon maintenance add --endpoint search --for 1h\n  mcpmon maintenance list")
	g.Aliases = []string{"maint"}
	g.AddCommand(a.maintenanceList(), a.maintenanceAdd(), a.maintenanceRm())
	return g
}

func (a *app) maintenanceList() *cobra.Command {
	return &cobra.Command{
		Use:     "list",
		Short:   "List the tenant's maintenance windows",
		Example: "  mcpmon maintenance list\n  mcpmon maintenance list -o yaml",
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			ms, err := c.ListMaintenance(cmd.Context())
			if err != nil {
				return err
			}
			if ms == nil {
				ms = []apiv1.MaintenanceView{}
			}
			return a.render(ms, func(w io.Writer) {
				var names map[string]string
				if slices.ContainsFunc(ms, func(m apiv1.MaintenanceView) bool { return len(m.EndpointIDs) > 0 }) {
					names = a.endpointNames(cmd.Context(), c)
				}
				row(w, "ID", "NAME", "ENDPOINTS", "SELECTOR", "START", "END", "CRON", "DURATION")
				for _, m := range ms {
					eps := make([]string, len(m.EndpointIDs))
					for i, id := range m.EndpointIDs {
						eps[i] = endpointName(names, id)
					}
					row(w, m.ID, m.Name, eps, m.Selector, m.Start, m.End, m.Cron, m.Duration)
				}
			})
		},
	}
}

func (a *app) maintenanceAdd() *cobra.Command {
	var in apiv1.MaintenanceInput
	var endpoints, selector []string
	var start, end string
	var dur time.Duration
	cmd := &cobra.Command{
		Use:   "add [flags]",
		Short: "Open a maintenance window (one-off or recurring)",
		Example: `  # the next hour, one endpoint (ID or name)
  mcpmon maintenance add --name deploy --endpoint search --for 1h
  # a fixed window for every endpoint labelled team=search
  mcpmon maintenance add --selector team=search --start 2026-03-01T22:00:00Z --end 2026-03-01T23:00:00Z
  # every Sunday 02:00 UTC for 2h
  mcpmon maintenance add --selector team=search --cron '0 2 * * 0' --duration 2h`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := maintenanceShape(len(endpoints) > 0, len(selector) > 0, start != "", end != "", dur != 0, in.Cron != "", in.Duration != ""); err != nil {
				return err
			}
			c, err := a.client()
			if err != nil {
				return err
			}
			for _, ref := range endpoints {
				v, err := a.endpointByRef(cmd.Context(), c, ref)
				if err != nil {
					return err
				}
				in.EndpointIDs = append(in.EndpointIDs, v.ID)
			}
			if len(selector) > 0 {
				in.Selector = map[string]string{}
				for _, s := range selector {
					k, v, ok := strings.Cut(s, "=")
					if !ok {
						return usagef("--selector %q: want KEY=VALUE", s)
					}
					in.Selector[k] = v
				}
			}
			parse := func(flag, s string) (time.Time, error) {
				t, err := time.Parse(time.RFC3339, s)
				if err != nil {
					return t, usagef("--%s %q: want an RFC 3339 time such as 2026-03-01T22:00:00Z", flag, s)
				}
				return t, nil
			}
			if start != "" {
				if in.Start, err = parse("start", start); err != nil {
					return err
				}
			}
			if end != "" {
				if in.End, err = parse("end", end); err != nil {
					return err
				}
			}
			if dur > 0 {
				in.Start = time.Now().UTC()
				in.End = in.Start.Add(dur)
			}
			m, err := c.AddMaintenance(cmd.Context(), in)
			if err != nil {
				return err
			}
			return a.render(m, func(w io.Writer) { fmt.Fprintf(w, "created maintenance window %s\n", m.ID) })
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&in.Name, "name", "", "a name for people")
	fl.StringArrayVar(&endpoints, "endpoint", nil, "endpoint ID or name (repeatable)")
	fl.StringArrayVar(&selector, "selector", nil, "KEY=VALUE label the endpoints must have (repeatable)")
	fl.StringVar(&start, "start", "", "start, RFC 3339")
	fl.StringVar(&end, "end", "", "end, RFC 3339")
	fl.DurationVar(&dur, "for", 0, "a window from now for this long (e.g. 1h)")
	fl.StringVar(&in.Cron, "cron", "", "recurring: cron expression of each start (UTC)")
	fl.StringVar(&in.Duration, "duration", "", "recurring: how long each window lasts (e.g. 2h)")
	return cmd
}

// maintenanceShape refuses a window whose flags cannot make one, naming
// the flags: what it covers (--endpoint or --selector) and when (--for,
// --start and --end, or --cron and --duration). The values themselves
// (an end after the start, a cron spec that parses) are the API's to
// judge, by model.Maintenance's rules.
func maintenanceShape(endpoint, selector, start, end, forDur, cron, duration bool) error {
	oneOff, recurring := start || end, cron || duration
	switch {
	case !endpoint && !selector:
		return usagef("say which endpoints: --endpoint ID|NAME or --selector KEY=VALUE (repeatable)")
	case forDur && (oneOff || recurring):
		return usagef("--for opens a window now: not with --start, --end, --cron or --duration")
	case forDur:
		return nil
	case oneOff && recurring:
		return usagef("--start/--end (one-off) or --cron/--duration (recurring), not both")
	case oneOff && !(start && end):
		return usagef("a one-off window needs both --start and --end (or --for D from now)")
	case recurring && !(cron && duration):
		return usagef("a recurring window needs both --cron and --duration")
	case !oneOff && !recurring:
		return usagef("say when: --for D (from now), --start and --end (one-off), or --cron and --duration (recurring)")
	}
	return nil
}

func (a *app) maintenanceRm() *cobra.Command {
	return &cobra.Command{
		Use:     "rm ID...",
		Aliases: []string{"delete"},
		Short:   "Delete maintenance windows",
		Example: "  mcpmon maintenance rm 5tq1d2v8k0s7g4ha",
		Args:    minArgs(1, "at least one maintenance window ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			type deleted struct {
				ID string `json:"id"`
			}
			return deleteEach(a, args, func(id string) (deleted, string, error) {
				return deleted{id}, "deleted maintenance window " + id, c.RemoveMaintenance(cmd.Context(), id)
			})
		},
	}
}
