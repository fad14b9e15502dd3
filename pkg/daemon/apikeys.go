package daemon

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"go.etcd.io/bbolt"

	"github.com/mcpmon/mcpmon/pkg/api"
	"github.com/mcpmon/mcpmon/pkg/auth"
	"github.com/mcpmon/mcpmon/pkg/auth/keys"
	"github.com/mcpmon/mcpmon/pkg/clock"
	"github.com/mcpmon/mcpmon/pkg/config"
	"github.com/mcpmon/mcpmon/pkg/store"
	"github.com/mcpmon/mcpmon/pkg/store/bolt"
	redisstore "github.com/mcpmon/mcpmon/pkg/store/redis"
)

// API keys wired into a process: the keyring the API checks keys with, the
// admin key a first start creates (Keyring.Bootstrap) and prints once, and
// `mcpmon keys` (pkg/auth/keys) on the store the flags name. What a key is
// and how it is made, listed and revoked is pkg/auth's.

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
	var out *auth.KeyFile
	if d.opts.BootstrapKeyFile != "" {
		// Opened before the key is made: a path that cannot be written
		// fails the start before a key exists that nobody could read.
		f, err := auth.CreateKeyFile(d.opts.BootstrapKeyFile)
		if err != nil {
			return nil, nil, usageError{fmt.Errorf("--bootstrap-key-file: %w", err)}
		}
		defer f.Discard()
		out = f
	}
	key, err := kr.Bootstrap(ctx, d.st, owner)
	switch {
	case errors.Is(err, store.ErrUnavailable):
		// Not worth failing a start that waits for Redis anyway: the next
		// start (of any replica) bootstraps, and `mcpmon keys create`
		// works meanwhile.
		d.log.Warn("store unreachable: no first admin API key was created; restart once it answers, or "+offlineKeyCommand(d.opts), "err", err)
	case err != nil:
		return nil, nil, fmt.Errorf("create the first admin API key: %w", err)
	}
	if key != "" && out != nil {
		if err := out.Commit(key); err != nil {
			return nil, nil, fmt.Errorf("write the first admin API key to --bootstrap-key-file (the key exists but is lost: %s to make another): %w", offlineKeyCommand(d.opts), err)
		}
		d.keys.wroteFile = d.opts.BootstrapKeyFile
		return kr, kr, nil
	}
	d.keys.fresh = key
	return kr, kr, nil
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
		fmt.Fprintf(w, "no API key exists and --bootstrap-key=false made none: every /v1 request is refused until you %s\n", offlineKeyCommand(d.opts))
	default:
		fmt.Fprintf(w, "every /v1 request needs Authorization: Bearer <API key>; lost the admin key printed at the first start? %s\n", offlineKeyCommand(d.opts))
	}
}

// offlineKeyCommand says how to make an admin key on the store o names,
// with its store flags: the command run without them opens ./data, a new
// empty store when mcpmon runs on another data dir. The Redis URL is not
// repeated (it may hold a password).
func offlineKeyCommand(o config.Options) string {
	if o.Store == config.StoreRedis {
		prefix := ""
		if o.RedisPrefix != config.Defaults().RedisPrefix {
			prefix = " --redis-prefix " + strconv.Quote(o.RedisPrefix)
		}
		return "run `mcpmon keys create --local --name NAME --scope admin --store redis --redis-url URL" + prefix + "` (the Redis URL mcpmon runs with)"
	}
	dir := o.DataDir
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	return "stop mcpmon and run `mcpmon keys create --local --name NAME --scope admin --data-dir " + strconv.Quote(dir) + "`"
}

// ManageKeys runs `mcpmon keys create|list|revoke` (pkg/auth/keys) on the
// store the daemon's store flags name, for operators without a working
// admin key. The command line is parsed in full before the store is opened.
func ManageKeys(ctx context.Context, args []string, env func(string) string, stdout, stderr io.Writer) error {
	o := config.Defaults()
	var initStore bool
	cmd, err := keys.Parse(args, func(fs *flag.FlagSet) error {
		o.Register(fs)
		fs.BoolVar(&initStore, "init", false, "keys create: make the embedded store when --data-dir holds none (a key before the first start)")
		return applyEnv(fs, env)
	})
	switch {
	case errors.Is(err, flag.ErrHelp):
		fmt.Fprint(stderr, keys.Usage)
		return nil
	case errors.Is(err, keys.ErrNoSubcommand):
		fmt.Fprint(stderr, keys.Usage)
		return usageError{err}
	case err != nil:
		return usageError{err}
	}
	if initStore && cmd.Sub != keys.Create {
		return usageError{fmt.Errorf("keys %s: --init is for keys create", cmd.Sub)}
	}
	st, where, err := openKeyStore(ctx, o, initStore)
	if err != nil {
		return err
	}
	defer st.Close()
	if err := keys.Run(ctx, auth.NewKeyring(st, auth.Options{}), cmd, time.Now(), stdout, stderr); err != nil {
		return err
	}
	if cmd.Sub != keys.List {
		// A key in a store no server reads works against nothing: say
		// which store this was, so a wrong --data-dir shows at once.
		fmt.Fprintf(stderr, "store: %s\n", where)
	}
	return nil
}

// applyEnv sets each flag registered on fs so far from its MCPMON_*
// variable, as config.Parse does for the server roles.
func applyEnv(fs *flag.FlagSet, env func(string) string) error {
	var envErr error
	fs.VisitAll(func(f *flag.Flag) {
		if v := env(config.EnvName(f.Name)); v != "" && envErr == nil {
			if err := f.Value.Set(v); err != nil {
				envErr = fmt.Errorf("%s: %v", config.EnvName(f.Name), err)
			}
		}
	})
	return envErr
}

// keyStore is the store `mcpmon keys` opens.
type keyStore interface {
	auth.Store
	Close() error
}

// openKeyStore opens the store's backend directly: API key records are not
// sealed (they hold a hash, never a key), so no secrets key is needed. It
// returns the store and where it is, for people (no credential). The
// embedded store must exist unless mayCreate (keys create --init: a key
// before the first start): a key written to a new store in the wrong
// directory would work against nothing.
func openKeyStore(ctx context.Context, o config.Options, mayCreate bool) (keyStore, string, error) {
	logger := slog.New(slog.DiscardHandler)
	switch o.Store {
	case config.StoreEmbedded:
		if o.DataDir == "" {
			return nil, "", usageError{errors.New("--data-dir is required with the embedded store")}
		}
		path := filepath.Join(o.DataDir, "store.db")
		if abs, err := filepath.Abs(path); err == nil {
			path = abs
		}
		if _, err := os.Stat(path); err != nil && !mayCreate {
			return nil, "", usageError{fmt.Errorf("no store at %s: pass the --data-dir of the mcpmon to manage (or its --store redis --redis-url URL); --init makes a new store, for a key before the first start", path)}
		}
		s, err := bolt.Open(path, bolt.Options{Clock: clock.Real{}, SweepInterval: -1, LockTimeout: time.Second, Logger: logger})
		if errors.Is(err, bbolt.ErrTimeout) {
			return nil, "", fmt.Errorf("the data dir %s is locked by a running mcpmon: `mcpmon keys --local` opens the store itself, so stop mcpmon first, or manage keys over its API with an admin key (POST/GET/DELETE /v1/keys)", o.DataDir)
		}
		if err != nil {
			return nil, "", err
		}
		return s, "the embedded store at " + path, nil
	case config.StoreRedis:
		if o.RedisURL == "" {
			return nil, "", usageError{errors.New("--store redis needs --redis-url (or MCPMON_REDIS_URL)")}
		}
		s, err := redisstore.New(ctx, o.RedisURL, redisstore.Options{Prefix: o.RedisPrefix, Logger: logger})
		if err != nil {
			return nil, "", fmt.Errorf("connect to Redis (check --redis-url and that Redis is up): %w", err)
		}
		where := "Redis"
		if u, err := url.Parse(o.RedisURL); err == nil {
			where += " at " + u.Host // never the URL whole: it may hold a password
		}
		if o.RedisPrefix != "" {
			where += fmt.Sprintf(", key prefix %q", o.RedisPrefix)
		}
		return s, where, nil
	}
	return nil, "", usageError{fmt.Errorf("--store %q: want embedded or redis", o.Store)}
}
