package bolt

import (
	"path/filepath"
	"testing"
	"time"

	"go.etcd.io/bbolt"

	"github.com/mcpmon/mcpmon/pkg/clock"
	"github.com/mcpmon/mcpmon/pkg/jsonv"
	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/store/storetest"
)

// BenchmarkGetEndpoint reads one endpoint (headers, labels, rules, sinks)
// as the hot path does, three times a probe: as GetEndpoint does (no
// endpoint written since the last read: a Clone, no transaction), beside
// the two builds before it in one run — the decoder inside a read
// transaction (an unchanged record is a byte comparison and a Clone), and
// a decode of the record on every read.
func BenchmarkGetEndpoint(b *testing.B) {
	s, err := Open(filepath.Join(b.TempDir(), "store.db"), Options{Clock: clock.NewFake(storetest.Start), SweepInterval: -1})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	ep := model.Endpoint{
		ID: "ep-0001", Tenant: "team-a", Name: "payments", URL: "https://payments.example/mcp", Transport: "auto",
		Schedule: "@every 60s", Timeout: 10 * time.Second, Headers: map[string]string{"X-Team": "payments"},
		Labels: map[string]string{"team": "payments", "env": "prod"}, Rules: &model.Rules{OpenAfter: 2},
		Sinks: []byte(`{"webhook":{"url":"sealed:v1:abc"}}`), Regions: []string{"local"},
	}
	if _, err := s.CreateEndpoint(b.Context(), ep); err != nil {
		b.Fatal(err)
	}
	b.Run("decoder", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := s.GetEndpoint(b.Context(), ep.ID); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("decoder-in-a-transaction", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			err := s.view(b.Context(), func(tx *bbolt.Tx) error {
				_, _, err := s.endpointAt(tx.Bucket(bEndpoints), []byte(ep.ID), 0)
				return err
			})
			if err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("decode-each-read", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			err := s.view(b.Context(), func(tx *bbolt.Tx) error {
				var e model.Endpoint
				return jsonv.Unmarshal(tx.Bucket(bEndpoints).Get([]byte(ep.ID)), &e)
			})
			if err != nil {
				b.Fatal(err)
			}
		}
	})
}
