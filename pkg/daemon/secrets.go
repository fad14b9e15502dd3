package daemon

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"go.etcd.io/bbolt"

	"github.com/mcpmon/mcpmon/pkg/clock"
	"github.com/mcpmon/mcpmon/pkg/config"
	"github.com/mcpmon/mcpmon/pkg/seal"
	"github.com/mcpmon/mcpmon/pkg/store"
	"github.com/mcpmon/mcpmon/pkg/store/sealed"
	"github.com/mcpmon/mcpmon/pkg/subscribe"
)

// SecretsKeyFileName is the key file the embedded store generates in
// --data-dir when no key is configured.
const SecretsKeyFileName = "secrets.key"

// keySource says where the secrets keys come from: a file (path set) or
// MCPMON_SECRETS_KEY (path empty).
type keySource struct {
	path      string
	generated bool // the file was created just now
}

// loadKeys resolves the keys that seal endpoint secrets: MCPMON_SECRETS_KEY,
// else --secrets-key-file, else (embedded store only) <data-dir>/secrets.key,
// generated on first start. Replicas sharing Redis must share the key, so
// with Redis and neither set it refuses rather than invent one per replica.
func loadKeys(o config.Options, create bool) ([][]byte, keySource, error) {
	switch {
	case o.SecretsKey != "":
		keys, err := seal.ParseKeys(o.SecretsKey.Reveal())
		if err != nil {
			return nil, keySource{}, usageError{fmt.Errorf("%s: %w", config.EnvSecretsKey, err)}
		}
		return keys, keySource{}, nil
	case o.SecretsKeyFile != "":
		keys, err := seal.LoadKeyFile(o.SecretsKeyFile)
		if err != nil {
			return nil, keySource{}, usageError{fmt.Errorf("--secrets-key-file: %w", err)}
		}
		return keys, keySource{path: o.SecretsKeyFile}, nil
	case o.Store != config.StoreEmbedded:
		return nil, keySource{}, usageError{fmt.Errorf("--store %s needs --secrets-key-file or %s (base64 of 32 random bytes, e.g. `openssl rand -base64 32`): every replica must seal endpoint secrets with the same key", o.Store, config.EnvSecretsKey)}
	}
	path := filepath.Join(o.DataDir, SecretsKeyFileName)
	keys, err := seal.LoadKeyFile(path)
	if err == nil {
		return keys, keySource{path: path}, nil
	}
	if !errors.Is(err, fs.ErrNotExist) || !create {
		return nil, keySource{}, fmt.Errorf("secrets key: %w", err)
	}
	if err := os.MkdirAll(o.DataDir, 0o750); err != nil {
		return nil, keySource{}, fmt.Errorf("create data dir %s: %w", o.DataDir, err)
	}
	key, err := seal.CreateKeyFile(path)
	if errors.Is(err, fs.ErrExist) { // another process won the race: use its key
		keys, err = seal.LoadKeyFile(path)
		return keys, keySource{path: path}, err
	}
	if err != nil {
		return nil, keySource{}, fmt.Errorf("generate secrets key %s: %w", path, err)
	}
	return [][]byte{key}, keySource{path: path, generated: true}, nil
}

// keyring resolves the keys (loadKeys) before any backend is opened, so a
// missing key is the one line an operator sees, not a Redis wait.
func keyring(o config.Options, logger *slog.Logger) (*seal.Keyring, error) {
	keys, src, err := loadKeys(o, true)
	if err != nil {
		return nil, err
	}
	kr, err := seal.NewKeyring(keys...)
	if err != nil {
		return nil, usageError{fmt.Errorf("secrets key: %w", err)}
	}
	if src.generated {
		logger.Info("generated the key that seals endpoint secrets at rest; back it up with the data dir", "path", src.path, "key_id", kr.CurrentID())
	}
	return kr, nil
}

// sealStore wraps st so endpoint secrets are sealed at rest. With the
// embedded store (one process, no other replica to surprise with a version
// bump) it also re-seals at once every endpoint still in plaintext or under
// an older key; with Redis that is `mcpmon secrets rotate`'s job.
func sealStore(ctx context.Context, o config.Options, st store.Store, kr *seal.Keyring, logger *slog.Logger) (store.Store, error) {
	w := sealed.Wrap(st, kr)
	if o.Store == config.StoreEmbedded {
		n, err := w.Reseal(ctx)
		if err != nil {
			return nil, fmt.Errorf("seal endpoint secrets at rest: %w", err)
		}
		if n > 0 {
			logger.Info("sealed endpoint secrets under the current key", "endpoints", n, "key_id", kr.CurrentID())
		}
	}
	return w, nil
}

// RotateSecrets implements `mcpmon secrets rotate`: with a key file (the
// flag's, or the embedded store's generated one) it puts a new key first
// in the file, keeping the old ones after it so nothing becomes unreadable;
// with MCPMON_SECRETS_KEY (which it cannot write) the operator has put the
// new key first already. Either way it then re-seals every endpoint and
// every status page subscriber under the first key, and keeps the link
// keys the older keys derived in the store (subscribe.Reseal), so that
// afterwards no record, link or subscriber ID needs an older key. The key
// file is written before any record: a crash in between leaves records
// under keys the file still holds, and running rotate again finishes the
// job.
func RotateSecrets(ctx context.Context, args []string, env func(string) string, stdout, stderr io.Writer) error {
	o, err := config.Parse("mcpmon secrets rotate", args, env, stderr)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return usageError{err}
	}
	logger := NewLogger(o, stderr)
	keys, src, err := loadKeys(o, true)
	if err != nil {
		return err
	}
	// The link key the running replicas derive: it names the existing
	// subscribers if the stored link keys were never made.
	running, err := seal.NewKeyring(keys...)
	if err != nil {
		return usageError{fmt.Errorf("secrets key: %w", err)}
	}
	seed := running.Derive(subscribe.KeyLabel)[0]
	if src.path != "" && !src.generated {
		keys = append([][]byte{seal.NewKey()}, keys...)
		if err := seal.WriteKeyFile(src.path, keys); err != nil {
			return fmt.Errorf("write %s: %w", src.path, err)
		}
		fmt.Fprintf(stdout, "added key %s to %s (older keys kept after it for reading)\n", seal.KeyID(keys[0]), src.path)
	}
	kr, err := seal.NewKeyring(keys...)
	if err != nil {
		return usageError{fmt.Errorf("secrets key: %w", err)}
	}
	st, err := openBackend(ctx, o, clock.Real{}, logger)
	if err != nil {
		return err
	}
	n, err := sealed.Wrap(st, kr).Reseal(ctx)
	var subs subscribe.Resealed
	if err == nil {
		subs, err = subscribe.Reseal(ctx, st, kr, o.ReplicaID, seed)
		if err != nil {
			err = fmt.Errorf("status page subscribers (re-sealed %d): %w", subs.Subscribers, err)
		}
	}
	if cerr := st.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("re-sealed %d endpoints, then: %w", n, err)
	}
	fmt.Fprintf(stdout, "re-sealed %d endpoints and %d status page subscribers under key %s\n", n, subs.Subscribers, kr.CurrentID())
	if len(subs.Unopened) > 0 {
		// Already lost to a key removed before: nothing this rotation
		// keeps or removes changes that.
		fmt.Fprintf(stdout, "%d status page subscribers do not open with these keys and are sent nothing (%v): put back the key that sealed them and rotate again, or delete them (DELETE /v1/status-pages/{id}/subscribers/{subscriberId})\n", len(subs.Unopened), subs.Unopened)
	}
	if o.Store == config.StoreEmbedded {
		// bbolt reuses freed pages without clearing them: the values just
		// replaced (plaintext from before sealing, or ciphertext under the
		// old key) stay in store.db until it is rewritten.
		path := filepath.Join(o.DataDir, "store.db")
		if err := compactBolt(path); err != nil {
			return fmt.Errorf("compact %s (the re-sealed records are safe; old values may linger in its free pages): %w", path, err)
		}
		fmt.Fprintf(stdout, "compacted %s: replaced values no longer linger in free pages\n", path)
	}
	if len(kr.IDs()) > 1 {
		// True because everything sealed is now under the current key and
		// the links and subscriber IDs the older keys made are verified
		// with the link keys kept in the store.
		fmt.Fprintf(stdout, "older keys (%v) are no longer needed once every replica reads with key %s; remove them then\n", kr.IDs()[1:], kr.CurrentID())
	}
	return nil
}

// compactBolt rewrites the bbolt file at path into a fresh file holding only
// live data and renames it over path: a crash before the rename leaves the
// original untouched.
func compactBolt(path string) error {
	src, err := bbolt.Open(path, 0o600, &bbolt.Options{ReadOnly: true, Timeout: 2 * time.Second})
	if err != nil {
		return err
	}
	defer src.Close()
	tmp := path + ".compact"
	_ = os.Remove(tmp)
	dst, err := bbolt.Open(tmp, 0o600, &bbolt.Options{Timeout: 2 * time.Second})
	if err != nil {
		return err
	}
	if err := bbolt.Compact(dst, src, 64<<20); err != nil {
		dst.Close()
		os.Remove(tmp)
		return err
	}
	if err := dst.Close(); err != nil {
		os.Remove(tmp)
		return err
	}
	return os.Rename(tmp, path)
}
