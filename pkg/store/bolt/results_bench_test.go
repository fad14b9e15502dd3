package bolt

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/mcpmon/mcpmon/pkg/clock"
	"github.com/mcpmon/mcpmon/pkg/msg"
	"github.com/mcpmon/mcpmon/pkg/store/storetest"
)

// BenchmarkAddWindowResult adds results to 100 endpoints' windows, 60 to
// each window (a one-second schedule in one-minute windows), without
// fsync, so what it measures is the CPU and allocation of one add as the
// window fills.
func BenchmarkAddWindowResult(b *testing.B) {
	s, err := Open(filepath.Join(b.TempDir(), "store.db"), Options{Clock: clock.NewFake(storetest.Start), SweepInterval: -1})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	s.db.NoSync = true
	const endpoints, perWindow = 100, 60
	ids := make([]string, endpoints)
	for i := range ids {
		ids[i] = fmt.Sprintf("ep-%03d", i)
	}
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		ep, slot := n%endpoints, n/endpoints
		w := storetest.Start.Add(time.Duration(slot/perWindow) * time.Minute)
		at := w.Add(time.Duration(slot%perWindow) * time.Second)
		r := msg.ProbeResult{EndpointID: ids[ep], ProbeRunID: msg.ProbeRunID(ids[ep], at), Region: "local", Slot: at, StartedAt: at, FinishedAt: at.Add(12 * time.Millisecond), Status: "up", Class: "ok", Transport: "streamable-http", ProtocolVersion: "2025-11-25", ServerName: "load", ServerVersion: "1.0.0", Phases: map[string]float64{"connect": 0.001, "initialize": 0.004, "tools_list": 0.003}}
		if _, err := s.AddWindowResult(b.Context(), w, r); err != nil {
			b.Fatal(err)
		}
		n++
	}
}
