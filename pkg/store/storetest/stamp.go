package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/mcpmon/mcpmon/pkg/clock"
	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/msg"
	"github.com/mcpmon/mcpmon/pkg/store"
)

// stamper is the optional capability the scheduler's resync and the
// aggregator's no_data listing use to skip a full listing.
type stamper interface {
	EndpointsStamp(ctx context.Context) (uint64, error)
}

// testEndpointsStamp: the stamp moves on every endpoint create, update and
// delete — and on nothing else an idle fleet does (results, verdicts,
// objects), which is what lets readers skip their listings.
func testEndpointsStamp(t *testing.T, st store.Store, clk *clock.Fake) {
	sp, ok := st.(stamper)
	if !ok {
		t.Skip("the store keeps no endpoints stamp")
	}
	ctx := t.Context()
	stamp := func() uint64 {
		t.Helper()
		n, err := sp.EndpointsStamp(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	moved := func(what string, before uint64) uint64 {
		t.Helper()
		after := stamp()
		if after == before {
			t.Fatalf("%s left the endpoints stamp at %d", what, before)
		}
		return after
	}
	s0 := stamp()
	in := model.Endpoint{ID: "stamp", Name: "s", URL: "https://s.example/mcp", Transport: "auto", Schedule: "@every 30s", Timeout: 10 * time.Second}
	e, err := st.CreateEndpoint(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	s1 := moved("a create", s0)
	if _, err := st.CreateEndpoint(ctx, in); err == nil {
		t.Fatal("a second create of one ID succeeded")
	}
	if got := stamp(); got != s1 {
		t.Fatalf("a refused create moved the stamp %d → %d", s1, got)
	}
	e.Name = "renamed"
	if e, err = st.UpdateEndpoint(ctx, e); err != nil {
		t.Fatal(err)
	}
	s2 := moved("an update", s1)
	slot := clk.Now().Add(2 * time.Second)
	if err := st.PutLatestResult(ctx, msg.ProbeResult{EndpointID: e.ID, ProbeRunID: "r1", Slot: slot, Status: msg.StatusUp}); err != nil {
		t.Fatal(err)
	}
	if err := st.PutObject(ctx, store.KindCatalog, e.ID, []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	if got := stamp(); got != s2 {
		t.Fatalf("a probe result and a catalog moved the stamp %d → %d: an idle fleet would relist every time", s2, got)
	}
	if err := st.DeleteEndpoint(ctx, e.ID); err != nil {
		t.Fatal(err)
	}
	moved("a delete", s2)
}
