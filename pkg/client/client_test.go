package client_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpmon/mcpmon/pkg/api"
	"github.com/mcpmon/mcpmon/pkg/client"
	"github.com/mcpmon/mcpmon/pkg/store/bolt"
)

// newAPI serves the real /v1 API on a bolt store on 127.0.0.1 and counts
// the requests it gets.
func newAPI(t *testing.T, tweak func(*api.Options)) (*client.Client, *atomic.Int64) {
	t.Helper()
	st, err := bolt.Open(filepath.Join(t.TempDir(), "mcpmon.db"), bolt.Options{SweepInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	n := 0
	opts := api.Options{Store: st, NewID: func() string { n++; return fmt.Sprintf("id%02d", n) }}
	if tweak != nil {
		tweak(&opts)
	}
	h := api.New(opts)
	var requests atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	c, err := client.New(srv.URL, "")
	if err != nil {
		t.Fatal(err)
	}
	return c, &requests
}

func TestListWalksEveryPageAndStopsWhenTheLoopDoes(t *testing.T) {
	c, requests := newAPI(t, nil)
	for i := range 5 {
		if _, err := c.CreateEndpoint(t.Context(), api.EndpointInput{Name: fmt.Sprintf("e%d", i), URL: "https://mcp.example.com/mcp",
			Labels: map[string]string{"odd": fmt.Sprint(i%2 == 1)}}); err != nil {
			t.Fatal(err)
		}
	}
	requests.Store(0)
	var names []string
	for e, err := range c.Endpoints(t.Context(), client.EndpointFilter{Limit: 2}) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, e.Name)
	}
	if strings.Join(names, ",") != "e0,e1,e2,e3,e4" || requests.Load() != 3 {
		t.Fatalf("walked %v in %d requests, want 5 endpoints in 3 pages of 2", names, requests.Load())
	}

	requests.Store(0)
	seen := 0
	for _, err := range c.Endpoints(t.Context(), client.EndpointFilter{Limit: 2}) {
		if err != nil {
			t.Fatal(err)
		}
		if seen++; seen == 2 {
			break
		}
	}
	if requests.Load() != 1 {
		t.Fatalf("breaking after the first page made %d requests, want 1", requests.Load())
	}

	odd, err := c.ListEndpoints(t.Context(), "odd=true")
	if err != nil || len(odd) != 2 {
		t.Fatalf("ListEndpoints(odd=true) = %d endpoints, %v; want 2", len(odd), err)
	}
}

func TestProblemsBecomeTypedErrors(t *testing.T) {
	c, _ := newAPI(t, nil)
	ctx := t.Context()

	_, err := c.CreateEndpoint(ctx, api.EndpointInput{Name: "x", URL: "ftp://example.com", Timeout: "forever"})
	var e *client.Error
	if !client.IsInvalid(err) || !asError(err, &e) || len(e.Errors) != 2 || e.Errors[0].Pointer != "#/url" {
		t.Fatalf("invalid create: %v, want a 400 naming #/url and #/timeout", err)
	}
	if _, err := c.GetEndpoint(ctx, "nope"); !client.IsNotFound(err) {
		t.Fatalf("get of a missing endpoint: %v, want not found", err)
	}
	if err := c.DeleteEndpoint(ctx, "nope"); !client.IsNotFound(err) {
		t.Fatalf("delete of a missing endpoint: %v, want not found", err)
	}

	v, err := c.CreateEndpoint(ctx, api.EndpointInput{Name: "x", URL: "https://mcp.example.com/mcp", Headers: map[string]string{"Authorization": "Bearer s"}})
	if err != nil {
		t.Fatal(err)
	}
	p, err := c.PauseEndpoint(ctx, v.ID)
	if err != nil || !p.Paused || p.Headers["Authorization"] != api.Redacted {
		t.Fatalf("pause = %+v, %v", p, err)
	}
	if _, err := c.PatchEndpointIfMatch(ctx, v.ID, map[string]any{"timeout": "5s"}, v.Version); !client.IsConflict(err) {
		t.Fatalf("patch on a stale version: %v, want a conflict", err)
	}
	r, err := c.PatchEndpoint(ctx, v.ID, map[string]any{"paused": false, "labels": map[string]any{"team": "a"}})
	if err != nil || r.Paused || r.Labels["team"] != "a" {
		t.Fatalf("merge patch = %+v, %v", r, err)
	}
	if err := c.DeleteEndpoint(ctx, v.ID); err != nil {
		t.Fatal(err)
	}
	var actions []string
	for e, err := range c.Audit(ctx, client.AuditFilter{}) {
		if err != nil {
			t.Fatal(err)
		}
		actions = append(actions, e.Action)
	}
	if len(actions) != 4 {
		t.Fatalf("audit log = %v, want the create, two patches and the delete", actions)
	}
}

func TestRateLimitedRequestIsRetriedAfterRetryAfter(t *testing.T) {
	c, requests := newAPI(t, func(o *api.Options) { o.Quotas = api.Quotas{RatePerSecond: 1, Burst: 1} })
	start := time.Now()
	for range 2 {
		if _, err := c.ListEndpoints(t.Context(), ""); err != nil {
			t.Fatalf("a rate-limited list: %v, want it retried", err)
		}
	}
	if requests.Load() < 3 || time.Since(start) < 500*time.Millisecond {
		t.Fatalf("%d requests in %s: want the second list answered 429 then retried after Retry-After", requests.Load(), time.Since(start))
	}
}

func asError(err error, target **client.Error) bool {
	e, ok := err.(*client.Error)
	*target = e
	return ok
}

// endpointWriter is what the registry importer (another package) asks of
// the client: the exact signatures it consumes.
type endpointWriter interface {
	ListEndpoints(ctx context.Context, selector string) ([]api.EndpointView, error)
	CreateEndpoint(ctx context.Context, in api.EndpointInput) (api.EndpointView, error)
	PatchEndpoint(ctx context.Context, id string, patch any) (api.EndpointView, error)
	DeleteEndpoint(ctx context.Context, id string) error
}

var _ endpointWriter = (*client.Client)(nil)
