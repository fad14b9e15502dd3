package embedded

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	bolt "go.etcd.io/bbolt"
)

// adoptFile moves the queue buckets of the broker file at path (left by a
// broker that had its own file) into db and removes the file. The copy
// replaces db's queue buckets in one transaction, so a crash before the
// file is removed only makes the next start copy the same state again;
// the directory is synced after the removal, so the file cannot come back
// after the broker has moved on from the copy.
func adoptFile(db *bolt.DB, path string, logger *slog.Logger) error {
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	src, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: 5 * time.Second, ReadOnly: true})
	if err != nil {
		return err
	}
	queues := 0
	err = src.View(func(stx *bolt.Tx) error {
		return db.Update(func(dtx *bolt.Tx) error {
			return stx.ForEach(func(name []byte, sb *bolt.Bucket) error {
				if !bytes.HasPrefix(name, []byte("q/")) {
					return nil
				}
				if dtx.Bucket(name) != nil {
					if err := dtx.DeleteBucket(name); err != nil {
						return err
					}
				}
				qb, err := dtx.CreateBucket(name)
				if err != nil {
					return err
				}
				queues++
				return copyBucket(qb, sb)
			})
		})
	})
	if cerr := src.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if err := os.Remove(path); err != nil {
		return err
	}
	if err := syncDir(filepath.Dir(path)); err != nil {
		return err
	}
	logger.Info("queue file moved into the shared file", "from", path, "to", db.Path(), "queues", queues)
	return nil
}

// copyBucket copies src's keys and nested buckets into the empty dst.
func copyBucket(dst, src *bolt.Bucket) error {
	return src.ForEach(func(k, v []byte) error {
		if v != nil {
			return dst.Put(k, v)
		}
		sub, err := dst.CreateBucket(k)
		if err != nil {
			return err
		}
		return copyBucket(sub, src.Bucket(k))
	})
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	return nil
}
