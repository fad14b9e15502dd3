package prober

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestPhasesNameWhatTheyTime: server/discover and the closing DELETE have
// phases of their own, and an attempt the probe fell back from does not
// count as the initialize of the era that answered.
func TestPhasesNameWhatTheyTime(t *testing.T) {
	const slowFallback = 300 * time.Millisecond
	tests := []struct {
		name    string
		url     func(t *testing.T) string
		want    []string
		wantNot []string
		check   func(t *testing.T, phases map[string]float64)
	}{
		{
			name: "2025-era session: discover fallback, initialize, close",
			url: func(t *testing.T) string {
				return streamable(t, sdkServer(Version20251125), mcp.StreamableHTTPOptions{JSONResponse: true}).URL
			},
			want: []string{"discover", "initialize", "initialized", "ping", "tools_list", "close"},
		},
		{
			name: "slow failed Streamable HTTP initialize before legacy SSE stays out of initialize",
			url: func(t *testing.T) string {
				s := sdkServer()
				legacy := mcp.NewSSEHandler(func(*http.Request) *mcp.Server { return s }, nil)
				return serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					if r.Method == http.MethodPost && !strings.Contains(strings.ToLower(r.URL.RawQuery), "sessionid") {
						// A server slow to refuse: the time belongs to
						// the failed attempt, not to the legacy handshake.
						<-time.After(slowFallback)
						http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
						return
					}
					legacy.ServeHTTP(w, r)
				})).URL
			},
			want:    []string{"discover", "initialize", "ping"},
			wantNot: []string{"close"},
			check: func(t *testing.T, phases map[string]float64) {
				if phases["initialize"] >= slowFallback.Seconds() {
					t.Errorf("initialize %.3fs holds the failed attempt (%s)", phases["initialize"], slowFallback)
				}
				if phases["total"] < 2*slowFallback.Seconds() {
					t.Errorf("total %.3fs lost the failed attempts", phases["total"])
				}
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := testProber(t, nil).Probe(context.Background(), endpoint(tc.url(t)), cmd())
			if res.Class != ClassOK {
				t.Fatalf("class %s %q", res.Class, res.Error)
			}
			for _, p := range tc.want {
				if _, ok := res.Phases[p]; !ok {
					t.Errorf("phase %s missing: %v", p, res.Phases)
				}
			}
			for _, p := range tc.wantNot {
				if _, ok := res.Phases[p]; ok {
					t.Errorf("phase %s present: %v", p, res.Phases)
				}
			}
			if tc.check != nil {
				tc.check(t, res.Phases)
			}
		})
	}
}
