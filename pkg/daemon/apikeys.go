package daemon

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"text/tabwriter"
	"time"

	"go.etcd.io/bbolt"

	"github.com/mcpmon/mcpmon/pkg/api"
	"github.com/mcpmon/mcpmon/pkg/auth"
	"github.com/mcpmon/mcpmon/pkg/clock"
	"github.com/mcpmon/mcpmon/pkg/config"
	"github.com/mcpmon/mcpmon/pkg/store"
	"github.com/mcpmon/mcpmon/pkg/store/bolt"
	redisstore "github.com/mcpmon/mcpmon/pkg/store/redis"
)

// API keys in a process: the keyring the API checks keys with, the admin
// key a first start creates and prints once, and `mcpmon keys`.

// apiKeys is the daemon's API-key state.
type apiKeys struct {
	ring *auth.Keyring
	// fresh is the admin key this start created; authBanner prints it once
	// and forgets it. Empty when it went to --bootstrap-key-file.
	fresh string
	// wroteFile is the --bootstrap-key-file this start wrote the key to.
	wroteFile string
	// none: the store has no key and --bootstrap-key=false made none.
	none bool
}

// bootstrapClaim is the ledger key that lets one API replica of many create
// the first admin key.
const bootstrapClaim = "bootstrap-admin-api-key"

// setupAPIKeys returns what api.Options needs for --auth: nothing with
// --auth none, else a keyring whose last-used times are flushed by a loop,
// after creating the first admin key if the store has no key at all.
func (d *Daemon) setupAPIKeys(ctx context.Context) (api.Authenticator, api.KeyManager, error) {
	if d.opts.Auth == config.AuthNone {
		d.log.Warn("--auth none: the REST API is open to anyone who can connect to it, without API keys", "listen", d.opts.Listen)
		return nil, nil, nil
	}
	kr := auth.NewKeyring(d.st, auth.Options{Clock: d.clk, Logger: d.log})
	d.keys.ring = kr
	d.loop(ctx, "API key last-used flush", kr.Run)
	if !d.opts.BootstrapKey {
		exists, err := kr.Any(ctx)
		d.keys.none = err == nil && !exists
		return kr, kr, nil
	}
	owner := d.opts.ReplicaID
	if owner == "" { // Start called without config.Parse (tests, the load harness)
		host, _ := os.Hostname()
		owner = fmt.Sprintf("%s-%d", host, os.Getpid())
	}
	var out *keyFile
	if d.opts.BootstrapKeyFile != "" {
		// Opened before the key is made: a path that cannot be written
		// fails the start before a key exists that nobody could read.
		f, err := createKeyFile(d.opts.BootstrapKeyFile)
		if err != nil {
			return nil, nil, usageError{fmt.Errorf("--bootstrap-key-file: %w", err)}
		}
		defer f.discard()
		out = f
	}
	key, err := bootstrapAdminKey(ctx, d.st, kr, owner)
	switch {
	case errors.Is(err, store.ErrUnavailable):
		// Not worth failing a start that waits for Redis anyway: the next
		// start (of any replica) bootstraps, and `mcpmon keys create`
		// works meanwhile.
		d.log.Warn("store unreachable: no first admin API key was created; restart once it answers, or run `mcpmon keys create --local`", "err", err)
	case err != nil:
		return nil, nil, fmt.Errorf("create the first admin API key: %w", err)
	}
	if key != "" && out != nil {
		if err := out.commit(key); err != nil {
			return nil, nil, fmt.Errorf("write the first admin API key to --bootstrap-key-file (the key exists but is lost: make another with `mcpmon keys create --local`): %w", err)
		}
		d.keys.wroteFile = d.opts.BootstrapKeyFile
		return kr, kr, nil
	}
	d.keys.fresh = key
	return kr, kr, nil
}

// keyFile writes the bootstrap key: a temporary file beside the target,
// created mode 0600 (os.CreateTemp), renamed over the target only once the
// key is in it, so the target is never seen half written or readable by
// others.
type keyFile struct {
	f      *os.File
	target string
	done   bool
}

func createKeyFile(target string) (*keyFile, error) {
	f, err := os.CreateTemp(filepath.Dir(target), "."+filepath.Base(target)+".*")
	if err != nil {
		return nil, err
	}
	return &keyFile{f: f, target: target}, nil
}

func (k *keyFile) commit(key string) error {
	if _, err := k.f.WriteString(key + "\n"); err != nil {
		return err
	}
	if err := k.f.Sync(); err != nil {
		return err
	}
	if err := k.f.Close(); err != nil {
		return err
	}
	if err := os.Rename(k.f.Name(), k.target); err != nil {
		return err
	}
	k.done = true
	return nil
}

// discard removes the temporary file unless commit renamed it.
func (k *keyFile) discard() {
	if !k.done {
		_ = k.f.Close()
		_ = os.Remove(k.f.Name())
	}
}

// bootstrapStore is what the bootstrap needs from the store.
type bootstrapStore interface {
	Claim(ctx context.Context, key, owner string, lease time.Duration) (store.ClaimState, error)
	Complete(ctx context.Context, key, owner string) error
}

// bootstrapAdminKey creates an admin key for the default tenant if the store
// holds no key record at all (revoked ones count: an operator who revoked
// every key gets a new one from `mcpmon keys create`, not from a restart).
// It returns the key, or "" when none was created.
//
// Several API replicas may start at once on one Redis: the claim lets one
// create the key. A crash after the claim and before the create leaves no
// key; the claim lapses after its lease and the next start creates it. A
// crash after the create and before the banner loses the key itself (only
// its hash is stored): `mcpmon keys create` makes another.
func bootstrapAdminKey(ctx context.Context, st bootstrapStore, kr *auth.Keyring, owner string) (string, error) {
	if exists, err := kr.Any(ctx); err != nil || exists {
		return "", err
	}
	state, err := st.Claim(ctx, bootstrapClaim, owner, time.Minute)
	if err != nil {
		return "", fmt.Errorf("claim the bootstrap: %w", err)
	}
	if state != store.ClaimAcquired {
		return "", nil // another replica creates it, or did
	}
	// Re-check under the claim: a replica that finished before our first
	// look completed its claim (ClaimDone above), but `mcpmon keys create`
	// takes no claim.
	if exists, err := kr.Any(ctx); err != nil || exists {
		return "", errors.Join(err, st.Complete(ctx, bootstrapClaim, owner))
	}
	secret, _, err := kr.Create(ctx, auth.NewKey{Name: "admin", Tenant: auth.DefaultTenant, Scope: auth.ScopeAdmin})
	if err != nil {
		return "", err
	}
	// A failed Complete is harmless: the key exists, and a replica that
	// takes the lapsed claim finds it.
	_ = st.Complete(ctx, bootstrapClaim, owner)
	return secret, nil
}

// authBanner tells the operator how to reach the API: the first admin key
// (once), how to get one, or that the API is open.
func (d *Daemon) authBanner(w io.Writer) {
	if !d.role.has(RoleAPI) {
		return
	}
	switch {
	case d.opts.Auth == config.AuthNone:
		fmt.Fprintf(w, "WARNING: --auth none: the REST API on %s takes no API key; anyone who can connect to it can change it\n", d.Addr())
	case d.keys.fresh != "":
		fmt.Fprintf(w, "admin API key (tenant %q), shown this once: mcpmon keeps only its hash\n  export MCPMON_TOKEN=%s\n", auth.DefaultTenant, d.keys.fresh)
		d.keys.fresh = ""
	case d.keys.wroteFile != "":
		fmt.Fprintf(w, "admin API key (tenant %q) written to %s (mode 0600); mcpmon keeps only its hash\n  export MCPMON_TOKEN=$(cat %s)\n", auth.DefaultTenant, d.keys.wroteFile, d.keys.wroteFile)
	case d.keys.none:
		fmt.Fprintln(w, "no API key exists and --bootstrap-key=false made none: every /v1 request is refused until you run `mcpmon keys create --local --name NAME --scope admin`")
	default:
		fmt.Fprintln(w, "every /v1 request needs Authorization: Bearer <API key>; lost the admin key printed at the first start? stop mcpmon and run `mcpmon keys create --local --name NAME --scope admin`")
	}
}

const keysUsage = `usage: mcpmon keys create --local --name NAME --scope read|write|admin [--expires 720h] [--tenant T] [store flags]
       mcpmon keys list --local [--tenant T] [store flags]
       mcpmon keys revoke ID|NAME --local [--tenant T] [store flags]

Works on the store directly: --data-dir DIR (the embedded store; mcpmon must
not be running on it) or --store redis --redis-url URL [--redis-prefix P].
Over a running API, an admin key does the same with POST/GET/DELETE /v1/keys.
`

// ManageKeys runs `mcpmon keys create|list|revoke` against the store, for
// operators without a working admin key. create prints the key, and only
// the key, on stdout.
func ManageKeys(ctx context.Context, args []string, env func(string) string, stdout, stderr io.Writer) error {
	if len(args) == 0 || (args[0] != "create" && args[0] != "list" && args[0] != "revoke") {
		fmt.Fprint(stderr, keysUsage)
		return usageError{errors.New(`want "keys create", "keys list" or "keys revoke"`)}
	}
	sub, args := args[0], args[1:]
	o := config.Defaults()
	fs := flag.NewFlagSet("mcpmon keys "+sub, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	o.Register(fs)
	var envErr error
	fs.VisitAll(func(f *flag.Flag) {
		if v := env(config.EnvName(f.Name)); v != "" && envErr == nil {
			if err := f.Value.Set(v); err != nil {
				envErr = fmt.Errorf("%s: %v", config.EnvName(f.Name), err)
			}
		}
	})
	if envErr != nil {
		return usageError{envErr}
	}
	var name, scope, tenant string
	var expires time.Duration
	fs.StringVar(&tenant, "tenant", "", "tenant of the key (create: default "+auth.DefaultTenant+"; list, revoke: every tenant)")
	if sub == "create" {
		fs.StringVar(&name, "name", "", "name of the key (unique among the tenant's live keys)")
		fs.StringVar(&scope, "scope", "", "read, write or admin")
		fs.DurationVar(&expires, "expires", 0, "the key expires this long from now (e.g. 720h); 0: never")
	}
	// Flags may come before and after revoke's ID|NAME.
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				fmt.Fprint(stderr, keysUsage)
				return nil
			}
			return usageError{err}
		}
		if fs.NArg() == 0 {
			break
		}
		pos, args = append(pos, fs.Arg(0)), fs.Args()[1:]
	}
	switch {
	case sub == "revoke" && len(pos) != 1:
		return usageError{errors.New("keys revoke: give one key ID or name")}
	case sub != "revoke" && len(pos) > 0:
		return usageError{fmt.Errorf("keys %s: unexpected argument %q", sub, pos[0])}
	}

	st, err := openKeyStore(ctx, o, sub == "create")
	if err != nil {
		return err
	}
	defer st.Close()
	kr := auth.NewKeyring(st, auth.Options{})
	now := time.Now()
	switch sub {
	case "create":
		sc, err := auth.ParseScope(scope)
		if err != nil {
			return usageError{fmt.Errorf("--scope: %v", err)}
		}
		if err := auth.ValidateName(name); err != nil {
			return usageError{fmt.Errorf("--name: %v", err)}
		}
		if expires < 0 {
			return usageError{errors.New("--expires: must be positive")}
		}
		nk := auth.NewKey{Name: name, Tenant: tenant, Scope: sc}
		if expires > 0 {
			nk.Expires = now.Add(expires)
		}
		secret, key, err := kr.Create(ctx, nk)
		if err != nil {
			return err
		}
		fmt.Fprintf(stderr, "created API key %s (%s, tenant %s, scope %s%s); it is shown only now:\n", key.ID, key.Name, key.Tenant, key.Scope, expiry(key, ", expires "))
		fmt.Fprintln(stdout, secret)
	case "list":
		keys, err := kr.List(ctx, tenant)
		if err != nil {
			return err
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tNAME\tTENANT\tSCOPE\tSTATUS\tCREATED\tLAST USED\tEXPIRES")
		for _, k := range keys {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", k.ID, k.Name, k.Tenant, k.Scope, k.Status(now),
				k.Created.UTC().Format(time.RFC3339), stamp(k.LastUsed, "never"), stamp(k.Expires, "never"))
		}
		return tw.Flush()
	case "revoke":
		key, err := kr.Revoke(ctx, tenant, pos[0])
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "revoked API key %s (%s, tenant %s): every API replica refuses it within %s\n", key.ID, key.Name, key.Tenant, auth.DefaultCacheTTL)
	}
	return nil
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

// keyStore is the store `mcpmon keys` opens.
type keyStore interface {
	auth.Store
	Close() error
}

// openKeyStore opens the store's backend directly: API key records are not
// sealed (they hold a hash, never a key), so no secrets key is needed. The
// embedded store must exist unless create may make it (keys can be made
// before the first start).
func openKeyStore(ctx context.Context, o config.Options, mayCreate bool) (keyStore, error) {
	logger := slog.New(slog.DiscardHandler)
	switch o.Store {
	case config.StoreEmbedded:
		if o.DataDir == "" {
			return nil, usageError{errors.New("--data-dir is required with the embedded store")}
		}
		path := filepath.Join(o.DataDir, "store.db")
		if _, err := os.Stat(path); err != nil && !mayCreate {
			return nil, usageError{fmt.Errorf("no store at %s: point --data-dir at mcpmon's data directory (or --store redis --redis-url URL)", path)}
		}
		s, err := bolt.Open(path, bolt.Options{Clock: clock.Real{}, SweepInterval: -1, LockTimeout: time.Second, Logger: logger})
		if errors.Is(err, bbolt.ErrTimeout) {
			return nil, fmt.Errorf("the data dir %s is locked by a running mcpmon: `mcpmon keys --local` opens the store itself, so stop mcpmon first, or manage keys over its API with an admin key (POST/GET/DELETE /v1/keys)", o.DataDir)
		}
		if err != nil {
			return nil, err
		}
		return s, nil
	case config.StoreRedis:
		if o.RedisURL == "" {
			return nil, usageError{errors.New("--store redis needs --redis-url (or MCPMON_REDIS_URL)")}
		}
		s, err := redisstore.New(ctx, o.RedisURL, redisstore.Options{Prefix: o.RedisPrefix, Logger: logger})
		if err != nil {
			return nil, fmt.Errorf("connect to Redis (check --redis-url and that Redis is up): %w", err)
		}
		return s, nil
	}
	return nil, usageError{fmt.Errorf("--store %q: want embedded or redis", o.Store)}
}
