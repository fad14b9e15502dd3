package daemon

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mcpmon/mcpmon/aggregator"
	"github.com/mcpmon/mcpmon/pkg/api/apispec"
	"github.com/mcpmon/mcpmon/pkg/config"
	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/msg"
	"github.com/mcpmon/mcpmon/pkg/store"
	"github.com/mcpmon/mcpmon/pkg/store/bolt"
	"github.com/mcpmon/mcpmon/prober"
)

func openBolt(t *testing.T) *bolt.Store {
	t.Helper()
	st, err := bolt.Open(filepath.Join(t.TempDir(), "mcpmon.db"), bolt.Options{SweepInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st
}

func createEndpoint(t *testing.T, st store.Store, id string) {
	t.Helper()
	if _, err := st.CreateEndpoint(t.Context(), model.Endpoint{ID: id, Name: id, URL: "https://" + id + ".example/mcp", Schedule: "@every 1m"}); err != nil {
		t.Fatal(err)
	}
}

// seriesOf counts the series of the "endpoint" label value id in reg.
func seriesOf(t *testing.T, reg prometheus.Gatherer, id string) int {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "endpoint" && l.GetValue() == id {
					n++
				}
			}
		}
	}
	return n
}

func setVerdict(m *aggregator.Metrics, id string, state msg.State) {
	m.VerdictState.Set(id, state)
}

// TestPruneForgetsOnlyDeletedEndpoints: a round forgets the series of an
// endpoint the store no longer lists, in every tracked Metrics, and keeps
// those of registered endpoints.
func TestPruneForgetsOnlyDeletedEndpoints(t *testing.T) {
	st := openBolt(t)
	reg := prometheus.NewRegistry()
	var p metricsPruner
	am := forgetting(&p, aggregator.NewMetrics(reg, nil))
	forgetting(&p, prober.NewMetrics(reg))
	createEndpoint(t, st, "kept")
	createEndpoint(t, st, "gone")
	setVerdict(am, "kept", msg.StateUp)
	setVerdict(am, "gone", msg.StateDown)

	if got, err := p.round(t.Context(), st); err != nil || len(got) != 0 {
		t.Fatalf("round with every endpoint registered forgot %v (%v)", got, err)
	}
	if err := st.DeleteEndpoint(t.Context(), "gone"); err != nil {
		t.Fatal(err)
	}
	got, err := p.round(t.Context(), st)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, []string{"gone"}) {
		t.Fatalf("forgot %v, want [gone]", got)
	}
	if n := seriesOf(t, reg, "gone"); n != 0 {
		t.Fatalf("deleted endpoint still has %d series", n)
	}
	if n := seriesOf(t, reg, "kept"); n != len(msg.States()) {
		t.Fatalf("registered endpoint has %d series, want %d", n, len(msg.States()))
	}
}

// racingLister creates an endpoint and its first series right after the
// store answered the listing — the moment a list-then-gather pruner would
// wrongly forget it.
type racingLister struct {
	st    store.Store
	after func()
}

func (r racingLister) ListEndpoints(ctx context.Context) ([]model.Endpoint, error) {
	eps, err := r.st.ListEndpoints(ctx)
	r.after()
	return eps, err
}

// TestPruneKeepsEndpointCreatedDuringRound: an endpoint registered (and
// probed) while a round runs is not in that round's listing, but neither was
// it in the gather before it, so it keeps its series.
func TestPruneKeepsEndpointCreatedDuringRound(t *testing.T) {
	st := openBolt(t)
	reg := prometheus.NewRegistry()
	var p metricsPruner
	am := forgetting(&p, aggregator.NewMetrics(reg, nil))
	createEndpoint(t, st, "old")
	setVerdict(am, "old", msg.StateUp)

	lister := racingLister{st: st, after: func() {
		createEndpoint(t, st, "new")
		setVerdict(am, "new", msg.StateUp)
	}}
	got, err := p.round(t.Context(), lister)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 0 {
		t.Fatalf("forgot %v while they were registered", got)
	}
	if n := seriesOf(t, reg, "new"); n != len(msg.States()) {
		t.Fatalf("endpoint created during the round has %d series, want %d", n, len(msg.States()))
	}
}

// failingLister is a store that cannot be reached.
type failingLister struct{}

func (failingLister) ListEndpoints(context.Context) ([]model.Endpoint, error) {
	return nil, fmt.Errorf("list: %w", store.ErrUnavailable)
}

// TestPruneStoreDownForgetsNothing: without a listing nothing is known to be
// deleted, so nothing is forgotten.
func TestPruneStoreDownForgetsNothing(t *testing.T) {
	reg := prometheus.NewRegistry()
	var p metricsPruner
	am := forgetting(&p, aggregator.NewMetrics(reg, nil))
	setVerdict(am, "ep", msg.StateUp)
	if _, err := p.round(t.Context(), failingLister{}); !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("err = %v, want ErrUnavailable", err)
	}
	if n := seriesOf(t, reg, "ep"); n != len(msg.States()) {
		t.Fatalf("series after a failed round = %d, want %d", n, len(msg.States()))
	}
}

// TestPruneLoopEveryInterval: the loop prunes once per PruneInterval, not
// before (synctest: virtual time).
func TestPruneLoopEveryInterval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := openBolt(t)
		reg := prometheus.NewRegistry()
		d := &Daemon{st: st, reg: reg, log: testLogger(t)}
		am := forgetting(&d.prune, aggregator.NewMetrics(reg, nil))
		createEndpoint(t, st, "ep")
		setVerdict(am, "ep", msg.StateDown)
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- d.pruneMetrics(ctx) }()

		if err := st.DeleteEndpoint(t.Context(), "ep"); err != nil {
			t.Fatal(err)
		}
		time.Sleep(PruneInterval - time.Second)
		synctest.Wait()
		if n := seriesOf(t, reg, "ep"); n != len(msg.States()) {
			t.Fatalf("series pruned before the interval: %d left", n)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		if n := seriesOf(t, reg, "ep"); n != 0 {
			t.Fatalf("%d series left one interval after the delete", n)
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	})
}

// TestPruneLoopIdleWithoutEndpointMetrics: a role without per-endpoint
// metrics (api, alerter) does not poll the store.
func TestPruneLoopIdleWithoutEndpointMetrics(t *testing.T) {
	d := &Daemon{st: nil, reg: prometheus.NewRegistry(), log: testLogger(t)}
	if err := d.pruneMetrics(t.Context()); err != nil {
		t.Fatal(err)
	}
}

// TestPruneAfterDeleteEmbedded: in one `run` process on the embedded
// backends, a deleted endpoint's probe and verdict series leave /metrics
// once a prune round runs, while a registered endpoint's stay.
func TestPruneAfterDeleteEmbedded(t *testing.T) {
	srv := newMCPServer(t)
	o := fastOptions(t)
	o.Auth = config.AuthNone // loopback; API keys have their own tests (apikeys_test.go)
	d, err := Start(t.Context(), RoleAll, o, Deps{Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		d.Stop()
		if err := d.Wait(); err != nil {
			t.Errorf("mcpmon stopped with: %v", err)
		}
	}()

	ep := map[string]any{"url": srv.url(), "schedule": "@every 1s", "timeout": "1s"}
	ep["name"] = "gone"
	gone := register(t, d.Addr(), ep)
	ep["name"] = "kept"
	kept := register(t, d.Addr(), ep)
	upSeries := func(id string) string { return `mcpmon_probe_up{endpoint="` + id + `"` }
	stateSeries := func(id string) string { return `mcpmon_verdict_state{endpoint="` + id + `"` }
	eventually(t, 20*time.Second, "probe and verdict series of both endpoints", func() bool {
		body := get(t, d.Addr(), "/metrics")
		for _, id := range []string{gone, kept} {
			if !strings.Contains(body, upSeries(id)) || !strings.Contains(body, stateSeries(id)) {
				return false
			}
		}
		return true
	})

	req, _ := http.NewRequest(http.MethodDelete, "http://"+d.Addr()+"/v1/endpoints/"+gone, nil)
	resp, err := apispec.Client(t).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent && resp.StatusCode != http.StatusOK {
		t.Fatalf("DELETE: %d", resp.StatusCode)
	}

	forgot, err := d.PruneMetrics(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(forgot, []string{gone}) {
		t.Fatalf("first prune after the delete forgot %v, want [%s]", forgot, gone)
	}
	// A probe or verdict already in flight at the DELETE may write its
	// series once more after that round; the next round takes them, so
	// series end within rounds, not with a restart.
	eventually(t, 20*time.Second, "the deleted endpoint's series to leave /metrics", func() bool {
		if _, err := d.PruneMetrics(t.Context()); err != nil {
			t.Fatal(err)
		}
		body := get(t, d.Addr(), "/metrics")
		return !strings.Contains(body, `endpoint="`+gone+`"`)
	})
	body := get(t, d.Addr(), "/metrics")
	if !strings.Contains(body, upSeries(kept)) || !strings.Contains(body, stateSeries(kept)) {
		t.Fatalf("prune removed the registered endpoint's series:\n%s", body)
	}

	resp, err = apispec.Client(t).Get("http://" + d.Addr() + "/v1/endpoints/" + gone)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("GET deleted endpoint: %d, want 404", resp.StatusCode)
	}
}

// TestDeleteEndpointRemovesProberCatalog: the catalog kind the stores clean
// up on delete is the one the prober writes (store.KindCatalog).
func TestDeleteEndpointRemovesProberCatalog(t *testing.T) {
	st := openBolt(t)
	createEndpoint(t, st, "ep")
	if err := st.PutObject(t.Context(), store.KindCatalog, "ep", []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	if err := st.DeleteEndpoint(t.Context(), "ep"); err != nil {
		t.Fatal(err)
	}
	if _, err := st.GetObject(t.Context(), store.KindCatalog, "ep"); !errors.Is(err, model.ErrNotFound) {
		t.Fatalf("tool catalog after delete: %v, want ErrNotFound", err)
	}
}

// TestPruneDistributedDelete: on SQS and Redis with one process per role,
// the DELETE is served by the API process while the series live in the
// prober and aggregator processes; each of those forgets them from the
// shared store on its own prune round.
func TestPruneDistributedDelete(t *testing.T) {
	srv := newMCPServer(t)
	o := fastOptions(t)
	o.Auth = config.AuthNone // loopback; API keys have their own tests (apikeys_test.go)
	setupSQS(t, &o)
	setupRedis(t, &o)

	start := func(role Role) *Daemon {
		t.Helper()
		d, err := Start(t.Context(), role, o, Deps{Logger: testLogger(t)})
		if err != nil {
			t.Fatalf("start %s: %v", role, err)
		}
		t.Cleanup(func() {
			d.Stop()
			if err := d.Wait(); err != nil {
				t.Errorf("%s stopped with: %v", role, err)
			}
		})
		return d
	}
	apiD, probeD, aggD := start(RoleAPI), start(RoleProber), start(RoleAggregator)

	gone := register(t, apiD.Addr(), map[string]any{"name": "gone", "url": srv.url(), "schedule": "@every 1s", "timeout": "1s"})
	eventually(t, 30*time.Second, "probe series in the prober and verdict series in the aggregator", func() bool {
		return strings.Contains(get(t, probeD.Addr(), "/metrics"), `mcpmon_probe_up{endpoint="`+gone+`"`) &&
			strings.Contains(get(t, aggD.Addr(), "/metrics"), `mcpmon_verdict_state{endpoint="`+gone+`"`)
	})
	if forgot, err := apiD.PruneMetrics(t.Context()); err != nil || len(forgot) != 0 {
		t.Fatalf("API process pruned %v (%v); it holds no per-endpoint series", forgot, err)
	}

	req, _ := http.NewRequest(http.MethodDelete, "http://"+apiD.Addr()+"/v1/endpoints/"+gone, nil)
	resp, err := apispec.Client(t).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent && resp.StatusCode != http.StatusOK {
		t.Fatalf("DELETE: %d", resp.StatusCode)
	}

	for _, d := range []*Daemon{probeD, aggD} {
		forgot, err := d.PruneMetrics(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(forgot, []string{gone}) {
			t.Fatalf("%s: first prune after the delete forgot %v, want [%s]", d.role, forgot, gone)
		}
		eventually(t, 20*time.Second, string(d.role)+" to drop the deleted endpoint's series", func() bool {
			if _, err := d.PruneMetrics(t.Context()); err != nil {
				t.Fatal(err)
			}
			return !strings.Contains(get(t, d.Addr(), "/metrics"), `endpoint="`+gone+`"`)
		})
	}
	resp, err = apispec.Client(t).Get("http://" + apiD.Addr() + "/v1/endpoints/" + gone)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("GET deleted endpoint: %d, want 404", resp.StatusCode)
	}
}
