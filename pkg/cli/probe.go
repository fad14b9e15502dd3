package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/mcpmon/mcpmon/pkg/daemon"
	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/msg"
	"github.com/mcpmon/mcpmon/pkg/netguard"
)

// probeFlags are `mcpmon probe`'s flags: the endpoint fields a probe
// reads, as `endpoints add` names them.
type probeFlags struct {
	transport, protocolVersion string
	otlpEndpoint               string
	timeout, latencyThreshold  time.Duration
	headers                    []string
	tool, toolArgs             string
	expectContains             string
	expect                     string
	oauthTokenURL              string
	oauthClientID              string
	oauthClientSecret          string
	oauthScopes                []string
	oauthAudience              string
	allowPrivate               bool
	networks                   []string
}

func (a *app) probeCmd() *cobra.Command {
	var f probeFlags
	cmd := &cobra.Command{
		Use:   "probe URL",
		Short: "Probe one MCP server now, from this machine, and print what a prober would see",
		Long: `Probe one MCP server now with the prober every mcpmon role runs (the same
handshake, failure classes, timeouts, SSRF guard and secret scrubbing) and
print the result: status, class, reason, negotiated transport and protocol,
server, tool count and each phase's duration. Nothing is registered or
stored, and no server is needed: use it to try a server before registering
it, or to see from another network what a prober saw.

Exit status: 0 when the server is up or degraded, 1 when it is down (the
reason on stderr), 2 for a usage error. With --expect STATUS (up, degraded
or down), a deploy gate: 0 when the probe's status is STATUS, else 1 with
one line saying what it was and why.`,
		Example: `  mcpmon probe https://mcp.example.com/mcp
  mcpmon probe https://mcp.example.com/mcp --header 'Authorization=Bearer ${env:TOKEN}' -o json
  mcpmon probe http://127.0.0.1:3001/mcp --allow-private-targets --transport streamable-http
  mcpmon probe https://mcp.example.com/mcp --expect up -o json
  mcpmon probe https://billing.example/mcp --tool health --tool-args '{"deep":false}' --expect-contains ok \
    --oauth-token-url https://auth.example/token --oauth-client-id probe \
    --oauth-client-secret '${env:PROBE_SECRET}'`,
		Args: exactURL,
		RunE: func(cmd *cobra.Command, args []string) error {
			if f.expect != "" && !slices.Contains(expectStatuses, msg.Status(f.expect)) {
				return usagef("--expect %q: want up, degraded or down", f.expect)
			}
			nets, err := netguard.ParseNetworks(f.networks)
			if err != nil {
				return usagef("--allow-target-networks: %v", err)
			}
			ep, err := a.probeEndpoint(args[0], &f)
			if err != nil {
				return err
			}
			timeout := "default timeout" // the prober's, which pkg/cli does not import
			if f.timeout > 0 {
				timeout = "timeout " + f.timeout.String()
			}
			stop := a.progress(func(elapsed time.Duration) string {
				return fmt.Sprintf("probe %s: no result yet after %s (%s)", ep.URL, elapsed, timeout)
			})
			res, err := daemon.ProbeOnce(cmd.Context(), ep, daemon.OnceOptions{AllowPrivateTargets: f.allowPrivate, AllowedNetworks: nets,
				OTLPEndpoint: f.otlpEndpoint, Getenv: a.io.Getenv})
			stop()
			if err != nil {
				return usageError{err}
			}
			if err := a.render(res, func(w io.Writer) { probeTable(w, ep.URL, res) }); err != nil {
				return err
			}
			return probeOutcome(res, msg.Status(f.expect))
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.transport, "transport", "", "auto (default), streamable-http or sse")
	fl.StringVar(&f.protocolVersion, "protocol-version", "", "pin an MCP protocol revision, e.g. 2025-06-18")
	fl.DurationVar(&f.timeout, "timeout", 0, "probe timeout (default 10s, at most 2m)")
	fl.DurationVar(&f.latencyThreshold, "latency-threshold", 0, "a slower probe is degraded (default 3s)")
	fl.StringArrayVar(&f.headers, "header", nil, "NAME=VALUE, VALUE a secret reference: 'Bearer ${env:TOKEN}' or '${file:PATH}' (repeatable)")
	fl.StringVar(&f.tool, "tool", "", "after the handshake, call this read-only tool")
	fl.StringVar(&f.toolArgs, "tool-args", "", "the tool's arguments, a JSON object")
	fl.StringVar(&f.expectContains, "expect-contains", "", "the tool result's text must contain this")
	fl.StringVar(&f.expect, "expect", "", "exit 0 only when the status is this: up, degraded or down (a deploy gate)")
	fl.StringVar(&f.oauthTokenURL, "oauth-token-url", "", "OAuth token URL (client credentials); default: discovered from the server's protected-resource and authorization-server metadata")
	fl.StringVar(&f.oauthClientID, "oauth-client-id", "", "OAuth client ID")
	fl.StringVar(&f.oauthClientSecret, "oauth-client-secret", "", "OAuth client secret, a reference: '${env:SECRET}' or '${file:PATH}'")
	fl.StringSliceVar(&f.oauthScopes, "oauth-scope", nil, "OAuth scopes (comma-separated or repeated)")
	fl.StringVar(&f.oauthAudience, "oauth-audience", "", "OAuth audience parameter, when the authorization server wants one")
	fl.BoolVar(&f.allowPrivate, "allow-private-targets", false, "allow loopback, private and link-local targets (refused by default, like the daemon)")
	fl.StringSliceVar(&f.networks, "allow-target-networks", nil, "allow these private networks only (CIDR or one address; repeat or comma-separate), like the daemon's flag")
	fl.StringVar(&f.otlpEndpoint, "otlp-endpoint", "", "export the probe as a trace to this OTLP receiver, as a daemon's --otlp-endpoint (default: the OTEL_EXPORTER_OTLP_* environment; neither: no trace)")
	_ = cmd.RegisterFlagCompletionFunc("expect", cobra.FixedCompletions([]string{"up", "degraded", "down"}, cobra.ShellCompDirectiveNoFileComp))
	_ = cmd.RegisterFlagCompletionFunc("transport", cobra.FixedCompletions([]string{"auto", "streamable-http", "sse"}, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

// expectStatuses are the values of --expect.
var expectStatuses = []msg.Status{msg.StatusUp, msg.StatusDegraded, msg.StatusDown}

// probeOutcome is the exit of `mcpmon probe`: without an expectation, an
// error when the server is down; with one, an error when the status is
// another, naming what it was and why.
func probeOutcome(res msg.ProbeResult, expect msg.Status) error {
	switch {
	case expect == "" && res.Status != msg.StatusDown:
		return nil
	case expect == "":
		return fmt.Errorf("down (%s): %s", res.Class, res.Error)
	case res.Status == expect:
		return nil
	case res.Error != "":
		return fmt.Errorf("%s (%s), want %s: %s", res.Status, res.Class, expect, res.Error)
	}
	return fmt.Errorf("%s (%s), want %s", res.Status, res.Class, expect)
}

func exactURL(cmd *cobra.Command, args []string) error {
	if len(args) != 1 {
		return usagef("want one URL, got %d arguments", len(args))
	}
	return nil
}

// probeEndpoint is the endpoint the flags describe, its secrets resolved
// from their references.
func (a *app) probeEndpoint(url string, f *probeFlags) (model.Endpoint, error) {
	ep := model.Endpoint{
		URL:              url,
		Transport:        f.transport,
		ProtocolVersion:  f.protocolVersion,
		Timeout:          f.timeout,
		LatencyThreshold: f.latencyThreshold,
	}
	res := a.resolver()
	for _, h := range f.headers {
		k, v, ok := strings.Cut(h, "=")
		if !ok || k == "" {
			return ep, usagef("--header %q: want NAME=VALUE", h)
		}
		val, err := res.Secret("--header "+k, v)
		if err != nil {
			return ep, usageError{err}
		}
		if ep.Headers == nil {
			ep.Headers = map[string]string{}
		}
		ep.Headers[k] = val
	}
	if f.tool == "" && (f.toolArgs != "" || f.expectContains != "") {
		return ep, usagef("--tool-args and --expect-contains need --tool")
	}
	if f.tool != "" {
		tc := &model.ToolCheck{Name: f.tool}
		if f.toolArgs != "" {
			var obj map[string]any
			if err := json.Unmarshal([]byte(f.toolArgs), &obj); err != nil {
				return ep, usagef("--tool-args: want a JSON object: %v", err)
			}
			tc.Arguments = json.RawMessage(f.toolArgs)
		}
		if f.expectContains != "" {
			tc.Expect = &model.ToolExpect{Contains: f.expectContains}
		}
		ep.ToolCheck = tc
	}
	if f.oauthTokenURL != "" || f.oauthClientID != "" || f.oauthClientSecret != "" {
		if f.oauthClientID == "" || f.oauthClientSecret == "" {
			return ep, usagef("OAuth client credentials need --oauth-client-id and --oauth-client-secret (and --oauth-token-url, unless the server's metadata names it)")
		}
		secret, err := res.Secret("--oauth-client-secret", f.oauthClientSecret)
		if err != nil {
			return ep, usageError{err}
		}
		ep.OAuth = &model.OAuthClient{
			TokenURL: f.oauthTokenURL, ClientID: f.oauthClientID, ClientSecret: secret,
			Scopes: f.oauthScopes, Audience: f.oauthAudience,
		}
	}
	return ep, nil
}

// probeTable is a result for people: what it was, why, and where the time
// went.
func probeTable(w io.Writer, url string, r msg.ProbeResult) {
	server := strings.TrimSpace(r.ServerName + " " + r.ServerVersion)
	var tools string
	if r.ToolCount > 0 || r.CatalogFingerprint != "" {
		tools = fmt.Sprintf("%d (catalog %s)", r.ToolCount, short(r.CatalogFingerprint))
	}
	var http string
	if r.HTTPStatus != 0 {
		http = fmt.Sprint(r.HTTPStatus)
	}
	fields(w,
		"URL", url,
		"Status", string(r.Status),
		"Class", r.Class,
		"Reason", r.Error,
		"HTTP status", http,
		"Transport", r.Transport,
		"Protocol", r.ProtocolVersion,
		"Server", server,
		"Tools", tools,
		"Certificate", certCell(r.CertExpiry),
		"Phases", phasesCell(r.Phases),
	)
	for _, e := range r.Events {
		fields(w, "Event", e.Kind+": "+e.Message)
	}
}

func short(fp string) string {
	fp = strings.TrimPrefix(fp, "sha256:")
	if len(fp) > 12 {
		return fp[:12]
	}
	return fp
}

func certCell(t *time.Time) string {
	if t == nil {
		return ""
	}
	return "expires " + t.UTC().Format(time.RFC3339)
}

// phasesCell lists the phases in the order a probe runs them, total last.
func phasesCell(ph map[string]float64) string {
	order := []string{msg.PhaseAuthToken, msg.PhaseDNS, msg.PhaseConnect, msg.PhaseTLS, msg.PhaseDiscover, msg.PhaseInitialize,
		msg.PhaseInitialized, msg.PhasePing, msg.PhaseToolsList, msg.PhaseToolCall, msg.PhaseClose, msg.PhaseTotal}
	keys := slices.Sorted(maps.Keys(ph))
	slices.SortStableFunc(keys, func(x, y string) int {
		ix, iy := slices.Index(order, x), slices.Index(order, y)
		if ix < 0 {
			ix = len(order) - 1 // unknown phases before total
		}
		if iy < 0 {
			iy = len(order) - 1
		}
		return ix - iy
	})
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		d := time.Duration(ph[k] * float64(time.Second))
		parts = append(parts, k+" "+d.Round(10*time.Microsecond).String())
	}
	return strings.Join(parts, ", ")
}
