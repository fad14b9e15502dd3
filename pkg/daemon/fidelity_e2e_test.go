package daemon

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpmon/mcpmon/pkg/config"
	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/msg"
)

// switchServer is an MCP endpoint on 127.0.0.1 whose behaviour a test swaps
// while mcpmon probes it: a real go-sdk server, a hang, an OAuth challenge.
type switchServer struct {
	h   atomic.Pointer[http.Handler]
	url string
}

func newSwitchServer(t *testing.T, h http.Handler) *switchServer {
	t.Helper()
	s := &switchServer{}
	s.set(h)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { (*s.h.Load()).ServeHTTP(w, r) }),
		ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = hs.Serve(ln) }()
	t.Cleanup(func() { _ = hs.Close() })
	s.url = "http://" + ln.Addr().String() + "/mcp"
	return s
}

func (s *switchServer) set(h http.Handler) { s.h.Store(&h) }

// sdkHandler is a go-sdk Streamable HTTP server with the given identity,
// speaking only the given protocol versions (all when none).
func sdkHandler(name, version string, versions ...string) http.Handler {
	srv := mcp.NewServer(&mcp.Implementation{Name: name, Version: version}, &mcp.ServerOptions{SupportedProtocolVersions: versions})
	return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
}

// hangHandler accepts every request and never answers it.
var hangHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	<-r.Context().Done()
})

func startEmbedded(t *testing.T, mod func(*config.Options)) *Daemon {
	t.Helper()
	o := fastOptions(t)
	o.Auth = config.AuthNone // loopback; API keys have their own tests (apikeys_test.go)
	if mod != nil {
		mod(&o)
	}
	d, err := Start(t.Context(), RoleAll, o, Deps{Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Stop(); _ = d.Wait() })
	return d
}

func verdicts(t *testing.T, addr, id string) []msg.Verdict {
	t.Helper()
	var out struct {
		Verdicts []msg.Verdict `json:"verdicts"`
	}
	if err := json.Unmarshal([]byte(get(t, addr, "/v1/endpoints/"+id+"/verdicts?limit=500")), &out); err != nil {
		t.Fatal(err)
	}
	return out.Verdicts
}

type latestView struct {
	LatestResult *struct {
		Class           string      `json:"class"`
		Status          msg.Status  `json:"status"`
		ProtocolVersion string      `json:"protocolVersion"`
		ServerVersion   string      `json:"serverVersion"`
		Events          []msg.Event `json:"events"`
	} `json:"latestResult"`
}

func latest(t *testing.T, addr, id string) latestView {
	t.Helper()
	var v latestView
	if err := json.Unmarshal([]byte(get(t, addr, "/v1/endpoints/"+id)), &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// TestHungServerIsDownEndToEnd: an endpoint that was up and then accepts
// connections but never answers, probed as often as its timeout allows,
// is down in every window after the one in which it began to hang — never
// no_data — and pages exactly once.
func TestHungServerIsDownEndToEnd(t *testing.T) {
	srv := newSwitchServer(t, sdkHandler("fixture", "1.0.0"))
	rcv, hook := newReceiver(t)
	d := startEmbedded(t, func(o *config.Options) { o.WebhookURL = model.SecretURL(hook) })
	id := register(t, d.Addr(), map[string]any{"name": "hangs", "url": srv.url, "schedule": "@every 1s", "timeout": "1s"})
	eventually(t, 20*time.Second, "an up verdict", func() bool { return latestState(t, d.Addr(), id) == msg.StateUp })

	hungAt := time.Now()
	srv.set(hangHandler)
	if open := rcv.wait(t, 30*time.Second); open["state"] != "open" {
		t.Fatalf("first alert = %v, want open", open)
	}
	firstWholeWindow := hungAt.Truncate(time.Second).Add(time.Second)
	const want = 6
	var after []msg.Verdict
	eventually(t, 30*time.Second, fmt.Sprintf("%d decided windows after the hang began", want), func() bool {
		after = after[:0]
		for _, v := range verdicts(t, d.Addr(), id) {
			if !v.Window.Before(firstWholeWindow) {
				after = append(after, v)
			}
		}
		return len(after) >= want
	})
	for _, v := range after {
		if v.State != msg.StateDown || v.Class != "timeout" {
			t.Errorf("window %s after the hang began: %s/%s, want down/timeout", v.Window.Format(time.RFC3339), v.State, v.Class)
		}
	}
	if got := rcv.all(); len(got) != 1 {
		t.Fatalf("%d alerts, want exactly one open: %v", len(got), got)
	}
}

// TestOAuth20250326ServerIsUpEndToEnd: a server protected the 2025-03-26
// way (a bare Bearer challenge, RFC 8414 metadata at the origin) is alive
// and protected: auth_required, up verdicts, no incident.
func TestOAuth20250326ServerIsUpEndToEnd(t *testing.T) {
	srv := newSwitchServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/.well-known/oauth-authorization-server":
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(map[string]any{"issuer": "http://" + r.Host, "authorization_endpoint": "http://" + r.Host + "/authorize",
				"token_endpoint": "http://" + r.Host + "/token", "response_types_supported": []string{"code"}})
		case "/mcp":
			w.Header().Set("WWW-Authenticate", "Bearer")
			http.Error(w, `{"error":"invalid_token"}`, http.StatusUnauthorized)
		default:
			http.NotFound(w, r)
		}
	}))
	d := startEmbedded(t, nil)
	id := register(t, d.Addr(), map[string]any{"name": "oauth-2025-03-26", "url": srv.url, "schedule": "@every 1s", "timeout": "1s"})
	eventually(t, 20*time.Second, "a verdict", func() bool { return latestState(t, d.Addr(), id) != "" })
	if st := latestState(t, d.Addr(), id); st != msg.StateUp {
		t.Fatalf("verdict %s, want up", st)
	}
	if lr := latest(t, d.Addr(), id).LatestResult; lr == nil || lr.Class != "auth_required" || lr.Status != msg.StatusUp {
		t.Fatalf("latest result %+v, want auth_required/up", lr)
	}
}

// TestVersionAndServerChangesAreEventsEndToEnd: a server that moves to a
// newer protocol revision and a new release shows both changes as events
// on the endpoint's latest result, even with a failed probe in between.
func TestVersionAndServerChangesAreEventsEndToEnd(t *testing.T) {
	srv := newSwitchServer(t, sdkHandler("fixture", "1.0.0", "2025-06-18"))
	d := startEmbedded(t, nil)
	id := register(t, d.Addr(), map[string]any{"name": "upgrades", "url": srv.url, "schedule": "@every 1s", "timeout": "1s"})
	eventually(t, 20*time.Second, "a probe on 2025-06-18", func() bool {
		lr := latest(t, d.Addr(), id).LatestResult
		return lr != nil && lr.ProtocolVersion == "2025-06-18"
	})
	// A deploy: a moment of failure, then the new release on a new revision.
	srv.set(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "deploying", http.StatusServiceUnavailable)
	}))
	eventually(t, 20*time.Second, "a failed probe", func() bool {
		lr := latest(t, d.Addr(), id).LatestResult
		return lr != nil && lr.Status == msg.StatusDown
	})
	srv.set(sdkHandler("fixture", "1.1.0", "2025-11-25"))
	var kinds []string
	eventually(t, 20*time.Second, "version and server change events", func() bool {
		lr := latest(t, d.Addr(), id).LatestResult
		if lr == nil || lr.ServerVersion != "1.1.0" {
			return false
		}
		kinds = kinds[:0]
		for _, ev := range lr.Events {
			kinds = append(kinds, ev.Kind)
		}
		return true
	})
	for _, k := range []string{"protocol_version_changed", "server_version_changed"} {
		if !slices.Contains(kinds, k) {
			t.Errorf("events on the first probe of the new release = %v, want %s", kinds, k)
		}
	}
}
