package alerter

import (
	"slices"
	"testing"

	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/msg"
)

// The aggregator emits no_data for windows in which an endpoint was due but
// no result arrived (probers down). That says nothing about the endpoint: a
// run of no_data must neither open an incident nor resolve an open one.
func TestNoDataNeitherOpensNorResolves(t *testing.T) {
	e := newEnv(t)
	e.endpoint("ep1", nil, nil)
	a := e.alerter("a")
	noData := msg.StateNoData

	e.states("ep1", 0, noData, noData, noData, noData, noData)
	if errs := e.pump(a.Handle); errs != nil {
		t.Fatal(errs)
	}
	if n := len(e.incidents("ep1")); n != 0 || len(e.rcv.kinds()) != 0 {
		t.Fatalf("%d incidents, alerts %v after only no_data, want none", n, e.rcv.kinds())
	}
	// One down between no_data windows is still one down of the default 2.
	e.states("ep1", 5, down, noData, noData)
	e.pump(a.Handle)
	if n := len(e.incidents("ep1")); n != 0 {
		t.Fatalf("%d incidents after one down among no_data, want 0", n)
	}

	e.states("ep1", 8, down, down)
	e.pump(a.Handle)
	if got := e.rcv.kinds(); !slices.Equal(got, []string{"open"}) {
		t.Fatalf("alerts %v, want [open]", got)
	}
	e.states("ep1", 10, noData, noData, noData, noData, noData, noData)
	e.pump(a.Handle)
	if incs := e.incidents("ep1"); len(incs) != 1 || incs[0].State != model.IncidentOpen {
		t.Fatalf("incidents %+v after no_data windows, want the one incident still open", incs)
	}
	if got := e.rcv.kinds(); !slices.Equal(got, []string{"open"}) {
		t.Fatalf("alerts %v after no_data windows, want [open] only", got)
	}
	e.states("ep1", 16, up, up)
	e.pump(a.Handle)
	if got := e.rcv.kinds(); !slices.Equal(got, []string{"open", "resolve"}) {
		t.Fatalf("alerts %v, want [open resolve] once ups come back", got)
	}
}
