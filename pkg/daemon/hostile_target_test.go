package daemon

// Hostile targets against a running mcpmon: a target chooses every byte it
// answers, so what it says is scrubbed of the endpoint's secrets and
// bounded before anything stores it, and what the SSRF guard refuses is
// told to the tenant without the operator's network facts.

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpmon/mcpmon/pkg/config"
	"github.com/mcpmon/mcpmon/pkg/testpeers"
	"github.com/mcpmon/mcpmon/prober"
)

// rawMCP is a streamable-HTTP MCP server in plain net/http, so a test
// controls every byte of every answer: handle returns the result of one
// request, or nil for a method it does not know.
func rawMCP(t *testing.T, handle func(r *http.Request, method string, params json.RawMessage) any) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
		}
		if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&req); err != nil {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		if len(req.ID) == 0 {
			w.WriteHeader(http.StatusAccepted) // a notification
			return
		}
		w.Header().Set("Content-Type", "application/json")
		res := handle(r, req.Method, req.Params)
		if res == nil {
			w.WriteHeader(http.StatusBadRequest)
			_ = json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": req.ID, "error": map[string]any{"code": -32000, "message": "Server not initialized"}})
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": req.ID, "result": res})
	})}
	go func() { _ = hs.Serve(ln) }()
	t.Cleanup(func() { _ = hs.Close() })
	return "http://" + ln.Addr().String() + "/mcp"
}

// initializeResult answers initialize with the version the client asked
// for, declaring tools, prompts and resources.
func initializeResult(params json.RawMessage, info map[string]any, instructions string) map[string]any {
	var p struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	_ = json.Unmarshal(params, &p)
	return map[string]any{
		"protocolVersion": p.ProtocolVersion,
		"capabilities":    map[string]any{"tools": map[string]any{}, "prompts": map[string]any{}, "resources": map[string]any{}},
		"serverInfo":      info,
		"instructions":    instructions,
	}
}

// secretForms are the spellings of each secret a scrubbed output must not
// hold: as is, upper-cased, base64 (standard and URL-safe) and URL-encoded.
func secretForms(secrets ...string) []string {
	var out []string
	for _, s := range secrets {
		out = append(out, s, strings.ToUpper(s), base64.StdEncoding.EncodeToString([]byte(s)),
			base64.RawURLEncoding.EncodeToString([]byte(s)), url.QueryEscape(s))
	}
	return out
}

// TestEchoedSecretsStayOutOfCatalogAndStore: a target that copies the
// probe's Authorization header and a custom secret header (as is, cased,
// base64- and URL-encoded) into every string it answers — server info,
// instructions, tool names, titles, descriptions, annotations, input and
// output schemas at every depth (keys and values), prompts, resources —
// has none of them served by the catalog, the latest result or the event
// history, and none of them lands in the store file.
func TestEchoedSecretsStayOutOfCatalogAndStore(t *testing.T) {
	const token, custom = "tok-ECHO-7f3a9c1b2e5d", "sek-HDR-44d19e0a7c61"
	var phase atomic.Int64 // changes the catalog once, so a drift event carries echoed names too
	target := rawMCP(t, func(r *http.Request, method string, params json.RawMessage) any {
		auth, sec := r.Header.Get("Authorization"), r.Header.Get("X-Tenant-Secret")
		var parts []string
		for _, v := range []string{auth, strings.TrimPrefix(auth, "Bearer "), sec} {
			parts = append(parts, v, strings.ToUpper(v), base64.StdEncoding.EncodeToString([]byte(v)),
				base64.URLEncoding.EncodeToString([]byte(v)), url.QueryEscape(v))
		}
		echo := "you sent " + strings.Join(parts, " | ")
		schema := func(depth int) map[string]any {
			s := map[string]any{"type": "string", "description": echo, "default": echo, "enum": []any{echo, sec}}
			for range depth {
				s = map[string]any{"type": "object", "title": echo, "properties": map[string]any{"k-" + sec: s, token: s}, "required": []any{"k-" + sec}}
			}
			return s
		}
		switch method {
		case "initialize":
			return initializeResult(params, map[string]any{"name": "srv " + echo, "version": sec, "title": echo}, echo)
		case "ping":
			return map[string]any{}
		case "tools/list":
			tools := []any{
				map[string]any{"name": "search", "title": echo, "description": echo, "inputSchema": schema(4), "outputSchema": schema(3),
					"annotations": map[string]any{"title": echo, "readOnlyHint": true}, "_meta": map[string]any{sec: echo}},
				map[string]any{"name": "tool-" + sec, "description": "plain", "inputSchema": map[string]any{"type": "object"}},
			}
			if phase.Load() > 0 {
				tools = append(tools, map[string]any{"name": "added-" + token, "description": echo, "inputSchema": schema(2)})
			}
			return map[string]any{"tools": tools}
		case "prompts/list":
			return map[string]any{"prompts": []any{map[string]any{"name": "p-" + sec, "description": echo}}}
		case "resources/list":
			return map[string]any{"resources": []any{map[string]any{"uri": "file:///" + sec, "name": echo}}}
		}
		return nil
	})

	dataDir := t.TempDir()
	d := startEmbedded(t, func(o *config.Options) { o.DataDir = dataDir })
	id := register(t, d.Addr(), map[string]any{
		"name": "echoer", "url": target, "schedule": "@every 1s", "timeout": "1s",
		"headers": map[string]string{"Authorization": "Bearer " + token, "X-Tenant-Secret": custom},
	})
	catalog := func() string { return get(t, d.Addr(), "/v1/endpoints/"+id+"/catalog") }
	eventually(t, 30*time.Second, "the first catalog stored", func() bool { return strings.Contains(catalog(), `"search"`) })
	phase.Store(1)
	eventually(t, 30*time.Second, "the drift recorded", func() bool {
		return strings.Contains(get(t, d.Addr(), "/v1/endpoints/"+id+"/events"), "catalog_info")
	})

	leaks := secretForms(token, custom, "Bearer "+token)
	served := map[string]string{
		"catalog":  catalog(),
		"endpoint": get(t, d.Addr(), "/v1/endpoints/"+id),
		"events":   get(t, d.Addr(), "/v1/endpoints/"+id+"/events"),
	}
	for what, body := range served {
		for _, leak := range leaks {
			if strings.Contains(body, leak) {
				t.Errorf("GET %s serves %q:\n%s", what, leak, body)
			}
		}
	}
	// The scrubbed catalog is still the target's: its tools, with the
	// secrets replaced.
	if c := served["catalog"]; !strings.Contains(c, "[REDACTED]") || !strings.Contains(c, `"tool-[REDACTED]"`) || !strings.Contains(c, "you sent") {
		t.Errorf("catalog %s: want the tools kept, secrets replaced by [REDACTED]", c)
	}

	d.Stop()
	if err := d.Wait(); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(dataDir, "store.db"))
	if err != nil {
		t.Fatal(err)
	}
	for _, leak := range leaks {
		if bytes.Contains(raw, []byte(leak)) {
			t.Errorf("the store file holds %q in plaintext", leak)
		}
	}
	if !bytes.Contains(raw, []byte("you sent")) {
		t.Fatal("the store file holds no catalog at all: the check above proves nothing")
	}
}

// TestHugeCatalogStaysBounded: a target listing 20 pages of 1,000 tools,
// each with a fresh nonce every probe, costs one page per probe and a
// bounded catalog: the stored catalog is cut to prober.MaxCatalogTools
// tools and prober.MaxCatalogBytes bytes and says so, the probe is up and
// flags it, and every catalog_changed event's details stay small however
// many tools changed.
func TestHugeCatalogStaysBounded(t *testing.T) {
	t.Parallel() // waits on windows: overlapped with the other long end-to-end tests
	const pages, perPage = 20, 1000
	var probes, pagesServed atomic.Int64
	var mu sync.Mutex
	pagesPerProbe := map[int64]int{}
	target := rawMCP(t, func(r *http.Request, method string, params json.RawMessage) any {
		switch method {
		case "initialize":
			probes.Add(1)
			return initializeResult(params, map[string]any{"name": "huge", "version": "1"}, "")
		case "ping":
			return map[string]any{}
		case "tools/list":
			var p struct {
				Cursor string `json:"cursor"`
			}
			_ = json.Unmarshal(params, &p)
			page, _ := strconv.Atoi(p.Cursor)
			nonce := probes.Load()
			pagesServed.Add(1)
			mu.Lock()
			pagesPerProbe[nonce]++
			mu.Unlock()
			tools := make([]any, perPage)
			for i := range tools {
				tools[i] = map[string]any{
					"name":        fmt.Sprintf("tool-%02d-%04d-%d", page, i, nonce),
					"description": fmt.Sprintf("nonce %d %s", nonce, strings.Repeat("d", 400)),
					"inputSchema": map[string]any{"type": "object", "properties": map[string]any{fmt.Sprintf("arg%d", nonce): map[string]any{"type": "string"}}},
				}
			}
			res := map[string]any{"tools": tools}
			if page+1 < pages {
				res["nextCursor"] = strconv.Itoa(page + 1)
			}
			return res
		}
		return nil
	})

	d := startEmbedded(t, nil)
	id := register(t, d.Addr(), map[string]any{"name": "huge", "url": target, "schedule": "@every 2s", "timeout": "2s"})
	eventually(t, 90*time.Second, "a first catalog", func() bool {
		return strings.Contains(get(t, d.Addr(), "/v1/endpoints/"+id+"/catalog"), `"fingerprint"`)
	})
	waitProbes(t, d.Addr(), id, 4)

	var cat struct {
		Fingerprint string            `json:"fingerprint"`
		Tools       []json.RawMessage `json:"tools"`
		Truncated   bool              `json:"truncated"`
		Drift       []json.RawMessage `json:"drift"`
	}
	if err := json.Unmarshal([]byte(get(t, d.Addr(), "/v1/endpoints/"+id+"/catalog")), &cat); err != nil {
		t.Fatal(err)
	}
	toolBytes, _ := json.Marshal(cat.Tools)
	if len(cat.Tools) == 0 || len(cat.Tools) > prober.MaxCatalogTools || len(toolBytes) > prober.MaxCatalogBytes || !cat.Truncated {
		t.Fatalf("stored catalog: %d tools, %d bytes, truncated=%v; want 1..%d tools within %d bytes, marked truncated",
			len(cat.Tools), len(toolBytes), cat.Truncated, prober.MaxCatalogTools, prober.MaxCatalogBytes)
	}

	var ep struct {
		Latest struct {
			Status           string            `json:"status"`
			ToolCount        int               `json:"toolCount"`
			CatalogTruncated bool              `json:"catalogTruncated"`
			Events           []json.RawMessage `json:"events"`
		} `json:"latestResult"`
	}
	if err := json.Unmarshal([]byte(get(t, d.Addr(), "/v1/endpoints/"+id)), &ep); err != nil {
		t.Fatal(err)
	}
	if ep.Latest.Status != "up" || !ep.Latest.CatalogTruncated || ep.Latest.ToolCount != len(cat.Tools) {
		t.Fatalf("latest result %+v: want up, catalogTruncated, toolCount %d", ep.Latest, len(cat.Tools))
	}

	// Each probe changes every tool: every result carries a drift, each
	// one small.
	const maxEventBytes = 32 << 10
	for _, e := range append(cat.Drift, ep.Latest.Events...) {
		if len(e) > maxEventBytes {
			t.Errorf("a catalog_changed event of %d bytes, want at most %d", len(e), maxEventBytes)
		}
	}
	var evs struct {
		Events []json.RawMessage `json:"events"`
	}
	if err := json.Unmarshal([]byte(get(t, d.Addr(), "/v1/endpoints/"+id+"/events")), &evs); err != nil {
		t.Fatal(err)
	}
	if len(evs.Events) == 0 {
		t.Fatal("no change events: the nonces should make every probe a drift")
	}
	for _, e := range evs.Events {
		if len(e) > maxEventBytes {
			t.Errorf("a stored change event of %d bytes, want at most %d", len(e), maxEventBytes)
		}
		if !bytes.Contains(e, []byte("more")) {
			t.Errorf("a change event lists every tool, want the rest counted (… and N more): %.300s", e)
		}
	}

	// Pagination stops once a page fills the catalog.
	mu.Lock()
	defer mu.Unlock()
	for probe, n := range pagesPerProbe {
		if n > 1 {
			t.Errorf("probe %d fetched %d tools/list pages of %d tools, want 1 (the first fills the catalog)", probe, n, perPage)
		}
	}
	if pagesServed.Load() == 0 {
		t.Fatal("no tools/list page served")
	}
}

// TestRefusedTargetNamesNoAddress: with the SSRF guard on, a target
// refused at registration (a loopback literal) and one refused at dial
// time (a name resolving to loopback) are told to the tenant in one
// sentence, without the address or the blocked range; the resolved
// address is in the operator's log.
func TestRefusedTargetNamesNoAddress(t *testing.T) {
	const sentence = "the target resolves to a private or reserved address; mcpmon refuses those (an operator may allow its network with --allow-target-networks, or every address with --allow-private-targets)"
	target := rawMCP(t, func(*http.Request, string, json.RawMessage) any { return map[string]any{} })
	u, _ := url.Parse(target)
	resolver := testpeers.DNSServer(t, map[string]netip.Addr{"rebind.mcpmon.test": netip.MustParseAddr("127.0.0.1")})
	o := fastOptions(t)
	o.Auth, o.AllowPrivateTargets = config.AuthNone, false
	logs := &lockedBuffer{}
	d, err := Start(t.Context(), RoleAll, o, Deps{
		Logger:        slog.New(slog.NewTextHandler(logs, nil)),
		proberOptions: func(_ string, po *prober.Options) { po.Resolver = resolver },
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Stop(); _ = d.Wait() })

	// Registration: a problem naming the field and the rule, not the range.
	b, _ := json.Marshal(map[string]any{"name": "lit", "url": target, "schedule": "@every 1s"})
	resp := apiClient{addr: d.Addr()}.do(t, http.MethodPost, "/v1/endpoints", bytes.NewReader(b))
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest && resp.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(string(body), sentence) {
		t.Fatalf("registering %s: %d %s, want 4xx saying %q", target, resp.StatusCode, body, sentence)
	}
	for _, leak := range []string{"127.0.0.0/8", " is in "} {
		if strings.Contains(string(body), leak) {
			t.Errorf("the registration problem names %q: %s", leak, body)
		}
	}

	// Dial time: the name passes registration, resolves to loopback, and
	// the stored result says the sentence only.
	id := register(t, d.Addr(), map[string]any{"name": "rebind", "url": "http://rebind.mcpmon.test:" + u.Port() + "/mcp", "schedule": "@every 1s", "timeout": "1s"})
	var ep struct {
		Latest struct {
			Class string `json:"class"`
			Error string `json:"error"`
		} `json:"latestResult"`
	}
	eventually(t, 30*time.Second, "a probe result", func() bool {
		if err := json.Unmarshal([]byte(get(t, d.Addr(), "/v1/endpoints/"+id)), &ep); err != nil {
			t.Fatal(err)
		}
		return ep.Latest.Class != ""
	})
	if ep.Latest.Class != "blocked_target" || !strings.Contains(ep.Latest.Error, sentence) {
		t.Fatalf("latest result %+v: want blocked_target saying %q", ep.Latest, sentence)
	}
	for _, leak := range []string{"127.0.0.1", "127.0.0.0/8", u.Port()} {
		if strings.Contains(ep.Latest.Error, leak) {
			t.Errorf("the stored error names %q: %s", leak, ep.Latest.Error)
		}
	}
	if l := logs.String(); !strings.Contains(l, "127.0.0.1") || !strings.Contains(l, "127.0.0.0/8") {
		t.Errorf("the operator's log lacks the refused address and range:\n%s", l)
	}
}

// TestAllowTargetNetworksOpensOnlyThoseNetworks: --allow-target-networks
// lets the probers and the API reach the networks named and nothing else
// blocked: a loopback server in the allowed /32 registers and is probed
// up; another loopback address is refused at registration, and a name
// resolving to the cloud metadata address is refused at dial time
// (before connect, so nothing is sent there).
func TestAllowTargetNetworksOpensOnlyThoseNetworks(t *testing.T) {
	target := newMCPServer(t).url()
	u, _ := url.Parse(target)
	resolver := testpeers.DNSServer(t, map[string]netip.Addr{"metadata.mcpmon.test": netip.MustParseAddr("169.254.169.254")})
	o := fastOptions(t)
	o.Auth, o.AllowPrivateTargets, o.AllowTargetNetworks = config.AuthNone, false, []string{"127.0.0.1/32"}
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	d, err := Start(t.Context(), RoleAll, o, Deps{
		Logger:        slog.New(slog.DiscardHandler),
		proberOptions: func(_ string, po *prober.Options) { po.Resolver = resolver },
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Stop(); _ = d.Wait() })

	b, _ := json.Marshal(map[string]any{"name": "other", "url": "http://127.0.0.2:" + u.Port() + "/mcp", "schedule": "@every 1s"})
	resp := apiClient{addr: d.Addr()}.do(t, http.MethodPost, "/v1/endpoints", bytes.NewReader(b))
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode/100 != 4 || !strings.Contains(string(body), "--allow-target-networks") {
		t.Fatalf("registering a loopback address outside the allowed network: %d %s, want 4xx naming --allow-target-networks", resp.StatusCode, body)
	}

	latest := func(id string) (class string) {
		var ep struct {
			Latest struct {
				Class string `json:"class"`
			} `json:"latestResult"`
		}
		eventually(t, 30*time.Second, "a probe result of "+id, func() bool {
			if err := json.Unmarshal([]byte(get(t, d.Addr(), "/v1/endpoints/"+id)), &ep); err != nil {
				t.Fatal(err)
			}
			return ep.Latest.Class != ""
		})
		return ep.Latest.Class
	}
	allowed := register(t, d.Addr(), map[string]any{"name": "allowed", "url": target, "schedule": "@every 1s", "timeout": "1s"})
	if c := latest(allowed); c != "ok" {
		t.Errorf("the server in the allowed network: class %s, want ok", c)
	}
	meta := register(t, d.Addr(), map[string]any{"name": "metadata", "url": "http://metadata.mcpmon.test:" + u.Port() + "/mcp", "schedule": "@every 1s", "timeout": "1s"})
	if c := latest(meta); c != "blocked_target" {
		t.Errorf("a name resolving to 169.254.169.254: class %s, want blocked_target", c)
	}
}
