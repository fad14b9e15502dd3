package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"

	"github.com/mcpmon/mcpmon/alerter/sinks"
	apiv1 "github.com/mcpmon/mcpmon/pkg/api/v1"
	"github.com/mcpmon/mcpmon/pkg/client"
	"github.com/mcpmon/mcpmon/pkg/declarative"
)

func (a *app) endpointsCmd() *cobra.Command {
	g := group("endpoints", "Register, inspect and change monitored MCP endpoints",
		"  mcpmon endpoints list --selector team=search\n  mcpmon endpoints add --name search --url https://mcp.example.com/mcp")
	g.Aliases = []string{"endpoint", "ep"}
	g.AddCommand(a.endpointsList(), a.endpointsGet(), a.endpointsAdd(), a.endpointsEdit(), a.endpointsRm(),
		a.endpointsPause(true), a.endpointsPause(false))
	return g
}

func (a *app) endpointsList() *cobra.Command {
	var f client.EndpointFilter
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the tenant's endpoints with their state",
		Example: `  mcpmon endpoints list
  mcpmon endpoints list --selector 'team=search,env!=dev' --state down,degraded
  mcpmon endpoints list -o json | jq -r '.[].id'`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			var err error
			if f.States, err = stateList("state", f.States, endpointStates()); err != nil {
				return err
			}
			c, err := a.client()
			if err != nil {
				return err
			}
			return renderList(a, c.Endpoints(cmd.Context(), f), []any{"ID", "NAME", "STATE", "SCHEDULE", "URL", "LABELS"},
				func(e apiv1.EndpointView) []any { return []any{e.ID, e.Name, e.State, e.Schedule, e.URL, e.Labels} })
		},
	}
	cmd.Flags().StringVarP(&f.Selector, "selector", "l", "", "label selector: k=v, k!=v, comma-separated (all must match)")
	cmd.Flags().StringVar(&f.States, "state", "", "only these states, comma-separated: "+strings.Join(endpointStates(), ", "))
	cmd.Flags().IntVar(&f.Limit, "page-size", 0, "endpoints per request (0: the server's default)")
	_ = cmd.RegisterFlagCompletionFunc("state", cobra.FixedCompletions(endpointStates(), cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

// endpointByRef finds an endpoint by ID, or else by name (which must be
// unique in the tenant).
func (a *app) endpointByRef(ctx context.Context, c *client.Client, ref string) (apiv1.EndpointView, error) {
	v, err := c.GetEndpoint(ctx, ref)
	if !client.IsNotFound(err) {
		return v, err
	}
	var found []apiv1.EndpointView
	for e, err := range c.Endpoints(ctx, client.EndpointFilter{}) {
		if err != nil {
			return v, err
		}
		if e.Name == ref {
			found = append(found, e)
		}
	}
	switch len(found) {
	case 0:
		return v, notFoundError{fmt.Errorf("no endpoint with ID or name %q (mcpmon endpoints list shows them)", ref)}
	case 1:
		return c.GetEndpoint(ctx, found[0].ID)
	}
	ids := make([]string, len(found))
	for i, e := range found {
		ids[i] = e.ID
	}
	return v, usagef("%d endpoints are named %q (%s): give an ID", len(found), ref, strings.Join(ids, ", "))
}

func (a *app) endpointsGet() *cobra.Command {
	return &cobra.Command{
		Use:   "get ID|NAME",
		Short: "Show one endpoint, its latest probe result and verdict",
		Example: `  mcpmon endpoints get search
  mcpmon endpoints get 3kq2v7xw5b4mzp6a -o yaml`,
		Args:              exactArgs(1, "one endpoint ID or name"),
		ValidArgsFunction: a.completeEndpoints(false),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			v, err := a.endpointByRef(cmd.Context(), c, args[0])
			if err != nil {
				return err
			}
			return a.render(v, func(w io.Writer) { endpointTable(w, v) })
		},
	}
}

// sinkNames is an endpoint's own sinks as "NAME (TYPE)", from the redacted
// list the API returns (the rest of each sink stays in -o json).
func sinkNames(raw json.RawMessage) []string {
	var sinks []struct{ Name, Type string }
	if json.Unmarshal(raw, &sinks) != nil {
		return nil
	}
	out := make([]string, 0, len(sinks))
	for _, s := range sinks {
		out = append(out, s.Name+" ("+s.Type+")")
	}
	return out
}

func endpointTable(w io.Writer, v apiv1.EndpointView) {
	names := make([]string, 0, len(v.Headers))
	for k := range v.Headers {
		names = append(names, k)
	}
	fields(w, "ID", v.ID, "Name", v.Name, "State", v.State, "URL", v.URL, "Transport", v.Transport,
		"Schedule", v.Schedule, "Timeout", v.Timeout, "Labels", v.Labels, "Headers", names,
		"Sinks", sinkNames(v.Sinks), "Paused", v.Paused, "Version", v.Version, "Updated", v.UpdatedAt)
	if r := v.LatestResult; r != nil {
		fields(w, "Last probe", fmt.Sprintf("%s %s at %s", r.Status, r.Class, cell(r.FinishedAt)))
		if r.Error != "" {
			fields(w, "Last error", r.Error)
		}
	}
	if vd := v.LastVerdict; vd != nil {
		fields(w, "Last verdict", strings.TrimSpace(fmt.Sprintf("%s (window %s) %s", vd.State, cell(vd.Window), vd.Reason)))
	}
	for _, warn := range v.Warnings {
		fields(w, "Warning", warn)
	}
}

// endpointFlags are add's and edit's field flags.
type endpointFlags struct {
	in                      apiv1.EndpointInput
	headers, labels         []string
	rmHeaders, rmLabels     []string
	sinksFile, rawPatch     string
	ifMatch                 int64
	openAfter, resolveAfter int
}

func (f *endpointFlags) register(cmd *cobra.Command, edit bool) {
	fl := cmd.Flags()
	fl.StringVar(&f.in.Name, "name", "", "name (unique in the tenant by convention; apply matches on it)")
	fl.StringVar(&f.in.URL, "url", "", "MCP endpoint URL (http or https)")
	fl.StringVar(&f.in.Transport, "transport", "", "auto (default), streamable-http or sse")
	fl.StringVar(&f.in.ProtocolVersion, "protocol-version", "", "pin an MCP protocol revision, e.g. 2025-06-18")
	fl.StringVar(&f.in.Schedule, "schedule", "", `"@every 30s" (default) or a cron expression`)
	fl.StringVar(&f.in.Timeout, "timeout", "", "probe timeout, a Go duration (default 10s)")
	fl.StringVar(&f.in.LatencyThreshold, "latency-threshold", "", "slower probes are degraded, a Go duration")
	fl.StringArrayVar(&f.headers, "header", nil, "NAME=VALUE, VALUE a secret reference: 'Bearer ${env:TOKEN}' or '${file:PATH}' (repeatable)")
	fl.StringArrayVar(&f.labels, "label", nil, "KEY=VALUE label (repeatable)")
	fl.StringVar(&f.sinksFile, "sinks-file", "", "JSON or YAML file of this endpoint's own alert sinks (secrets as references)")
	fl.BoolVar(&f.in.Paused, "paused", false, "register or set paused")
	fl.BoolVar(&f.in.Public, "public", false, "show on the public status page")
	fl.StringVar(&f.in.Slug, "slug", "", "public status page slug")
	fl.IntVar(&f.openAfter, "open-after", 0, "failing windows that open an incident")
	fl.IntVar(&f.resolveAfter, "resolve-after", 0, "passing windows that resolve it")
	if edit {
		fl.StringArrayVar(&f.rmHeaders, "rm-header", nil, "remove this header (repeatable)")
		fl.StringArrayVar(&f.rmLabels, "rm-label", nil, "remove this label (repeatable)")
		fl.StringVar(&f.rawPatch, "patch", "", "a JSON merge patch applied with the flags, e.g. '{\"rules\":null}'")
		fl.Int64Var(&f.ifMatch, "if-match", 0, "apply only to this version (mcpmon endpoints get shows it): no lost update")
	}
}

// resolved returns the input with header values and sinks resolved from
// their references (literal secrets refused).
func (a *app) resolvedInput(f *endpointFlags) (apiv1.EndpointInput, error) {
	in := f.in
	if len(f.headers) > 0 {
		in.Headers = map[string]string{}
		for _, h := range f.headers {
			k, v, ok := strings.Cut(h, "=")
			if !ok || k == "" {
				return in, usagef("--header %q: want NAME=VALUE", h)
			}
			in.Headers[k] = v
		}
	}
	if len(f.labels) > 0 {
		in.Labels = map[string]string{}
		for _, l := range f.labels {
			k, v, ok := strings.Cut(l, "=")
			if !ok || k == "" {
				return in, usagef("--label %q: want KEY=VALUE", l)
			}
			in.Labels[k] = v
		}
	}
	if f.sinksFile != "" {
		b, err := a.io.ReadFile(f.sinksFile)
		if err != nil {
			return in, usageError{fmt.Errorf("--sinks-file: %w", err)}
		}
		var doc any
		if err := yaml.Unmarshal(b, &doc); err != nil {
			return in, fmt.Errorf("--sinks-file %s: %w", f.sinksFile, err)
		}
		j, err := json.Marshal(doc)
		if err != nil {
			return in, fmt.Errorf("--sinks-file %s: %w", f.sinksFile, err)
		}
		in.Sinks = j
	}
	if f.openAfter != 0 || f.resolveAfter != 0 {
		in.Rules = &apiv1.RulesInput{OpenAfter: f.openAfter, ResolveAfter: f.resolveAfter}
	}
	out, err := a.resolver().Resolve([]declarative.Desired{{Input: in, Source: "command line"}})
	if err != nil {
		return in, usageError{err}
	}
	return out[0], nil
}

// resolver reads the references of the operator's own command line
// (endpoints add/edit, probe): trusted, unlike apply's files (applyResolver).
func (a *app) resolver() declarative.Resolver {
	return declarative.Resolver{
		Trusted: true,
		Where:   "on the command line (where the shell history and ps would keep it)",
		Env: func(k string) (string, bool) {
			v := a.io.Getenv(k)
			return v, v != ""
		},
		ReadFile:    a.io.ReadFile,
		RedactSinks: sinks.RedactEndpointSinks,
	}
}

func (a *app) endpointsAdd() *cobra.Command {
	var f endpointFlags
	cmd := &cobra.Command{
		Use:   "add --name NAME --url URL [flags]",
		Short: "Register an MCP endpoint",
		Example: `  mcpmon endpoints add --name search --url https://mcp.example.com/mcp
  mcpmon endpoints add --name billing --url https://billing.example.com/mcp \
    --schedule '@every 1m' --timeout 5s --label team=billing \
    --header 'Authorization=Bearer ${env:BILLING_TOKEN}'`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if f.in.Name == "" || f.in.URL == "" {
				return usagef("--name and --url are required")
			}
			in, err := a.resolvedInput(&f)
			if err != nil {
				return err
			}
			c, err := a.client()
			if err != nil {
				return err
			}
			v, err := c.CreateEndpoint(cmd.Context(), in)
			if err != nil {
				return err
			}
			a.warnSameName(cmd.Context(), c, v)
			return a.render(v, func(w io.Writer) { fmt.Fprintf(w, "created endpoint %s (%s)\n", v.ID, v.Name) })
		},
	}
	f.register(cmd, false)
	return cmd
}

func (a *app) endpointsEdit() *cobra.Command {
	var f endpointFlags
	cmd := &cobra.Command{
		Use:   "edit ID|NAME [flags]",
		Short: "Change an endpoint: only the flags given (a JSON merge patch)",
		Example: `  mcpmon endpoints edit search --schedule '@every 1m' --label env=prod
  mcpmon endpoints edit search --rm-header X-Old --if-match 4
  mcpmon endpoints edit search --patch '{"rules": null}'`,
		Args:              exactArgs(1, "one endpoint ID or name"),
		ValidArgsFunction: a.completeEndpoints(false),
		RunE: func(cmd *cobra.Command, args []string) error {
			in, err := a.resolvedInput(&f)
			if err != nil {
				return err
			}
			patch := map[string]any{}
			if f.rawPatch != "" {
				if err := json.Unmarshal([]byte(f.rawPatch), &patch); err != nil || patch == nil {
					return usagef("--patch: want a JSON object: %v", err)
				}
			}
			for flag, v := range map[string]any{
				"name": in.Name, "url": in.URL, "transport": in.Transport, "protocol-version": in.ProtocolVersion,
				"schedule": in.Schedule, "timeout": in.Timeout, "latency-threshold": in.LatencyThreshold,
				"paused": in.Paused, "public": in.Public, "slug": in.Slug, "sinks-file": json.RawMessage(in.Sinks),
			} {
				if changed(cmd, flag) {
					patch[jsonName(flag)] = v
				}
			}
			if changed(cmd, "open-after") || changed(cmd, "resolve-after") {
				r := map[string]any{}
				if changed(cmd, "open-after") {
					r["openAfter"] = f.openAfter
				}
				if changed(cmd, "resolve-after") {
					r["resolveAfter"] = f.resolveAfter
				}
				patch["rules"] = r
			}
			mapPatch := func(key string, set map[string]string, rm []string) {
				if len(set) == 0 && len(rm) == 0 {
					return
				}
				m := map[string]any{}
				for k, v := range set {
					m[k] = v
				}
				for _, k := range rm {
					m[k] = nil
				}
				patch[key] = m
			}
			mapPatch("headers", in.Headers, f.rmHeaders)
			mapPatch("labels", in.Labels, f.rmLabels)
			if len(patch) == 0 {
				return usagef("nothing to change: give at least one field flag or --patch")
			}
			c, err := a.client()
			if err != nil {
				return err
			}
			cur, err := a.endpointByRef(cmd.Context(), c, args[0])
			if err != nil {
				return err
			}
			v, err := c.PatchEndpointIfMatch(cmd.Context(), cur.ID, patch, f.ifMatch)
			if err != nil {
				return err
			}
			if v.Name != cur.Name {
				a.warnSameName(cmd.Context(), c, v)
			}
			return a.render(v, func(w io.Writer) {
				fmt.Fprintf(w, "updated endpoint %s (%s) to version %d\n", v.ID, v.Name, v.Version)
				for _, warn := range v.Warnings {
					fmt.Fprintf(w, "warning: %s\n", warn)
				}
			})
		},
	}
	f.register(cmd, true)
	return cmd
}

// jsonName maps a flag to its EndpointInput member.
func jsonName(flag string) string {
	switch flag {
	case "protocol-version":
		return "protocolVersion"
	case "latency-threshold":
		return "latencyThreshold"
	case "sinks-file":
		return "sinks"
	}
	return flag
}

func (a *app) endpointsRm() *cobra.Command {
	return &cobra.Command{
		Use:               "rm ID|NAME...",
		Aliases:           []string{"delete"},
		Short:             "Delete endpoints (their history goes with them)",
		Example:           "  mcpmon endpoints rm search\n  mcpmon endpoints rm 3kq2v7xw5b4mzp6a 7f2hz0c1r9w8u3ne",
		Args:              minArgs(1, "at least one endpoint ID or name"),
		ValidArgsFunction: a.completeEndpoints(true),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			return deleteEach(a, args, func(ref string) (apiv1.EndpointView, string, error) {
				v, err := a.endpointByRef(cmd.Context(), c, ref)
				if err != nil {
					return v, "", err
				}
				return v, fmt.Sprintf("deleted endpoint %s (%s)", v.ID, v.Name), c.DeleteEndpoint(cmd.Context(), v.ID)
			})
		},
	}
}

func (a *app) endpointsPause(pause bool) *cobra.Command {
	verb, short := "resume", "Probe paused endpoints again"
	if pause {
		verb, short = "pause", "Stop probing endpoints (configuration kept, no alerts)"
	}
	return &cobra.Command{
		Use:               verb + " ID|NAME...",
		Short:             short,
		Example:           fmt.Sprintf("  mcpmon endpoints %s search\n  mcpmon endpoints %s $(mcpmon endpoints list -l team=x -o json | jq -r '.[].id')", verb, verb),
		Args:              minArgs(1, "at least one endpoint ID or name"),
		ValidArgsFunction: a.completeEndpoints(true),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			var out []apiv1.EndpointView
			for _, ref := range args {
				cur, err := a.endpointByRef(cmd.Context(), c, ref)
				if err != nil {
					return err
				}
				v, err := c.PatchEndpoint(cmd.Context(), cur.ID, map[string]any{"paused": pause})
				if err != nil {
					return err
				}
				out = append(out, v)
			}
			return a.render(out, func(w io.Writer) {
				for _, v := range out {
					fmt.Fprintf(w, "%sd endpoint %s (%s)\n", verb, v.ID, v.Name)
				}
			})
		},
	}
}

// warnSameName warns on stderr when v's name is not unique in the
// tenant any more: the API allows it, but every command that takes the
// name refuses it from now on, so the user learns the IDs to use now
// rather than at the next command. The change is made whatever the walk
// finds: a failed walk warns of nothing.
func (a *app) warnSameName(ctx context.Context, c *client.Client, v apiv1.EndpointView) {
	var ids []string
	for e, err := range c.Endpoints(ctx, client.EndpointFilter{}) {
		if err != nil {
			return
		}
		if e.Name == v.Name {
			ids = append(ids, e.ID)
		}
	}
	if len(ids) > 1 {
		fmt.Fprintf(a.io.Stderr, "warning: %d endpoints are named %q (%s): commands that take the name will refuse it; give an ID, or rename one with mcpmon endpoints edit %s --name NEW\n",
			len(ids), v.Name, strings.Join(ids, ", "), v.ID)
	}
}

// endpointID resolves an endpoint ID or name to the ID the per-endpoint
// routes take.
func (a *app) endpointID(ctx context.Context, c *client.Client, ref string) (string, error) {
	v, err := a.endpointByRef(ctx, c, ref)
	return v.ID, err
}

// endpointNames maps the tenant's endpoint IDs to names, for the tables
// that name endpoints (incidents, maintenance windows): people registered
// them by name. A name two endpoints share is left out, and so is every
// endpoint after an error (the walk is best effort): the table shows the ID
// there instead, which is never wrong.
func (a *app) endpointNames(ctx context.Context, c *client.Client) map[string]string {
	names, seen := map[string]string{}, map[string]int{}
	for e, err := range c.Endpoints(ctx, client.EndpointFilter{}) {
		if err != nil {
			break
		}
		names[e.ID] = e.Name
		seen[e.Name]++
	}
	for id, name := range names {
		if seen[name] > 1 || name == "" {
			delete(names, id)
		}
	}
	return names
}

// endpointName is the name names gives id, or id itself.
func endpointName(names map[string]string, id string) string {
	if n, ok := names[id]; ok {
		return n
	}
	return id
}

// endpointClient is the REST client and the ID of the endpoint ref names:
// the start of every command about one endpoint's history.
func (a *app) endpointClient(ctx context.Context, ref string) (*client.Client, string, error) {
	c, err := a.client()
	if err != nil {
		return nil, "", err
	}
	id, err := a.endpointID(ctx, c, ref)
	return c, id, err
}

// completionTimeout bounds the API calls of a shell completion.
const completionTimeout = 5 * time.Second

// completeEndpoints completes an endpoint argument with the names of the
// tenant's endpoints (each described by its ID), read from --server with
// --token; one argument for a command taking one (many: every argument).
// Completion must not hang a shell, so it gives up after a few seconds.
func (a *app) completeEndpoints(many bool) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) > 0 && !many {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		c, err := a.client()
		if err != nil {
			return nil, cobra.ShellCompDirectiveError
		}
		ctx, cancel := context.WithTimeout(a.ctx, completionTimeout)
		defer cancel()
		var out []cobra.Completion
		for e, err := range c.Endpoints(ctx, client.EndpointFilter{}) {
			if err != nil {
				return nil, cobra.ShellCompDirectiveError
			}
			if strings.HasPrefix(e.Name, toComplete) && !slices.Contains(args, e.Name) {
				out = append(out, cobra.CompletionWithDesc(e.Name, e.ID))
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}
