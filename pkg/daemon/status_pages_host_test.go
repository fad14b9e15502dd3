package daemon

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/mcpmon/mcpmon/pkg/config"
	"github.com/mcpmon/mcpmon/pkg/testpeers"
)

// TestStatusPageHostVerificationFlag: a running mcpmon serves a page on
// its custom host only once verified through the resolver it is given (a
// DNS server on loopback), a pending host like an unknown one; with
// --status-page-host-verification=false it serves every host as set.
func TestStatusPageHostVerificationFlag(t *testing.T) {
	create := func(t *testing.T, c apiClient, slug, host string) (id, value string) {
		t.Helper()
		b, _ := json.Marshal(map[string]any{"slug": slug, "title": slug + " status", "host": host, "groups": []map[string]any{{"name": "All"}}})
		resp := c.do(t, http.MethodPost, "/v1/status-pages", bytes.NewReader(b))
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		var v struct {
			ID               string `json:"id"`
			HostVerification struct {
				Value string `json:"value"`
			} `json:"hostVerification"`
		}
		if resp.StatusCode != http.StatusCreated || json.Unmarshal(raw, &v) != nil {
			t.Fatalf("create %s: %d %s", slug, resp.StatusCode, raw)
		}
		return v.ID, v.HostVerification.Value
	}
	served := func(t *testing.T, addr, host, slug string) bool {
		t.Helper()
		code, body := pageGet(t, addr, host, "/")
		return code == http.StatusOK && strings.Contains(body, slug+" status")
	}

	t.Run("on", func(t *testing.T) {
		z := testpeers.NewDNSZone(t)
		o := fastOptions(t)
		o.Auth = config.AuthNone
		d, err := Start(t.Context(), RoleAll, o, Deps{Logger: testLogger(t), hostResolver: z.Resolver})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { d.Stop(); _ = d.Wait() })
		c := apiClient{addr: d.Addr()}
		proven, value := create(t, c, "proven", "status.proven.test")
		create(t, c, "pending", "status.pending.test")
		z.SetTXT("_mcpmon-challenge.status.proven.test", value)
		resp := c.do(t, http.MethodPost, "/v1/status-pages/"+proven+"/verify-host", strings.NewReader("{}"))
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(raw), `"state":"verified"`) {
			t.Fatalf("verify-host: %d %s", resp.StatusCode, raw)
		}
		if !served(t, d.Addr(), "status.proven.test", "proven") {
			t.Error("the verified host does not serve its page")
		}
		if served(t, d.Addr(), "status.pending.test", "pending") {
			t.Error("the pending host serves its page")
		}
	})
	t.Run("resolver flag", func(t *testing.T) {
		// --status-page-host-resolver: the lookups ask the server named,
		// not the machine's resolver (which knows no *.test name).
		z := testpeers.NewDNSZone(t)
		d := startEmbedded(t, func(o *config.Options) { o.StatusPageHostResolver = z.Addr })
		c := apiClient{addr: d.Addr()}
		id, value := create(t, c, "flagged", "status.flagged.test")
		z.SetTXT("_mcpmon-challenge.status.flagged.test", value)
		resp := c.do(t, http.MethodPost, "/v1/status-pages/"+id+"/verify-host", strings.NewReader("{}"))
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(raw), `"state":"verified"`) {
			t.Fatalf("verify-host through --status-page-host-resolver: %d %s", resp.StatusCode, raw)
		}
	})
	t.Run("off", func(t *testing.T) {
		d := startEmbedded(t, func(o *config.Options) { o.StatusPageHostVerification = false })
		create(t, apiClient{addr: d.Addr()}, "unproven", "status.unproven.test")
		if !served(t, d.Addr(), "status.unproven.test", "unproven") {
			t.Error("with verification off, the host does not serve its page")
		}
	})
}
