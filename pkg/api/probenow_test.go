package api_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mcpmon/mcpmon/pkg/api"
	"github.com/mcpmon/mcpmon/pkg/api/apispec"
	apiv1 "github.com/mcpmon/mcpmon/pkg/api/v1"
	"github.com/mcpmon/mcpmon/pkg/clock"
	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/msg"
	"github.com/mcpmon/mcpmon/pkg/store"
	"github.com/mcpmon/mcpmon/pkg/store/bolt"
)

// fakeProber stands in for the scheduler, queue and prober: each ProbeNow
// is recorded and, when it answers, the result of its slot is stored the
// way the prober stores it.
type fakeProber struct {
	st      store.Store
	answers bool
	err     error

	mu    sync.Mutex
	calls []msg.ProbeCommand
}

func (f *fakeProber) ProbeNow(ctx context.Context, ep model.Endpoint, slot time.Time) error {
	f.mu.Lock()
	f.calls = append(f.calls, msg.NewProbeCommand(ep.ID, slot))
	f.mu.Unlock()
	if f.err != nil {
		return f.err
	}
	if !f.answers {
		return nil
	}
	return f.st.PutLatestResult(ctx, msg.ProbeResult{
		Schema: msg.SchemaVersion, EndpointID: ep.ID, ProbeRunID: msg.ProbeRunID(ep.ID, slot), Slot: slot,
		StartedAt: slot, FinishedAt: slot.Add(20 * time.Millisecond), Status: msg.StatusUp, Class: "ok",
		Phases: map[string]float64{msg.PhaseTotal: 0.02},
	})
}

func (f *fakeProber) commands() []msg.ProbeCommand {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]msg.ProbeCommand(nil), f.calls...)
}

func withProber(f *fakeProber) func(*api.Options) {
	return func(o *api.Options) {
		f.st = o.Store.(store.Store)
		o.Probes = f
	}
}

// TestProbeNowAnswersWithTheResult: the probe is asked for the request's
// whole second, the answer is that slot's result in the API's form, and
// the request is in the audit log.
func TestProbeNowAnswersWithTheResult(t *testing.T) {
	f := &fakeProber{answers: true}
	h := newHarness(t, withProber(f))
	h.clock.Set(t0.Add(1500 * time.Millisecond))
	ep := h.create(`{"name":"docs","url":"https://mcp.example.com/mcp"}`)
	var res apiv1.ResultView
	h.mustJSON("POST", "/v1/endpoints/"+ep.ID+"/probe", "", http.StatusOK, &res)
	slot := t0.Add(time.Second)
	if got := f.commands(); len(got) != 1 || got[0] != msg.NewProbeCommand(ep.ID, slot) {
		t.Fatalf("commands %+v, want one for %s at %s", got, ep.ID, slot)
	}
	if res.ProbeRunID != msg.ProbeRunID(ep.ID, slot) || !res.Slot.Equal(slot) || res.Status != msg.StatusUp || res.Phases[msg.PhaseTotal] != "20ms" {
		t.Errorf("result %+v, want the slot's up result", res)
	}
	entries, err := h.store.ListAudit(t.Context(), store.AuditFilter{Tenant: model.DefaultTenant, Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) == 0 || entries[0].Action != api.ActionProbe || entries[0].ObjectKind != "endpoint" || entries[0].ObjectID != ep.ID {
		t.Errorf("newest audit entry %+v, want the probe of %s", entries, ep.ID)
	}
}

// TestProbeNowRefusals: a paused endpoint is a conflict, a missing one a
// 404, and a queue that refuses the command a 503; none of them waits.
func TestProbeNowRefusals(t *testing.T) {
	f := &fakeProber{answers: true}
	h := newHarness(t, withProber(f))
	paused := h.create(`{"name":"p","url":"https://mcp.example.com/mcp","paused":true}`)
	resp, b := h.do("POST", "/v1/endpoints/"+paused.ID+"/probe", "", "")
	var p apiv1.Problem
	if resp.StatusCode != http.StatusConflict || json.Unmarshal(b, &p) != nil || p.Type != apiv1.TypeEndpointPaused {
		t.Errorf("paused: %d %s, want 409 %s", resp.StatusCode, b, apiv1.TypeEndpointPaused)
	}
	if resp, b := h.do("POST", "/v1/endpoints/nosuch/probe", "", ""); resp.StatusCode != http.StatusNotFound {
		t.Errorf("missing: %d %s, want 404", resp.StatusCode, b)
	}
	if got := f.commands(); len(got) != 0 {
		t.Errorf("commands %+v for refused probes", got)
	}
	f.err = errors.New("queue down")
	live := h.create(`{"name":"l","url":"https://mcp.example.com/mcp"}`)
	if resp, b := h.do("POST", "/v1/endpoints/"+live.ID+"/probe", "", ""); resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("queue down: %d %s, want 503", resp.StatusCode, b)
	}
}

// TestProbeNowThatDoesNotArriveIsAccepted: a result that is not stored
// within the endpoint's timeout plus the margin answers 202 with the run
// ID and where to read it, after exactly that wait.
func TestProbeNowThatDoesNotArriveIsAccepted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clk := clock.NewFake(t0)
		st, err := bolt.Open(filepath.Join(t.TempDir(), "mcpmon.db"), bolt.Options{Clock: clk, SweepInterval: -1})
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		f := &fakeProber{st: st}
		h := apispec.Handler(t, api.New(api.Options{Store: st, Clock: clk, Probes: f, NewID: func() string { return "ep1" }}))
		serve := func(method, path, body string) *httptest.ResponseRecorder {
			req := httptest.NewRequestWithContext(t.Context(), method, path, strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			return rec
		}
		if rec := serve("POST", "/v1/endpoints", `{"name":"slow","url":"https://mcp.example.com/mcp","timeout":"3s"}`); rec.Code != http.StatusCreated {
			t.Fatalf("create: %d %s", rec.Code, rec.Body)
		}
		// An older result is there: it is not this probe's.
		if err := st.PutLatestResult(t.Context(), msg.ProbeResult{EndpointID: "ep1", ProbeRunID: "older", Slot: t0.Add(-time.Minute), Status: msg.StatusUp, Class: "ok"}); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		rec := serve("POST", "/v1/endpoints/ep1/probe", "")
		waited := time.Since(start)
		var acc apiv1.ProbeAccepted
		if rec.Code != http.StatusAccepted || json.Unmarshal(rec.Body.Bytes(), &acc) != nil {
			t.Fatalf("probe: %d %s, want 202", rec.Code, rec.Body)
		}
		if acc.ProbeRunID != msg.ProbeRunID("ep1", t0) || acc.Location != "/v1/endpoints/ep1" || rec.Header().Get("Location") != acc.Location {
			t.Errorf("accepted %+v (Location %q)", acc, rec.Header().Get("Location"))
		}
		if want := 3*time.Second + 5*time.Second; waited < want || waited > want+time.Second {
			t.Errorf("waited %s, want the timeout plus the margin, %s", waited, want)
		}
	})
}

// TestProbeNowTakesNoInput: a body naming anything is a 400 naming it.
func TestProbeNowTakesNoInput(t *testing.T) {
	f := &fakeProber{answers: true}
	h := newHarness(t, withProber(f))
	ep := h.create(`{"name":"docs","url":"https://mcp.example.com/mcp"}`)
	h.mustJSON("POST", "/v1/endpoints/"+ep.ID+"/probe", `{}`, http.StatusOK, nil)
	resp, b := h.do("POST", "/v1/endpoints/"+ep.ID+"/probe", "", `{"region":"eu"}`)
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), "region") {
		t.Errorf("a body with a member: %d %s, want 400 naming it", resp.StatusCode, b)
	}
}

// slowProber stores the slot's result after delay, like a probe of a slow
// target.
type slowProber struct {
	st    store.Store
	delay time.Duration
}

func (p slowProber) ProbeNow(_ context.Context, ep model.Endpoint, slot time.Time) error {
	time.AfterFunc(p.delay, func() {
		_ = p.st.PutLatestResult(context.Background(), msg.ProbeResult{EndpointID: ep.ID, ProbeRunID: msg.ProbeRunID(ep.ID, slot), Slot: slot,
			StartedAt: slot, FinishedAt: slot.Add(p.delay), Status: msg.StatusUp, Class: "ok"})
	})
	return nil
}

// TestProbeNowOutlastsTheWriteTimeout: a probe slower than the server's
// write timeout still gets its answer written.
func TestProbeNowOutlastsTheWriteTimeout(t *testing.T) {
	st, err := bolt.Open(filepath.Join(t.TempDir(), "mcpmon.db"), bolt.Options{SweepInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	srv := httptest.NewUnstartedServer(api.New(api.Options{Store: st, Probes: slowProber{st: st, delay: 600 * time.Millisecond}, NewID: func() string { return "ep1" }}))
	srv.Config.WriteTimeout = 200 * time.Millisecond
	srv.Start()
	defer srv.Close()
	post := func(path, body string) (*http.Response, error) {
		return srv.Client().Post(srv.URL+path, "application/json", strings.NewReader(body))
	}
	resp, err := post("/v1/endpoints", `{"name":"slow","url":"https://mcp.example.com/mcp","timeout":"2s"}`)
	if err != nil || resp.StatusCode != http.StatusCreated {
		t.Fatalf("create: %v %v", resp, err)
	}
	resp.Body.Close()
	resp, err = post("/v1/endpoints/ep1/probe", "")
	if err != nil {
		t.Fatalf("probe slower than the write timeout: %v", err)
	}
	defer resp.Body.Close()
	var res apiv1.ResultView
	if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&res) != nil || res.Status != msg.StatusUp {
		t.Errorf("probe: %d %+v, want 200 with the result", resp.StatusCode, res)
	}
}
