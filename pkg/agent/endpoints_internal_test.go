package agent

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/msg"
)

// The agent forgets an endpoint no command named for a day (the server
// deleted it or moved it elsewhere), with its latest result, and past its
// cap the least recently commanded: a server naming ever new endpoints
// (a compromised one grew an agent to 1.8 GB in 35 s) cannot grow it
// without bound.
func TestEndpointsAreForgotten(t *testing.T) {
	t0 := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	lat := newLatest()
	e := &endpoints{m: map[string]model.Endpoint{}, latest: lat, max: 3}
	has := func(id string) bool {
		_, err := e.GetEndpoint(context.Background(), id)
		return !errors.Is(err, model.ErrNotFound)
	}
	for i := range 3 {
		id := fmt.Sprintf("e%d", i)
		e.put(model.Endpoint{ID: id}, []string{"a-secret-value"}, t0.Add(time.Duration(i)*time.Second))
		_ = lat.PutLatestResult(context.Background(), msg.ProbeResult{EndpointID: id})
	}
	e.put(model.Endpoint{ID: "e1"}, nil, t0.Add(time.Hour)) // commanded again
	e.put(model.Endpoint{ID: "e3"}, nil, t0.Add(time.Hour+time.Second))
	if has("e0") || !has("e1") || !has("e2") || !has("e3") {
		t.Fatalf("past the cap of 3: e0 %v e1 %v e2 %v e3 %v, want only e0, the least recently commanded, forgotten", has("e0"), has("e1"), has("e2"), has("e3"))
	}
	if _, err := lat.LatestResult(context.Background(), "e0"); !errors.Is(err, model.ErrNotFound) {
		t.Errorf("e0's latest result kept: %v", err)
	}
	if e.secretValues("e0") != nil || e.secretValues("e2") == nil {
		t.Errorf("secret values: e0 %v e2 %v, want e0's gone and e2's kept", e.secretValues("e0"), e.secretValues("e2"))
	}
	// A day after e2's last command (e1 and e3 were commanded an hour
	// later), the next command forgets e2.
	e.put(model.Endpoint{ID: "e4"}, nil, t0.Add(24*time.Hour+2*time.Second))
	if has("e2") || !has("e1") || !has("e3") || !has("e4") {
		t.Fatalf("a day later: e1 %v e2 %v e3 %v e4 %v, want e2 forgotten", has("e1"), has("e2"), has("e3"), has("e4"))
	}
}
