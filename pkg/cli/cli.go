// Package cli is the mcpmon command line: one cobra command tree for the
// server roles (run, api, prober, aggregator, alerter, queues ensure,
// secrets rotate), which it hands to pkg/daemon with their own flags, and
// for the REST commands (endpoints, verdicts, uptime, events, catalog,
// incidents, maintenance, status-pages, keys, audit, dlq, status, apply,
// export, import registry), which talk to a running server through pkg/client.
//
// Input enters as the process's arguments and the injected IO (Env); no
// package state, so tests run the tree in-process. Output leaves on
// IO.Stdout as tables for people (-o table, confirmations included) or
// JSON/YAML for scripts; IO.Stderr holds warnings, the progress of long
// commands and errors, each error one line with an exit code scripts can
// branch on: 0 ok, 1 error, 2 usage, 3 not found.
//
// Each command group lives in its own file as a func(*app) *cobra.Command
// listed in commands(); adding a group is one file and one line there.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/mcpmon/mcpmon/pkg/client"
	"github.com/mcpmon/mcpmon/pkg/daemon"
)

// Exit codes.
const (
	ExitOK       = 0
	ExitError    = 1
	ExitUsage    = 2
	ExitNotFound = 3
)

// DefaultServer is the API a command talks to without --server or
// MCPMON_SERVER.
const DefaultServer = "http://127.0.0.1:8080"

// IO is what the command line reads and writes besides its arguments.
type IO struct {
	Getenv func(string) string
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	// HTTPClient sends the REST commands' requests; nil is
	// http.DefaultClient.
	HTTPClient *http.Client
	// ReadFile reads ${file:} references and --sinks-file; nil is
	// os.ReadFile. (apply's -f files are read from the OS file system.)
	ReadFile func(string) ([]byte, error)
	// ProgressEvery is how often a long command (probe, wait) tells
	// stderr it is still waiting; 0 is DefaultProgressEvery.
	ProgressEvery time.Duration
}

// DefaultProgressEvery is IO.ProgressEvery's default.
const DefaultProgressEvery = 5 * time.Second

// app is one invocation's state: the IO and the global flags.
type app struct {
	ctx    context.Context
	io     IO
	server string
	token  string
	output string
	// started is set once cobra has parsed the command line and is about to
	// run a command: an error before it is a usage error.
	started bool
}

// Run executes the command line args (without the program name) and
// returns the exit code.
func Run(ctx context.Context, args []string, io IO) int {
	if io.Getenv == nil {
		io.Getenv = func(string) string { return "" }
	}
	if io.Stdin == nil {
		io.Stdin = strings.NewReader("")
	}
	if io.ReadFile == nil {
		io.ReadFile = os.ReadFile
	}
	if io.ProgressEvery <= 0 {
		io.ProgressEvery = DefaultProgressEvery
	}
	// A command's progress lines come from a goroutine of their own.
	io.Stderr = &lockedWriter{w: io.Stderr}
	a := &app{ctx: ctx, io: io}
	root := a.root()
	root.SetArgs(defaultToRun(args))
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return ExitOK
	}
	code := a.exitCode(err)
	name := "mcpmon"
	if cmd != nil {
		name = cmd.CommandPath()
	}
	msg := a.explain(cmd, err)
	if code == ExitUsage && cmd != nil && !cmd.DisableFlagParsing {
		msg += fmt.Sprintf(" (see %s --help)", name)
	}
	fmt.Fprintf(io.Stderr, "%s: %s\n", name, msg)
	return code
}

// lockedWriter serializes writes to w, so that lines written from two
// goroutines never interleave.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// defaultToRun keeps the old command line working: no arguments, or
// daemon flags first (`mcpmon --listen :9090`), mean `mcpmon run`.
func defaultToRun(args []string) []string {
	if len(args) == 0 {
		return []string{"run"}
	}
	if a := args[0]; strings.HasPrefix(a, "-") {
		name := strings.TrimLeft(strings.SplitN(a, "=", 2)[0], "-")
		switch name {
		case "h", "help", "server", "token", "o", "output", "version":
			return args
		}
		return append([]string{"run"}, args...)
	}
	return args
}

// usageError marks a command-line mistake (exit 2).
type usageError struct{ error }

func (e usageError) Unwrap() error { return e.error }

func usagef(format string, args ...any) error { return usageError{fmt.Errorf(format, args...)} }

// notFoundError marks something named on the command line that does not
// exist (exit 3).
type notFoundError struct{ error }

func (e notFoundError) Unwrap() error { return e.error }

func (a *app) exitCode(err error) int {
	var u usageError
	var nf notFoundError
	switch {
	case !a.started, errors.As(err, &u), daemon.IsUsage(err):
		return ExitUsage
	case errors.As(err, &nf), client.IsNotFound(err) && !notMCPMON(err):
		return ExitNotFound
	}
	return ExitError
}

// httpStatus is the status of the API's error answer in err, or 0.
func httpStatus(err error) int {
	var e *client.Error
	if errors.As(err, &e) {
		return e.Status
	}
	return 0
}

// notMCPMON reports an error answer that mcpmon did not write: mcpmon
// answers every error with problem details (application/problem+json,
// whose type is never empty) or, on /readyz, a reason; an HTML 404 or 501
// is some other server at --server.
func notMCPMON(err error) bool {
	var e *client.Error
	return errors.As(err, &e) && e.Type == "" && e.Detail == "" && len(e.Errors) == 0
}

// hintError carries what to do about err, in place of explain's generic
// hints.
type hintError struct {
	error
	hint string
}

func (e hintError) Unwrap() error { return e.error }

// explain is err as one line, with what to do when the cause is common.
// A server role (serverRole) gets no hint about --server or --token: its
// errors are not about the API at --server, and pkg/daemon already says
// what to do (a listen address in use: "pick another with --listen").
func (a *app) explain(cmd *cobra.Command, err error) string {
	msg := strings.ReplaceAll(err.Error(), "\n", " ")
	if cmd != nil && cmd.Annotations[serverRole] != "" {
		return msg
	}
	var opErr *net.OpError
	var h hintError
	switch {
	case errors.As(err, &h):
		msg += " (" + h.hint + ")"
	case notMCPMON(err):
		msg += fmt.Sprintf(" (the answer is not mcpmon's: is %s an mcpmon server? set --server or MCPMON_SERVER)", a.server)
	case client.IsUnauthorized(err) && a.token == "":
		msg += " (no key was sent: set --token or MCPMON_TOKEN)"
	case client.IsUnauthorized(err):
		msg += " (set --token or MCPMON_TOKEN to an API key with the needed scope)"
	case errors.As(err, &opErr):
		msg += fmt.Sprintf(" (is mcpmon running at %s? set --server or MCPMON_SERVER)", a.server)
	case client.IsNotFound(err):
		if list := listSibling(cmd); list != "" {
			msg += fmt.Sprintf(" (%s shows them)", list)
		}
	}
	return msg
}

// listSibling is the command that lists what cmd names ("mcpmon incidents
// list" for "mcpmon incidents ack"), or "" when it has none.
func listSibling(cmd *cobra.Command) string {
	if cmd == nil || cmd.Name() == "list" || !cmd.HasParent() {
		return ""
	}
	for _, c := range cmd.Parent().Commands() {
		if c.Name() == "list" {
			return c.CommandPath()
		}
	}
	return ""
}

func (a *app) root() *cobra.Command {
	root := &cobra.Command{
		Use:   "mcpmon",
		Short: "Watch remote MCP servers and alert their owners once per incident",
		Long: `mcpmon probes remote MCP servers, folds the results into verdicts and alerts
once per incident. The same binary runs the server (mcpmon run, the default)
and is its command-line client (every other command, through the REST API at
--server with the API key in --token).

Exit status: 0 ok, 1 error, 2 usage, 3 not found.`,
		Example: `  # every role in one process, on embedded defaults
  mcpmon
  # talk to it
  export MCPMON_TOKEN=...   # printed at the first start
  mcpmon endpoints add --name search --url https://mcp.example.com/mcp
  mcpmon status
  mcpmon apply -f endpoints.yaml --dry-run`,
		SilenceErrors:     true,
		SilenceUsage:      true,
		CompletionOptions: cobra.CompletionOptions{DisableDefaultCmd: true},
		Version:           daemon.Version,
		PersistentPreRunE: func(cmd *cobra.Command, args []string) error {
			a.started = true
			switch a.output {
			case "table", "json", "yaml":
			default:
				return usagef("-o %q: want table, json or yaml", a.output)
			}
			return nil
		},
	}
	root.SetOut(a.io.Stdout)
	root.SetErr(a.io.Stderr)
	root.SetIn(a.io.Stdin)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	pf := root.PersistentFlags()
	pf.StringVar(&a.server, "server", or(a.io.Getenv("MCPMON_SERVER"), DefaultServer), "mcpmon API base URL (env MCPMON_SERVER)")
	pf.StringVar(&a.token, "token", a.io.Getenv("MCPMON_TOKEN"), "API key (env MCPMON_TOKEN)")
	// The key from MCPMON_TOKEN is the flag's value, but never its shown
	// default: --help output gets pasted into tickets and CI logs.
	pf.Lookup("token").DefValue = ""
	pf.StringVarP(&a.output, "output", "o", "table", "output format: table, json or yaml")
	_ = root.RegisterFlagCompletionFunc("output", cobra.FixedCompletions([]string{"table", "json", "yaml"}, cobra.ShellCompDirectiveNoFileComp))
	for _, c := range a.commands() {
		root.AddCommand(c)
	}
	return root
}

// commands are the top-level command groups, one file each.
func (a *app) commands() []*cobra.Command {
	cmds := a.serverCommands() // server.go
	return append(cmds,
		a.endpointsCmd(),   // endpoints.go
		a.incidentsCmd(),   // incidents.go
		a.maintenanceCmd(), // maintenance.go
		a.statusPagesCmd(), // statuspages.go
		a.keysCmd(),        // keys.go
		a.agentsCmd(),      // agents.go
		a.agentCmd(),       // agents.go
		a.dlqCmd(),         // dlq.go
		a.verdictsCmd(),    // verdicts.go
		a.uptimeCmd(),      // uptime.go
		a.eventsCmd(),      // events.go
		a.catalogCmd(),     // catalog.go
		a.conformanceCmd(), // conformancecmd.go
		a.auditCmd(),       // audit.go
		a.statusCmd(),      // status.go
		a.applyCmd(),       // apply.go
		a.exportCmd(),      // apply.go
		a.importCmd(),      // importcmd.go
		a.completionCmd(),  // completion.go
		a.probeCmd(),       // probe.go
		a.waitCmd(),        // wait.go
		a.storeCmd(),       // storecmd.go
	)
}

// group is a command that only holds subcommands: alone it prints its
// help; with an unknown subcommand it is a usage error.
func group(use, short, example string) *cobra.Command {
	return &cobra.Command{
		Use: use, Short: short, Example: example,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usagef("unknown command %q for %q", args[0], cmd.CommandPath())
			}
			return cmd.Help()
		},
	}
}

// exactArgs is cobra.ExactArgs as a usage error naming what is missing.
func exactArgs(n int, what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != n {
			return usagef("want %s, got %d argument(s)", what, len(args))
		}
		return nil
	}
}

func minArgs(n int, what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) < n {
			return usagef("want %s", what)
		}
		return nil
	}
}

func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usagef("unexpected argument %q", args[0])
	}
	return nil
}

// client returns a REST client of --server with --token.
func (a *app) client() (*client.Client, error) {
	var opts []client.Option
	if a.io.HTTPClient != nil {
		opts = append(opts, client.WithHTTPClient(a.io.HTTPClient))
	}
	opts = append(opts, client.WithUserAgent("mcpmon-cli/"+daemon.Version))
	c, err := client.New(a.server, a.token, opts...)
	if err != nil {
		return nil, usagef("--server: %v", err)
	}
	return c, nil
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// changed reports whether flag name was given on the command line.
func changed(cmd *cobra.Command, name string) bool {
	f := cmd.Flags().Lookup(name)
	return f != nil && f.Changed
}
