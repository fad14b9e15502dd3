package cli

// conformancecmd.go is `mcpmon conformance ENDPOINT`: the endpoint's spec
// conformance, rule by rule (GET /v1/endpoints/{id}/conformance).
// conformance_test.go is not its test: that runs the official MCP
// conformance suite against `mcpmon probe`.

import (
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/spf13/cobra"

	apiv1 "github.com/mcpmon/mcpmon/pkg/api/v1"
)

func (a *app) conformanceCmd() *cobra.Command {
	var strict, all bool
	cmd := &cobra.Command{
		Use:   "conformance ID|NAME",
		Short: "An endpoint's spec conformance, rule by rule, at its latest probe",
		Long: `conformance shows each spec-conformance rule of the era the endpoint's server
negotiated with its outcome at the latest probe: pass, fail or n/a, the
reason and the spec section it checks. Conformance is advice: it never
changes the endpoint's state. The rules are docs/reference/conformance.md.

--strict exits 1 when a rule fails, for a deploy gate.`,
		Example: `  mcpmon conformance search
  mcpmon conformance search --strict && echo conforms
  mcpmon conformance search -o json | jq -r '.rules[] | select(.outcome == "fail") | .id'`,
		Args:              exactArgs(1, "one endpoint ID or name"),
		ValidArgsFunction: a.completeEndpoints(false),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, id, err := a.endpointClient(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			v, err := c.Conformance(cmd.Context(), id)
			if err != nil {
				return err
			}
			if err := a.render(v, func(w io.Writer) { conformanceTable(w, args[0], v, all) }); err != nil {
				return err
			}
			if strict && v.Failed > 0 {
				return fmt.Errorf("endpoint %s fails %d conformance rule(s) of %s", args[0], v.Failed, v.Era)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&strict, "strict", false, "exit 1 when a rule fails")
	cmd.Flags().BoolVar(&all, "all", false, "list the rules of other eras too (n/a)")
	return cmd
}

func conformanceTable(w io.Writer, ref string, v apiv1.ConformanceView, all bool) {
	checked, active := "-", "-"
	if v.CheckedAt != nil {
		checked = v.CheckedAt.Format(time.RFC3339)
	}
	if v.ActiveAt != nil {
		active = v.ActiveAt.Format(time.RFC3339)
	}
	fields(w, "Endpoint", endpointCell(ref, v.EndpointID), "Era", or(v.Era, "- (not judged yet)"), "Checked", checked, "Active checks", active,
		"Passed", v.Passed, "Failed", v.Failed)
	fmt.Fprintln(w)
	row(w, "RULE", "OUTCOME", "DETAIL")
	for _, r := range v.Rules {
		if !all && v.Era != "" && !slices.Contains(r.Eras, v.Era) {
			continue
		}
		row(w, r.ID, r.Outcome, truncate(r.Detail, 100))
	}
}
