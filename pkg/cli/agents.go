package cli

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/mcpmon/mcpmon/pkg/agent"
	apiv1 "github.com/mcpmon/mcpmon/pkg/api/v1"
	"github.com/mcpmon/mcpmon/pkg/daemon"
	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/netguard"
)

// agentTokenEnv holds an agent's key: preferred to --token, whose value
// shows in ps.
const agentTokenEnv = "MCPMON_AGENT_TOKEN"

// agentCmd runs a prober inside the user's network (pkg/agent).
func (a *app) agentCmd() *cobra.Command {
	var tokenFile, logLevel, secretsFile string
	var servers, networks []string
	o := agent.Options{Version: daemon.Version}
	cmd := &cobra.Command{
		Use:   "agent --server URL [--server URL]... [--token-file FILE] [--secrets-file FILE] [--allow-target-networks CIDR,... | --allow-private-targets]",
		Short: "Probe from inside your network: fetch a location's probes from the API over HTTPS, post their results",
		Example: `  export MCPMON_AGENT_TOKEN=$(cat /etc/mcpmon/agent.token)
  mcpmon agent --server https://mcpmon.example.com --allow-target-networks 10.20.0.0/16,10.30.4.0/24
  mcpmon agent --server https://mcpmon.example.com --allow-private-targets
  mcpmon agent --server https://mcpmon.example.com --token-file /etc/mcpmon/agent.token
  mcpmon agent --server https://api-1.example.com --server https://api-2.example.com
  MCPMON_AGENT_SECRET_BILLING_TOKEN=… mcpmon agent --server https://mcpmon.example.com --secrets-file /etc/mcpmon/agent.secrets`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			var lvl slog.Level
			if err := lvl.UnmarshalText([]byte(logLevel)); err != nil {
				return usagef("--log-level %q: want debug, info, warn or error", logLevel)
			}
			log := slog.New(slog.NewTextHandler(a.io.Stderr, &slog.HandlerOptions{Level: lvl}))
			token, err := a.agentToken(cmd, tokenFile, log)
			if err != nil {
				return err
			}
			if len(servers) == 0 { // MCPMON_SERVER, a comma list too, or the default
				servers = strings.Split(a.server, ",")
			}
			for i := range servers {
				servers[i] = strings.TrimSpace(servers[i])
			}
			o.Server, o.Failover, o.Token, o.Logger = servers[0], servers[1:], token, log
			if o.AllowedNetworks, err = netguard.ParseNetworks(networks); err != nil {
				return usagef("--allow-target-networks: %v", err)
			}
			if err := o.Validate(); err != nil {
				return usageError{err}
			}
			secrets, err := agent.LoadSecrets(secretsFile, func(k string) (string, bool) { v := a.io.Getenv(k); return v, v != "" }, log)
			if err != nil {
				return usageError{err}
			}
			o.Secrets = secrets
			if secretsFile != "" {
				// SIGHUP re-reads the file; a bad file keeps the
				// secrets read before.
				hup := make(chan os.Signal, 1)
				signal.Notify(hup, syscall.SIGHUP)
				defer signal.Stop(hup)
				go func() {
					for {
						select {
						case <-hup:
							if err := secrets.Reload(); err != nil {
								log.Warn("re-reading the secrets file failed; keeping the secrets read before", "err", err)
							} else {
								log.Info("secrets file re-read", "secrets", secrets.Len())
							}
						case <-cmd.Context().Done():
							return
						}
					}
				}()
			}
			log.Info("agent starting", "server", o.Server, "failover", o.Failover, "version", o.Version, "allow_private_targets", o.AllowPrivateTargets,
				"allow_target_networks", o.AllowedNetworks,
				"secrets_file", secretsFile, "file_secrets", secrets.Len())
			// A refused key ends the agent with one line and exit 1
			// (agent.ErrRefused): retrying cannot help, its supervisor
			// should show it.
			return agent.Run(cmd.Context(), o)
		},
	}
	// The agent's own --server, over the global one: it may be repeated.
	cmd.Flags().StringSliceVar(&servers, "server", nil, "mcpmon API base URL (env MCPMON_SERVER); repeat it or give a comma list for the API replicas of one deployment: the agent keeps to one until it fails, then moves to the next")
	cmd.Flags().StringVar(&tokenFile, "token-file", "", "file holding the agent key (preferred; or "+agentTokenEnv+"): a --token value shows in ps")
	cmd.Flags().StringVar(&secretsFile, "secrets-file", "", "file of agent-side secrets, one NAME=value a line (# comments), for endpoints' ${agent:NAME} references; re-read on SIGHUP. MCPMON_AGENT_SECRET_<NAME> variables add to it")
	cmd.Flags().StringSliceVar(&networks, "allow-target-networks", nil, "networks the agent may probe although private (CIDR, or one address; repeat or comma-separate), e.g. the subnet of the servers it is there for; every other private, loopback and link-local address (cloud metadata included) stays refused")
	cmd.Flags().BoolVar(&o.AllowPrivateTargets, "allow-private-targets", false, "probe every loopback, private and link-local address: the agent's own SSRF guard off (prefer --allow-target-networks)")
	cmd.Flags().IntVar(&o.Concurrency, "concurrency", agent.DefaultConcurrency, "probes in flight at once (at least probes per second × a probe's wall time; see the agents guide)")
	cmd.Flags().StringVar(&logLevel, "log-level", "info", "debug, info, warn or error")
	return cmd
}

// agentToken is the agent's key: --token-file, else MCPMON_AGENT_TOKEN,
// else --token (MCPMON_TOKEN).
func (a *app) agentToken(cmd *cobra.Command, file string, log *slog.Logger) (model.Secret, error) {
	if file != "" {
		read := a.io.ReadFile
		if read == nil {
			read = os.ReadFile
		}
		b, err := read(file)
		if err != nil {
			return "", usagef("--token-file: %v", err)
		}
		return model.Secret(strings.TrimSpace(string(b))), nil
	}
	if t := strings.TrimSpace(a.io.Getenv(agentTokenEnv)); t != "" {
		return model.Secret(t), nil
	}
	if f := cmd.Flags().Lookup("token"); f != nil && f.Changed {
		log.Warn("the agent key was given with --token: it shows in ps; prefer --token-file or " + agentTokenEnv)
	}
	return model.Secret(a.token), nil
}

// agentsCmd manages agent keys through the REST API (a write key).
func (a *app) agentsCmd() *cobra.Command {
	g := group("agents", "Agents: create, list, revoke the keys of `mcpmon agent` (write)",
		`  mcpmon agents create --name office-1 --location office > agent.token
  mcpmon agents list
  mcpmon agents revoke office-1`)
	g.Aliases = []string{"agent-keys"}
	g.AddCommand(a.agentsCreate(), a.agentsList(), a.agentsRevoke())
	return g
}

func (a *app) agentsCreate() *cobra.Command {
	var in apiv1.AgentInput
	cmd := &cobra.Command{
		Use:   "create --name NAME --location LOCATION [--expires-in D]",
		Short: "Create an agent key for a location; the key is printed once, alone on stdout",
		Example: `  mcpmon agents create --name office-1 --location office > agent.token
  # endpoints probed there name the location's region
  mcpmon endpoints create --name billing --url http://10.0.0.7/mcp --regions loc-office`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if in.Name == "" || in.Location == "" {
				return usagef("--name and --location are required")
			}
			c, err := a.client()
			if err != nil {
				return err
			}
			v, err := c.CreateAgent(cmd.Context(), in)
			if err != nil {
				return err
			}
			return a.render(v, func(w io.Writer) {
				fmt.Fprintf(a.io.Stderr, "created agent %s (%s) for location %s: endpoints name it as region %q; the key is shown only now:\n", v.ID, v.Name, v.Location, v.Region)
				fmt.Fprintln(w, v.Key)
			})
		},
	}
	cmd.Flags().StringVar(&in.Name, "name", "", "name, unique among the tenant's live keys")
	cmd.Flags().StringVar(&in.Location, "location", "", "where the agent runs: 1-28 of [a-z0-9-]")
	cmd.Flags().StringVar(&in.ExpiresIn, "expires-in", "", "expires this long from now, e.g. 720h (default never)")
	return cmd
}

func (a *app) agentsList() *cobra.Command {
	return &cobra.Command{
		Use:     "list",
		Short:   "List the tenant's agents: location, status, last poll, online, version, probes per minute, clock skew",
		Example: "  mcpmon agents list\n  mcpmon agents list -o json",
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			agents, err := c.ListAgents(cmd.Context())
			if err != nil {
				return err
			}
			if agents == nil {
				agents = []apiv1.AgentView{}
			}
			return a.render(agents, func(w io.Writer) {
				row(w, "ID", "NAME", "LOCATION", "STATUS", "LAST SEEN", "ONLINE", "VERSION", "PROBES/MIN", "SKEW")
				for _, v := range agents {
					online := "no"
					if v.Online {
						online = "yes"
					}
					skew := ""
					if v.ClockSkewSeconds != nil {
						skew = (time.Duration(*v.ClockSkewSeconds * float64(time.Second))).Round(time.Millisecond).String()
					}
					row(w, v.ID, v.Name, v.Location, v.Status, v.LastSeen, online, v.Version, fmt.Sprint(v.ProbesPerMinute), skew)
				}
			})
		},
	}
}

func (a *app) agentsRevoke() *cobra.Command {
	return &cobra.Command{
		Use:     "revoke ID|NAME",
		Short:   "Revoke an agent's key: its next poll is refused and it exits",
		Example: "  mcpmon agents revoke office-1",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			v, err := c.RevokeAgent(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			return a.render(v, func(w io.Writer) { fmt.Fprintf(w, "revoked agent %s (%s)\n", v.ID, v.Name) })
		},
	}
}
