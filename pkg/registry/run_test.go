package registry

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	apiv1 "github.com/mcpmon/mcpmon/pkg/api/v1"
)

// listerFunc is a Lister from a function.
type listerFunc func(ctx context.Context, opts ListOptions) ([]ServerResponse, error)

func (f listerFunc) List(ctx context.Context, opts ListOptions) ([]ServerResponse, error) {
	return f(ctx, opts)
}
func (listerFunc) BaseURL() string { return "https://registry.example.com" }

// memEndpoints is an in-memory Endpoints that applies merge patches to the
// fields the importer patches.
type memEndpoints struct {
	mu  sync.Mutex
	eps map[string]apiv1.EndpointView
	n   int
}

func (m *memEndpoints) ListEndpoints(_ context.Context, selector string) ([]apiv1.EndpointView, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []apiv1.EndpointView
	for _, e := range m.eps {
		if selector == LabelSource+"="+e.Labels[LabelSource] {
			out = append(out, e)
		}
	}
	return out, nil
}

func (m *memEndpoints) CreateEndpoint(_ context.Context, in apiv1.EndpointInput) (apiv1.EndpointView, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.n++
	v := apiv1.EndpointView{ID: fmt.Sprintf("m%d", m.n), Name: in.Name, URL: in.URL, Transport: in.Transport, Labels: in.Labels}
	m.eps[v.ID] = v
	return v, nil
}

func (m *memEndpoints) PatchEndpoint(_ context.Context, id string, patch any) (apiv1.EndpointView, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	v, ok := m.eps[id]
	if !ok {
		return v, errors.New("not found")
	}
	p := patch.(map[string]any)
	if s, ok := p["url"].(string); ok {
		v.URL = s
	}
	if ls, ok := p["labels"].(map[string]any); ok {
		for k, val := range ls {
			if s, ok := val.(string); ok {
				v.Labels[k] = s
			} else {
				delete(v.Labels, k)
			}
		}
	}
	m.eps[id] = v
	return v, nil
}

func (m *memEndpoints) DeleteEndpoint(_ context.Context, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.eps, id)
	return nil
}

func TestRunSyncsFromTheHighWaterAndHealsWithFullImports(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var (
			mu    sync.Mutex
			calls []time.Time // the updated_since of each listing
		)
		start := time.Now()
		lister := listerFunc(func(_ context.Context, opts ListOptions) ([]ServerResponse, error) {
			mu.Lock()
			defer mu.Unlock()
			calls = append(calls, opts.UpdatedSince)
			if !opts.UpdatedSince.IsZero() {
				return nil, nil // nothing changed
			}
			return []ServerResponse{entry("com.example/a", "1", "active", true, start, "streamable-http https://a.example.com/mcp")}, nil
		})
		eps := &memEndpoints{eps: map[string]apiv1.EndpointView{}}
		im := &Importer{Registry: lister, Endpoints: eps}
		ctx, cancel := context.WithCancel(t.Context())
		reports := make(chan Report, 100)
		done := make(chan error)
		go func() {
			done <- im.Run(ctx, RunOptions{Interval: time.Minute, FullEvery: 10 * time.Minute,
				OnReport: func(r Report, err error) {
					if err != nil {
						t.Errorf("import: %v", err)
					}
					reports <- r
				}})
		}()
		synctest.Wait()
		if r := <-reports; r.Mode != "full" || r.Created != 1 {
			t.Fatalf("first run: %+v", r)
		}
		// Someone deletes the imported endpoint by hand; syncs do not see
		// it (the registry did not change), the next full import restores it.
		eps.mu.Lock()
		clear(eps.eps)
		eps.mu.Unlock()
		for i := 1; i <= 10; i++ {
			time.Sleep(time.Minute)
			synctest.Wait()
			r := <-reports
			switch {
			case i < 10 && (r.Mode != "sync" || r.Created != 0):
				t.Fatalf("run %d: %+v, want an empty sync", i, r)
			case i == 10 && (r.Mode != "full" || r.Created != 1):
				t.Fatalf("run %d: %+v, want a full import that recreates the endpoint", i, r)
			}
		}
		mu.Lock()
		if !calls[1].Equal(start) {
			t.Errorf("second listing since %v, want the first import's high water %v", calls[1], start)
		}
		mu.Unlock()
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("Run returned %v", err)
		}
	})
}

// cancellingEndpoints ends the import's context after its first create.
type cancellingEndpoints struct {
	*memEndpoints
	cancel context.CancelFunc
}

func (c cancellingEndpoints) CreateEndpoint(ctx context.Context, in apiv1.EndpointInput) (apiv1.EndpointView, error) {
	defer c.cancel()
	return c.memEndpoints.CreateEndpoint(ctx, in)
}

func TestImportCutShortReportsWhatWasNotDone(t *testing.T) {
	lister := listerFunc(func(context.Context, ListOptions) ([]ServerResponse, error) {
		return []ServerResponse{entry("com.example/a", "1", "active", true, t0,
			"streamable-http https://a.example.com/mcp", "sse https://a.example.com/sse", "streamable-http https://a2.example.com/mcp")}, nil
	})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	mem := &memEndpoints{eps: map[string]apiv1.EndpointView{}}
	im := &Importer{Registry: lister, Endpoints: cancellingEndpoints{mem, cancel}}
	rep, err := im.Import(ctx, Options{})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
	if rep.Created != 1 || rep.Failed != 2 || len(mem.eps) != 1 || !rep.HighWater.IsZero() {
		t.Errorf("report created %d failed %d (mcpmon has %d), high water %v; want 1 done, 2 not attempted, no mark",
			rep.Created, rep.Failed, len(mem.eps), rep.HighWater)
	}
}

// refusedError is mcpmon refusing a request as invalid, as
// pkg/client.Error with status 400 says.
type refusedError struct{}

func (refusedError) Error() string { return "POST /v1/endpoints: 400 target refused" }
func (refusedError) Refused() bool { return true }

// refusingEndpoints refuses to create endpoints on 10.0.0.1, as mcpmon's
// SSRF guard does.
type refusingEndpoints struct{ *memEndpoints }

func (r refusingEndpoints) CreateEndpoint(ctx context.Context, in apiv1.EndpointInput) (apiv1.EndpointView, error) {
	if strings.Contains(in.URL, "10.0.0.1") {
		return apiv1.EndpointView{}, refusedError{}
	}
	return r.memEndpoints.CreateEndpoint(ctx, in)
}

// TestRefusedEntryDoesNotPinTheImport: one registry entry mcpmon refuses
// (anyone may publish a server whose remote is on a private address) is
// reported failed and refused, but syncs still move on from the high
// water, and full imports come every FullEvery, not at every run: the
// refusal used to keep the mark, so every run after it was a full listing
// of the registry, retrying the refused create, for ever.
func TestRefusedEntryDoesNotPinTheImport(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var (
			mu    sync.Mutex
			calls []time.Time
		)
		start := time.Now()
		lister := listerFunc(func(_ context.Context, opts ListOptions) ([]ServerResponse, error) {
			mu.Lock()
			defer mu.Unlock()
			calls = append(calls, opts.UpdatedSince)
			if !opts.UpdatedSince.IsZero() {
				return nil, nil
			}
			return []ServerResponse{
				entry("com.example/a", "1", "active", true, start, "streamable-http https://a.example.com/mcp"),
				entry("com.example/poison", "1", "active", true, start, "streamable-http https://10.0.0.1/mcp"),
			}, nil
		})
		im := &Importer{Registry: lister, Endpoints: refusingEndpoints{&memEndpoints{eps: map[string]apiv1.EndpointView{}}}}
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		reports := make(chan Report, 100)
		go func() {
			_ = im.Run(ctx, RunOptions{Interval: time.Minute, FullEvery: 10 * time.Minute,
				OnReport: func(r Report, err error) {
					if err != nil {
						t.Errorf("import: %v", err)
					}
					reports <- r
				}})
		}()
		synctest.Wait()
		if r := <-reports; r.Mode != "full" || r.Created != 1 || r.Failed != 1 || r.Refused != 1 || !r.HighWater.Equal(start) {
			t.Fatalf("first run: %+v; want full, 1 created, 1 failed and refused, high water %v", r, start)
		}
		for i := 1; i <= 3; i++ {
			time.Sleep(time.Minute)
			synctest.Wait()
			if r := <-reports; r.Mode != "sync" {
				t.Fatalf("run %d: %s import, want a sync", i, r.Mode)
			}
		}
		mu.Lock()
		defer mu.Unlock()
		if !calls[1].Equal(start) {
			t.Errorf("second listing since %v, want the high water %v", calls[1], start)
		}
	})
}
