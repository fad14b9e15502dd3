package bolt

import (
	"encoding/binary"
	"time"

	"go.etcd.io/bbolt"
)

// kCreated is the meta key of when the file was made.
var kCreated = []byte("created")

// markCreated returns when the file was made, recording now when it has no
// record yet: a new file, or one an older mcpmon made (whose creation
// then reads as when this version first opened it).
func markCreated(tx *bbolt.Tx, now time.Time) (time.Time, error) {
	b := tx.Bucket(bMeta)
	if v := b.Get(kCreated); len(v) == 8 {
		return time.Unix(int64(binary.BigEndian.Uint64(v)), 0), nil
	}
	v := binary.BigEndian.AppendUint64(nil, uint64(now.Unix()))
	return time.Unix(now.Unix(), 0), b.Put(kCreated, v)
}

// Created is when this store's file was made (to the second). A process
// started on an emptied data dir reports a later time than the one before
// it did: mcpmon_store_created_timestamp_seconds moving forward is how the
// operator learns the data was replaced while no process ran.
func (s *Store) Created() time.Time { return s.created }
