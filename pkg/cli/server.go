package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/mcpmon/mcpmon/pkg/daemon"
)

// serverRole annotates the commands that run pkg/daemon rather than call
// the API at --server: their errors get none of explain's client hints.
const serverRole = "mcpmon/server-role"

// serverCommands are the process roles and the operator's offline tasks.
// They keep pkg/daemon's own flag sets: cobra passes their arguments
// through untouched (DisableFlagParsing), so `mcpmon run --help` shows the
// daemon's flags and every flag can still be set as MCPMON_<FLAG>.
func (a *app) serverCommands() []*cobra.Command {
	role := func(r daemon.Role, short, example string) *cobra.Command {
		return &cobra.Command{
			Use:                string(r) + " [daemon flags]",
			Short:              short,
			Example:            example,
			DisableFlagParsing: true,
			Annotations:        map[string]string{serverRole: "true"},
			RunE: func(cmd *cobra.Command, args []string) error {
				return daemon.Main(cmd.Context(), r, args, a.io.Getenv, a.io.Stdout, a.io.Stderr)
			},
		}
	}
	queues := group("queues", "SQS FIFO queues of the stages", "  mcpmon queues ensure --sqs-region eu-west-1")
	queues.AddCommand(&cobra.Command{
		Use:                "ensure [flags]",
		Short:              "Create or check the SQS FIFO queues and their dead-letter queues",
		Example:            "  mcpmon queues ensure --sqs-endpoint http://127.0.0.1:9324 --sqs-region us-east-1",
		DisableFlagParsing: true,
		Annotations:        map[string]string{serverRole: "true"},
		RunE: func(cmd *cobra.Command, args []string) error {
			return daemon.EnsureQueues(cmd.Context(), args, a.io.Getenv, a.io.Stdout, a.io.Stderr)
		},
	})
	secrets := group("secrets", "Endpoint secrets at rest", "  mcpmon secrets rotate --data-dir data")
	secrets.AddCommand(&cobra.Command{
		Use:                "rotate [flags]",
		Short:              "Add a new secrets key and re-seal every endpoint and status page subscriber under it",
		Example:            "  # with mcpmon stopped\n  mcpmon secrets rotate --data-dir data",
		DisableFlagParsing: true,
		Annotations:        map[string]string{serverRole: "true"},
		RunE: func(cmd *cobra.Command, args []string) error {
			return daemon.RotateSecrets(cmd.Context(), args, a.io.Getenv, a.io.Stdout, a.io.Stderr)
		},
	})
	version := &cobra.Command{
		Use:     "version",
		Short:   "Print the version",
		Example: "  mcpmon version",
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			_, err := fmt.Fprintln(a.io.Stdout, daemon.Version)
			return err
		},
	}
	return []*cobra.Command{
		role(daemon.RoleAll, "Every role in one process (the default)",
			"  mcpmon run\n  mcpmon run --listen 127.0.0.1:9090 --data-dir /var/lib/mcpmon\n  mcpmon run --help   # every daemon flag"),
		role(daemon.RoleAPI, "REST API and scheduler",
			"  mcpmon api --queue sqs --store redis --redis-url redis://127.0.0.1:6379"),
		role(daemon.RoleProber, "Probe workers",
			"  mcpmon prober --queue sqs --store redis --redis-url redis://127.0.0.1:6379 --region eu"),
		role(daemon.RoleAggregator, "Probe results → verdicts",
			"  mcpmon aggregator --queue sqs --store redis --redis-url redis://127.0.0.1:6379"),
		role(daemon.RoleAlerter, "Verdicts → incidents → alerts",
			"  mcpmon alerter --queue sqs --store redis --redis-url redis://127.0.0.1:6379"),
		queues, secrets, version,
	}
}
