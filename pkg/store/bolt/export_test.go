package bolt

import "go.etcd.io/bbolt"

// DB exposes the file to the package's external tests, which write
// records no Store method would (corrupt ones, the layout of older files).
func (s *Store) DB() *bbolt.DB { return s.db }
