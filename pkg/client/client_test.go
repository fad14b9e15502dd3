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
	"github.com/mcpmon/mcpmon/pkg/api/apispec"
	apiv1 "github.com/mcpmon/mcpmon/pkg/api/v1"
	"github.com/mcpmon/mcpmon/pkg/client"
	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/msg"
	"github.com/mcpmon/mcpmon/pkg/store"
	"github.com/mcpmon/mcpmon/pkg/store/bolt"
)

// newAPI serves the real /v1 API on a bolt store on 127.0.0.1 and counts
// the requests it gets. Every exchange is held to openapi.yaml (apispec).
func newAPI(t *testing.T, tweak func(*api.Options)) (*client.Client, *atomic.Int64) {
	t.Helper()
	c, requests, _ := newAPIOn(t, tweak)
	return c, requests
}

// newAPIOn is newAPI that also returns the store, for a test to write
// what only the pipeline writes (verdicts, events, catalogs).
func newAPIOn(t *testing.T, tweak func(*api.Options)) (*client.Client, *atomic.Int64, *bolt.Store) {
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
	h := apispec.Handler(t, api.New(opts))
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
	return c, &requests, st
}

func TestListWalksEveryPageAndStopsWhenTheLoopDoes(t *testing.T) {
	c, requests := newAPI(t, nil)
	for i := range 5 {
		if _, err := c.CreateEndpoint(t.Context(), apiv1.EndpointInput{Name: fmt.Sprintf("e%d", i), URL: "https://mcp.example.com/mcp",
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

// TestEndpointHistoryIsReadPageByPage: an endpoint's verdicts and change
// events are walked page by page, newest first, the event kind filtered by
// the server; its catalog and uptime come back typed.
func TestEndpointHistoryIsReadPageByPage(t *testing.T) {
	c, requests, st := newAPIOn(t, nil)
	ctx := t.Context()
	ep, err := c.CreateEndpoint(ctx, apiv1.EndpointInput{Name: "h", URL: "https://mcp.example.com/mcp"})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now().UTC().Truncate(time.Minute).Add(-time.Hour) // within the retention
	states := []msg.State{msg.StateUp, msg.StateDown, msg.StateDown, msg.StateDegraded, msg.StateUp}
	for i, s := range states {
		v := msg.Verdict{Schema: 1, EndpointID: ep.ID, Window: t0.Add(time.Duration(i) * time.Minute), WindowSecs: 60, State: s, Results: 1}
		if _, err := st.RecordVerdict(ctx, v); err != nil {
			t.Fatal(err)
		}
	}
	requests.Store(0)
	var got []msg.State
	for v, err := range c.Verdicts(ctx, ep.ID, client.VerdictFilter{Limit: 2}) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, v.State)
	}
	if fmt.Sprint(got) != "[up degraded down down up]" || requests.Load() != 3 {
		t.Fatalf("walked %v in %d requests, want 5 verdicts newest first in 3 pages of 2", got, requests.Load())
	}

	for i, kind := range []string{model.EventVersion, model.EventCatalogBreaking, model.EventVersion} {
		if _, err := st.AppendEvents(ctx, model.ChangeEvent{EndpointID: ep.ID, Kind: kind, Fingerprint: fmt.Sprintf("f%d", i),
			ObservedAt: t0.Add(time.Duration(i) * time.Minute), Message: fmt.Sprintf("change %d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	evs, err := c.ListEvents(ctx, ep.ID, client.EventFilter{Kind: model.EventVersion, Limit: 1})
	if err != nil || len(evs) != 2 || evs[0].Message != "change 2" || evs[1].Message != "change 0" {
		t.Fatalf("version events = %+v, %v; want changes 2 and 0, newest first", evs, err)
	}
	if _, err := c.ListEvents(ctx, ep.ID, client.EventFilter{Kind: "weather"}); !client.IsInvalid(err) {
		t.Fatalf("an unknown kind: %v, want a 400", err)
	}

	if err := st.PutObject(ctx, store.KindCatalog, ep.ID, []byte(`{"fingerprint":"abc","tools":[{"name":"echo"}]}`)); err != nil {
		t.Fatal(err)
	}
	cat, err := c.Catalog(ctx, ep.ID)
	if err != nil || cat.Fingerprint != "abc" || len(cat.Tools) != 1 {
		t.Fatalf("catalog = %+v, %v", cat, err)
	}
	up, err := c.UptimeBetween(ctx, ep.ID, t0, t0.Add(time.Hour))
	if err != nil || up.Range != "custom" || up.EndpointID != ep.ID {
		t.Fatalf("uptime = %+v, %v", up, err)
	}
	if _, err := c.Uptime(ctx, ep.ID, "7d"); err != nil {
		t.Fatal(err)
	}
	for _, err := range c.Verdicts(ctx, "nope", client.VerdictFilter{}) {
		if !client.IsNotFound(err) {
			t.Fatalf("verdicts of a missing endpoint: %v, want not found", err)
		}
	}
}

func TestProblemsBecomeTypedErrors(t *testing.T) {
	c, _ := newAPI(t, nil)
	ctx := t.Context()

	_, err := c.CreateEndpoint(ctx, apiv1.EndpointInput{Name: "x", URL: "ftp://example.com", Timeout: "forever"})
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

	v, err := c.CreateEndpoint(ctx, apiv1.EndpointInput{Name: "x", URL: "https://mcp.example.com/mcp", Headers: map[string]string{"Authorization": "Bearer s"}})
	if err != nil {
		t.Fatal(err)
	}
	p, err := c.PauseEndpoint(ctx, v.ID)
	if err != nil || !p.Paused || p.Headers["Authorization"] != apiv1.Redacted {
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
	ListEndpoints(ctx context.Context, selector string) ([]apiv1.EndpointView, error)
	CreateEndpoint(ctx context.Context, in apiv1.EndpointInput) (apiv1.EndpointView, error)
	PatchEndpoint(ctx context.Context, id string, patch any) (apiv1.EndpointView, error)
	DeleteEndpoint(ctx context.Context, id string) error
}

var _ endpointWriter = (*client.Client)(nil)

// TestRefusedIsABadRequest: the importer (pkg/registry) does not hold its
// high-water mark for a request the API refused as invalid, which it
// learns from Error.Refused.
func TestRefusedIsABadRequest(t *testing.T) {
	var _ interface{ Refused() bool } = (*client.Error)(nil)
	for status, want := range map[int]bool{400: true, 409: false, 429: false, 500: false} {
		if got := (&client.Error{Status: status}).Refused(); got != want {
			t.Errorf("status %d: Refused() = %v, want %v", status, got, want)
		}
	}
}
