package cli

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	apiv1 "github.com/mcpmon/mcpmon/pkg/api/v1"
)

func (a *app) catalogCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "catalog ID|NAME",
		Short: "The tools an endpoint's server last listed, and the latest drift",
		Long: `catalog shows the tool catalog the prober stored at its last change (each tool
as the server sent it: -o json has the input schemas), its fingerprint, the
fingerprint the latest probe saw and that probe's catalog_changed events.
The history of every change is mcpmon events list.`,
		Example: `  mcpmon catalog search
  mcpmon catalog search -o json | jq -r '.tools[].name'`,
		Args:              exactArgs(1, "one endpoint ID or name"),
		ValidArgsFunction: a.completeEndpoints(false),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, id, err := a.endpointClient(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			v, err := c.Catalog(cmd.Context(), id)
			if err != nil {
				return err
			}
			return a.render(v, func(w io.Writer) { catalogTable(w, args[0], v) })
		},
	}
}

func catalogTable(w io.Writer, ref string, v apiv1.CatalogView) {
	fields(w, "Endpoint", endpointCell(ref, v.EndpointID), "Fingerprint", v.Fingerprint, "Latest probe saw", v.LatestFingerprint, "Tools", len(v.Tools))
	for _, d := range v.Drift {
		fields(w, "Drift", fmt.Sprintf("%s %s", or(d.Severity, "-"), d.Message))
	}
	if len(v.Tools) == 0 {
		return
	}
	fmt.Fprintln(w)
	row(w, "TOOL", "TITLE", "DESCRIPTION")
	for _, raw := range v.Tools {
		var t struct {
			Name, Title, Description string
		}
		if json.Unmarshal(raw, &t) != nil {
			t.Name = "(not a tool object)"
		}
		row(w, t.Name, t.Title, truncate(t.Description, 80))
	}
}
