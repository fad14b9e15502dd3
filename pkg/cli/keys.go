package cli

import (
	"errors"
	"fmt"
	"io"
	"net"
	"slices"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	apiv1 "github.com/mcpmon/mcpmon/pkg/api/v1"
	"github.com/mcpmon/mcpmon/pkg/client"
	"github.com/mcpmon/mcpmon/pkg/daemon"
)

// keysCmd manages API keys through the REST API (an admin key of the
// tenant). With --local, each subcommand works on the store directly
// instead (daemon.ManageKeys): the way to make the first admin key, or a
// new one after losing it, while mcpmon is stopped (embedded store) or on
// Redis.
func (a *app) keysCmd() *cobra.Command {
	g := group("keys", "API keys: create, list, revoke (admin; --local: on the store, offline)",
		`  mcpmon keys list
  mcpmon keys create --name ci --scope write --expires-in 720h
  # bootstrap, with mcpmon stopped: straight into the embedded store
  mcpmon keys create --local --name admin --scope admin --data-dir data`)
	g.Aliases = []string{"key"}
	g.AddCommand(a.keysList(), a.keysCreate(), a.keysRevoke())
	return g
}

const localHelp = "work on the store directly, not through the API (mcpmon stopped with the embedded store; takes the daemon's store flags: --data-dir, --store redis --redis-url, --tenant)"

// localAware makes cmd take --local: then every other argument goes to
// daemon.ManageKeys(sub) with the daemon's store flags; otherwise the
// command's own flags are parsed here (cobra's parsing is off so that the
// store flags reach ManageKeys untouched) and run is called.
func (a *app) localAware(cmd *cobra.Command, sub string, run func(cmd *cobra.Command, args []string) error) {
	cmd.DisableFlagParsing = true
	cmd.Flags().Bool("local", false, localHelp)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if i := slices.IndexFunc(args, func(s string) bool { return s == "--local" || s == "--local=true" }); i >= 0 {
			rest := slices.Delete(slices.Clone(args), i, i+1)
			return daemon.ManageKeys(cmd.Context(), append([]string{sub}, rest...), a.io.Getenv, a.io.Stdout, a.io.Stderr)
		}
		cmd.InheritedFlags() // merges the global flags into cmd.Flags()
		if err := cmd.Flags().Parse(args); err != nil {
			if errors.Is(err, pflag.ErrHelp) {
				return cmd.Help()
			}
			return usageError{err}
		}
		if help, _ := cmd.Flags().GetBool("help"); help {
			return cmd.Help()
		}
		switch a.output {
		case "table", "json", "yaml":
		default:
			return usagef("-o %q: want table, json or yaml", a.output)
		}
		err := run(cmd, cmd.Flags().Args())
		var opErr *net.OpError
		if errors.As(err, &opErr) || client.IsUnauthorized(err) {
			// The daemon's banner tells an operator who lost the admin key
			// to run `mcpmon keys create`: point at the offline path.
			return hintError{err, fmt.Sprintf("no server or no working admin key? with mcpmon stopped, mcpmon keys %s --local works on the store directly", sub)}
		}
		return err
	}
}

func (a *app) keysList() *cobra.Command {
	cmd := &cobra.Command{
		Use:     "list [--local]",
		Short:   "List the tenant's API keys",
		Example: "  mcpmon keys list\n  mcpmon keys list --local --data-dir data   # offline, every tenant",
	}
	a.localAware(cmd, "list", func(cmd *cobra.Command, args []string) error {
		if len(args) > 0 {
			return usagef("unexpected argument %q", args[0])
		}
		c, err := a.client()
		if err != nil {
			return err
		}
		keys, err := c.ListKeys(cmd.Context())
		if err != nil {
			return err
		}
		if keys == nil {
			keys = []apiv1.KeyView{}
		}
		return a.render(keys, func(w io.Writer) {
			row(w, "ID", "NAME", "SCOPE", "STATUS", "CREATED", "LAST USED", "EXPIRES")
			for _, k := range keys {
				row(w, k.ID, k.Name, string(k.Scope), k.Status, k.Created, k.LastUsed, k.Expires)
			}
		})
	})
	return cmd
}

func (a *app) keysCreate() *cobra.Command {
	var in client.KeyInput
	cmd := &cobra.Command{
		Use:   "create --name NAME --scope read|write|admin [--expires-in D] [--local]",
		Short: "Create an API key; the key is printed once, alone on stdout",
		Example: `  export CI_TOKEN=$(mcpmon keys create --name ci --scope write --expires-in 720h)
  # a lost admin key, beside the stopped server: its own --data-dir
  mcpmon keys create --local --name admin --scope admin --data-dir /var/lib/mcpmon
  # the first admin key before the first start (a new store)
  mcpmon keys create --local --init --name admin --scope admin --data-dir data`,
	}
	cmd.Flags().StringVar(&in.Name, "name", "", "name, unique among the tenant's live keys")
	cmd.Flags().StringVar(&in.Scope, "scope", "", "read, write or admin")
	cmd.Flags().StringVar(&in.ExpiresIn, "expires-in", "", "expires this long from now, e.g. 720h (default never)")
	var initStore bool
	cmd.Flags().BoolVar(&initStore, "init", false, "with --local: make the embedded store when --data-dir holds none (a key before the first start); without it, a data dir with no store is refused")
	a.localAware(cmd, "create", func(cmd *cobra.Command, args []string) error {
		if len(args) > 0 {
			return usagef("unexpected argument %q", args[0])
		}
		if initStore {
			return usagef("--init makes a store: it goes with --local")
		}
		if in.Name == "" || in.Scope == "" {
			return usagef("--name and --scope (read, write or admin) are required (see mcpmon keys create --help)")
		}
		c, err := a.client()
		if err != nil {
			return err
		}
		k, err := c.CreateKey(cmd.Context(), in)
		if err != nil {
			return err
		}
		return a.render(k, func(w io.Writer) {
			fmt.Fprintf(a.io.Stderr, "created API key %s (%s, scope %s); it is shown only now:\n", k.ID, k.Name, k.Scope)
			fmt.Fprintln(w, k.Key)
		})
	})
	return cmd
}

func (a *app) keysRevoke() *cobra.Command {
	cmd := &cobra.Command{
		Use:     "revoke ID|NAME [--local]",
		Short:   "Revoke an API key",
		Example: "  mcpmon keys revoke ci\n  mcpmon keys revoke --local k_3kq2v7xw --data-dir data",
	}
	a.localAware(cmd, "revoke", func(cmd *cobra.Command, args []string) error {
		if len(args) != 1 {
			return usagef("want one key ID or name, got %d argument(s)", len(args))
		}
		c, err := a.client()
		if err != nil {
			return err
		}
		k, err := c.RevokeKey(cmd.Context(), args[0])
		if err != nil {
			return err
		}
		return a.render(k, func(w io.Writer) { fmt.Fprintf(w, "revoked API key %s (%s)\n", k.ID, k.Name) })
	})
	return cmd
}
