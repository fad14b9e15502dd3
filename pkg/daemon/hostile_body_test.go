package daemon

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/mcpmon/mcpmon/pkg/api/apispec"
	apiv1 "github.com/mcpmon/mcpmon/pkg/api/v1"
	"github.com/mcpmon/mcpmon/pkg/config"
)

// deepArrays is n arrays nested inside each other around inner.
func deepArrays(n int, inner string) string {
	return strings.Repeat("[", n) + inner + strings.Repeat("]", n)
}

// TestDeeplyNestedBodiesCostLittle: 30 concurrent 20 KB bodies nested
// about 10,000 deep (within encoding/json's own limit of 10,000, so only
// the API's body check stands between them and the decoders) to each
// route that stores what they carry get a 400 problem at "#" naming the
// nesting, change nothing, and cost the process little: the bytes it
// allocates across all 90 stay within a few MB (a check that walked the
// nesting with a path string per level allocated about 100 MB for each).
func TestDeeplyNestedBodiesCostLittle(t *testing.T) {
	const (
		concurrent = 30
		depth      = 9990
		// Bound on what the whole process allocates across the 90
		// requests, the client's side (bodies, spec validation of each
		// answer) included.
		maxAllocated = 48 << 20
	)
	d, _, _ := startHardened(t, func(o *config.Options) {
		o.AllowPrivateTargets = true
		o.RateLimit = 0 // 90 requests in a burst: the cost of each is measured, not the limiter
		// The default read timeouts: startHardened's short ones are for
		// slow clients, and 90 concurrent bodies on a busy machine are not.
		def := config.Defaults()
		o.HTTPReadTimeout, o.HTTPIdleTimeout = def.HTTPReadTimeout, def.HTTPIdleTimeout
	})
	c := apiClient{addr: d.Addr()}
	id := c.register(t, map[string]any{"name": "target", "url": "http://127.0.0.1:1/mcp", "paused": true})
	before := c.get(t, "/v1/endpoints/"+id)

	routes := []struct {
		method, path, body string
	}{
		{http.MethodPost, "/v1/endpoints", `{"name":"deep","url":"http://127.0.0.1:1/mcp","paused":true,"sinks":` + deepArrays(depth, "") + `}`},
		{http.MethodPatch, "/v1/endpoints/" + id, `{"sinks":` + deepArrays(depth, "") + `}`},
		{http.MethodPost, "/v1/maintenance", `{"endpointIds":` + deepArrays(depth, `"`+id+`"`) + `,"cron":"@daily","duration":"1h"}`},
	}
	client := apispec.Client(t) // the document is parsed before the baseline
	runtime.GC()
	var m0 runtime.MemStats
	runtime.ReadMemStats(&m0)

	var wg sync.WaitGroup
	for _, rt := range routes {
		if n := len(rt.body); n < 19<<10 || n > 21<<10 {
			t.Fatalf("%s %s body is %d bytes, want about 20 KB", rt.method, rt.path, n)
		}
		for range concurrent {
			wg.Go(func() {
				if err := refusedAsTooDeep(t, client, d.Addr(), rt.method, rt.path, rt.body); err != nil {
					t.Errorf("%s %s: %v", rt.method, rt.path, err)
				}
			})
		}
	}
	wg.Wait()

	var m1 runtime.MemStats
	runtime.ReadMemStats(&m1)
	allocated := m1.TotalAlloc - m0.TotalAlloc
	t.Logf("%d requests: %.1f MB allocated (%.0f KB each), heap in use %+.1f MB",
		len(routes)*concurrent, float64(allocated)/(1<<20), float64(allocated)/float64(len(routes)*concurrent)/(1<<10),
		(float64(m1.HeapInuse)-float64(m0.HeapInuse))/(1<<20))
	if allocated > maxAllocated {
		t.Errorf("the process allocated %d MB across %d refused bodies, want at most %d MB",
			allocated>>20, len(routes)*concurrent, maxAllocated>>20)
	}

	if after := c.get(t, "/v1/endpoints/"+id); after != before {
		t.Errorf("the refused PATCHes changed the endpoint:\nbefore %s\nafter  %s", before, after)
	}
	var list apiv1.EndpointList
	if err := json.Unmarshal([]byte(c.get(t, "/v1/endpoints")), &list); err != nil || len(list.Endpoints) != 1 {
		t.Errorf("endpoints after the refused creates: %+v (%v), want only the one registered", list.Endpoints, err)
	}
	if got := c.get(t, "/v1/maintenance"); strings.Contains(got, `"id"`) {
		t.Errorf("a refused maintenance body created a window: %s", got)
	}
}

// refusedAsTooDeep sends one body and checks the answer is a 400
// problem+json whose one field problem is at "#" and names the nesting.
// It reports through its error, not t.Fatal: it runs on many goroutines.
func refusedAsTooDeep(t *testing.T, client *http.Client, addr, method, path, body string) error {
	req, err := http.NewRequestWithContext(t.Context(), method, "http://"+addr+path, strings.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	if method == http.MethodPatch {
		req.Header.Set("Content-Type", "application/merge-patch+json")
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusBadRequest || resp.Header.Get("Content-Type") != apiv1.ProblemContentType {
		return fmt.Errorf("answered %d %s: %.200s, want a 400 problem", resp.StatusCode, resp.Header.Get("Content-Type"), raw)
	}
	var p apiv1.Problem
	if err := json.NewDecoder(bytes.NewReader(raw)).Decode(&p); err != nil {
		return err
	}
	if len(p.Errors) != 1 || p.Errors[0].Pointer != "#" || !strings.Contains(p.Errors[0].Detail, "nested more than 64 levels") {
		return fmt.Errorf("problem errors %+v, want one at \"#\" saying the body is nested more than 64 levels deep", p.Errors)
	}
	return nil
}
