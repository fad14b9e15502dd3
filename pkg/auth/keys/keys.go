// Package keys is `mcpmon keys create|list|revoke` on the store itself, for
// operators without a working admin key: Parse turns a command line into a
// Command (pure, every error the command line's), and Run carries it out on
// a keyring and writes what the operator reads.
//
// The caller opens the store from its own flags (pkg/daemon ManageKeys
// registers the daemon's store flags through Parse's register hook) and
// hands Run the keyring over it; this package touches no backend.
package keys

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/mcpmon/mcpmon/pkg/auth"
)

// Usage is the command's help text.
const Usage = `usage: mcpmon keys create --local --name NAME --scope read|write|admin [--expires-in 720h] [--tenant T] [--init] [store flags]
       mcpmon keys list --local [--tenant T] [store flags]
       mcpmon keys revoke ID|NAME --local [--tenant T] [store flags]

Works on the store directly: --data-dir DIR (the embedded store; mcpmon must
not be running on it) or --store redis --redis-url URL [--redis-prefix P].
A data dir without a store is refused (is it the one mcpmon runs on?);
--init makes the store, for a key made before the first start.
Over a running API, an admin key does the same with POST/GET/DELETE /v1/keys.
`

// The subcommands.
const (
	Create = "create"
	List   = "list"
	Revoke = "revoke"
)

// ErrNoSubcommand: the command line names no subcommand Parse knows; the
// caller shows Usage.
var ErrNoSubcommand = errors.New(`want "keys create", "keys list" or "keys revoke"`)

// Command is one parsed `mcpmon keys` command line.
type Command struct {
	Sub string // Create, List or Revoke
	// Tenant scopes the command: create's key belongs to it
	// (auth.DefaultTenant if empty); list and revoke look in it ("" for
	// every tenant).
	Tenant string
	// Create only.
	Name    string
	Scope   auth.Scope
	Expires time.Duration // 0: never
	// Ref is revoke's key ID or name.
	Ref string
}

// Parse parses args, `SUB [flags] [ID|NAME] [flags]`, into a Command.
// register adds the caller's flags to the set before the command's own
// (the daemon's store flags, applying their environment variables); their
// values are the caller's to read once Parse returns. An error from
// register is returned as it is. flag.ErrHelp asks for Usage.
func Parse(args []string, register func(*flag.FlagSet) error) (Command, error) {
	if len(args) == 0 || (args[0] != Create && args[0] != List && args[0] != Revoke) {
		return Command{}, ErrNoSubcommand
	}
	c := Command{Sub: args[0]}
	args = args[1:]
	fs := flag.NewFlagSet("mcpmon keys "+c.Sub, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	if register != nil {
		if err := register(fs); err != nil {
			return Command{}, err
		}
	}
	var scope string
	fs.StringVar(&c.Tenant, "tenant", "", "tenant of the key (create: default "+auth.DefaultTenant+"; list, revoke: every tenant)")
	if c.Sub == Create {
		fs.StringVar(&c.Name, "name", "", "name of the key (unique among the tenant's live keys)")
		fs.StringVar(&scope, "scope", "", "read, write or admin")
		fs.DurationVar(&c.Expires, "expires-in", 0, "the key expires this long from now (e.g. 720h); 0: never")
		// --expires-in is what keys create takes through the API too, so one
		// command line works with and without --local; --expires stays for
		// the scripts that spell it so.
		fs.DurationVar(&c.Expires, "expires", 0, "same as --expires-in")
	}
	// Flags may come before and after revoke's ID|NAME.
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return Command{}, err
		}
		if fs.NArg() == 0 {
			break
		}
		pos, args = append(pos, fs.Arg(0)), fs.Args()[1:]
	}
	switch {
	case c.Sub == Revoke && len(pos) != 1:
		return Command{}, errors.New("keys revoke: give one key ID or name")
	case c.Sub != Revoke && len(pos) > 0:
		return Command{}, fmt.Errorf("keys %s: unexpected argument %q", c.Sub, pos[0])
	case c.Sub == Revoke:
		c.Ref = pos[0]
	}
	if c.Sub != Create {
		return c, nil
	}
	sc, err := auth.ParseScope(scope)
	if err != nil {
		return Command{}, fmt.Errorf("--scope: %v", err)
	}
	c.Scope = sc
	if err := auth.ValidateName(c.Name); err != nil {
		return Command{}, fmt.Errorf("--name: %v", err)
	}
	if c.Expires < 0 {
		return Command{}, errors.New("--expires-in: must be positive")
	}
	return c, nil
}

// NewKey is the key create asks for at now.
func (c Command) NewKey(now time.Time) auth.NewKey {
	nk := auth.NewKey{Name: c.Name, Tenant: c.Tenant, Scope: c.Scope}
	if c.Expires > 0 {
		nk.Expires = now.Add(c.Expires)
	}
	return nk
}

// Keyring is what Run needs of auth.Keyring.
type Keyring interface {
	Create(ctx context.Context, nk auth.NewKey) (string, auth.Key, error)
	List(ctx context.Context, tenant string) ([]auth.Key, error)
	Revoke(ctx context.Context, tenant, ref string) (auth.Key, error)
}

var _ Keyring = (*auth.Keyring)(nil)

// Run carries out c on kr at now. create prints the key, and only the key,
// on stdout (what it is goes to stderr), so `$(mcpmon keys create …)` is
// the key; list prints a table, revoke one line.
func Run(ctx context.Context, kr Keyring, c Command, now time.Time, stdout, stderr io.Writer) error {
	switch c.Sub {
	case Create:
		secret, key, err := kr.Create(ctx, c.NewKey(now))
		if err != nil {
			return err
		}
		fmt.Fprintf(stderr, "created API key %s (%s, tenant %s, scope %s%s); it is shown only now:\n", key.ID, key.Name, key.Tenant, key.Scope, expiry(key, ", expires "))
		fmt.Fprintln(stdout, secret)
	case List:
		list, err := kr.List(ctx, c.Tenant)
		if err != nil {
			return err
		}
		return writeTable(stdout, list, now)
	case Revoke:
		key, err := kr.Revoke(ctx, c.Tenant, c.Ref)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "revoked API key %s (%s, tenant %s): every API replica refuses it within %s\n", key.ID, key.Name, key.Tenant, auth.DefaultCacheTTL)
	default:
		return ErrNoSubcommand
	}
	return nil
}

// writeTable lists keys with their status at now.
func writeTable(w io.Writer, list []auth.Key, now time.Time) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tNAME\tTENANT\tSCOPE\tSTATUS\tCREATED\tLAST USED\tEXPIRES")
	for _, k := range list {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", k.ID, k.Name, k.Tenant, k.Scope, k.Status(now),
			k.Created.UTC().Format(time.RFC3339), stamp(k.LastUsed, "never"), stamp(k.Expires, "never"))
	}
	return tw.Flush()
}

func stamp(t time.Time, zero string) string {
	if t.IsZero() {
		return zero
	}
	return t.UTC().Format(time.RFC3339)
}

func expiry(k auth.Key, prefix string) string {
	if k.Expires.IsZero() {
		return ""
	}
	return prefix + k.Expires.UTC().Format(time.RFC3339)
}
