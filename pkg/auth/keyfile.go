package auth

import (
	"os"
	"path/filepath"
)

// KeyFile writes a key for an operator to read (--bootstrap-key-file): a
// temporary file beside the target, created mode 0600 (os.CreateTemp),
// renamed over the target only once the key is in it, so the target is
// never seen half written or readable by others.
//
// It is created before the key exists, so a path that cannot be written
// fails before a key is made that nobody could read.
type KeyFile struct {
	f      *os.File
	target string
	done   bool
}

// CreateKeyFile opens the temporary file for target.
func CreateKeyFile(target string) (*KeyFile, error) {
	f, err := os.CreateTemp(filepath.Dir(target), "."+filepath.Base(target)+".*")
	if err != nil {
		return nil, err
	}
	return &KeyFile{f: f, target: target}, nil
}

// Commit writes key and a newline, syncs, and renames the file over the
// target.
func (k *KeyFile) Commit(key string) error {
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

// Discard removes the temporary file unless Commit renamed it.
func (k *KeyFile) Discard() {
	if !k.done {
		_ = k.f.Close()
		_ = os.Remove(k.f.Name())
	}
}
