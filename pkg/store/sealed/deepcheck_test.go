package sealed_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/seal"
	"github.com/mcpmon/mcpmon/pkg/store/sealed"
)

// deepCheckEndpoint carries a tool check whose arguments hold a secret and
// an OAuth client with a secret.
func deepCheckEndpoint(id string) (model.Endpoint, []string) {
	tag := randHex()
	secrets := []string{"tool-arg-" + tag, "client-secret-" + tag}
	return model.Endpoint{
		ID: id, Name: "deep", URL: "https://mcp.example/mcp", Transport: "auto", Schedule: "@every 30s",
		ToolCheck: &model.ToolCheck{Name: "whoami", Arguments: json.RawMessage(`{"account":"` + secrets[0] + `","n":1}`),
			Expect: &model.ToolExpect{Contains: "ok"}},
		OAuth: &model.OAuthClient{TokenURL: "https://auth.example/token", ClientID: "probe", ClientSecret: secrets[1], Scopes: []string{"mcp"}},
	}, secrets
}

// TestToolArgumentsAndClientSecretAreSealed: the tool check's arguments and
// the OAuth client secret never reach store.db in plaintext, and read back
// whole through the wrapper.
func TestToolArgumentsAndClientSecretAreSealed(t *testing.T) {
	path := filepath.Join(t.TempDir(), "store.db")
	b := openBolt(t, path)
	k := keyring(t, seal.NewKey())
	st := sealed.Wrap(b, k)
	ep, secrets := deepCheckEndpoint("ep1")
	created, err := st.CreateEndpoint(t.Context(), ep)
	if err != nil {
		t.Fatal(err)
	}
	if created.OAuth.ClientSecret != secrets[1] || !bytes.Equal(created.ToolCheck.Arguments, ep.ToolCheck.Arguments) {
		t.Fatalf("create returned %+v %+v, want the plaintext back", created.ToolCheck, created.OAuth)
	}
	got, err := st.GetEndpoint(t.Context(), "ep1")
	if err != nil {
		t.Fatal(err)
	}
	if got.OAuth.ClientSecret != secrets[1] || !bytes.Equal(got.ToolCheck.Arguments, ep.ToolCheck.Arguments) ||
		got.ToolCheck.Name != "whoami" || got.ToolCheck.Expect.Contains != "ok" || got.OAuth.TokenURL != ep.OAuth.TokenURL {
		t.Fatalf("read back %+v %+v, want the secrets opened", got.ToolCheck, got.OAuth)
	}
	raw, err := b.GetEndpoint(t.Context(), "ep1") // the backend's view
	if err != nil {
		t.Fatal(err)
	}
	if sealed.NeedsReseal(k, raw) {
		t.Error("freshly sealed endpoint needs a reseal")
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	file, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(file, []byte("whoami")) {
		t.Fatal("store.db does not hold the endpoint at all: the grep proves nothing")
	}
	for _, s := range secrets {
		if bytes.Contains(file, []byte(s)) {
			t.Errorf("store.db holds secret %q in plaintext", s)
		}
	}
}

// TestPlaintextDeepCheckSecretsNeedReseal: a record written before these
// fields were sealed is resealed.
func TestPlaintextDeepCheckSecretsNeedReseal(t *testing.T) {
	k := keyring(t, seal.NewKey())
	ep, _ := deepCheckEndpoint("ep1")
	if !sealed.NeedsReseal(k, ep) {
		t.Fatal("plaintext tool arguments and client secret do not need a reseal")
	}
	s, err := sealed.SealEndpoint(k, ep)
	if err != nil {
		t.Fatal(err)
	}
	// A sealed value moved to another endpoint does not open there.
	s.ID = "ep2"
	if _, err := sealed.OpenEndpoint(k, s); err == nil {
		t.Fatal("sealed secrets opened under another endpoint ID")
	}
	if ep.OAuth.ClientSecret == "" || seal.IsSealed(ep.OAuth.ClientSecret) {
		t.Fatal("SealEndpoint modified its argument")
	}
}
