package cli

import (
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/mcpmon/mcpmon/pkg/store/redis"
)

func (a *app) storeCmd() *cobra.Command {
	g := group("store", "Operator tasks on the store itself (mcpmon stopped)",
		"  mcpmon store migrate --from redis://old:6379 --to redis+cluster://n1:6379,n2:6379,n3:6379")
	g.AddCommand(a.storeMigrate())
	return g
}

// storeMigrate copies a one-slot Redis deployment into the sharded layout
// of a Redis Cluster (redis.Migrate), printing progress on stderr and the
// count check on stdout. The URLs are never printed: they may hold a
// password.
func (a *app) storeMigrate() *cobra.Command {
	var (
		opts     redis.MigrateOptions
		from, to string
	)
	cmd := &cobra.Command{
		Use:   "migrate",
		Short: "Copy a single Redis's data into the sharded layout of a Redis Cluster (resumable, count-checked)",
		Long: `Copy every record of a single Redis (or Sentinel, or a cluster under a {tagged} prefix) into the
sharded layout of a Redis Cluster. Stop every mcpmon writer first. Safe to re-run: an interrupted
run resumes from the checkpoint it keeps in the target, and a finished one only checks again. The
run ends with a count per record kind on both sides; a mismatch exits 1 naming the kind. A target
holding another deployment's keys is refused. docs/design/redis-cluster.md has the procedure.`,
		Example: "  mcpmon store migrate --from redis://old:6379 --to redis+cluster://n1:6379,n2:6379 --dry-run\n" +
			"  mcpmon store migrate --from redis+cluster://n1:6379 --from-prefix '{mcpmon}:' --to redis+cluster://n1:6379",
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if from == "" || to == "" {
				return usagef("--from and --to are required")
			}
			var last time.Time
			opts.Progress = func(p redis.MigrateProgress) {
				if now := time.Now(); now.Sub(last) >= time.Second { // a line a second at most
					last = now
					fmt.Fprintf(a.io.Stderr, "store migrate: %d keys copied\n", p.Keys)
				}
			}
			rep, err := redis.Migrate(cmd.Context(), from, to, opts)
			if rep.Counts != nil && (err == nil || opts.DryRun) {
				if rerr := a.render(rep.Counts, func(w io.Writer) {
					row(w, "KIND", "SOURCE", "TARGET")
					for _, c := range rep.Counts {
						target := fmt.Sprint(c.Target)
						if opts.DryRun {
							target = "-"
						}
						row(w, c.Kind, c.Source, target)
					}
				}); rerr != nil {
					return rerr
				}
			}
			if err != nil {
				return err
			}
			verb := "copied"
			if opts.DryRun {
				verb = "counted (dry run, nothing written)"
			}
			resumed := ""
			if rep.Resumed {
				resumed = ", resuming an earlier run"
			}
			fmt.Fprintf(a.io.Stderr, "store migrate: %d keys %s%s; counts agree\n", rep.Keys, verb, resumed)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&from, "from", "", "the source Redis URL (redis://, rediss://, redis+sentinel://, or redis+cluster:// with a {tagged} --from-prefix)")
	f.StringVar(&to, "to", "", "the target Redis Cluster URL (redis+cluster://…)")
	f.StringVar(&opts.FromPrefix, "from-prefix", redis.DefaultPrefix, "the source's key prefix (--redis-prefix it ran with)")
	f.StringVar(&opts.ToPrefix, "to-prefix", redis.DefaultPrefix, "the target's key prefix, without a {hash tag}")
	f.BoolVar(&opts.DryRun, "dry-run", false, "count the source and check the target; write nothing")
	f.IntVar(&opts.Batch, "batch", 500, "source keys copied between checkpoints")
	return cmd
}
