package agent

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	apiv1 "github.com/mcpmon/mcpmon/pkg/api/v1"
	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/msg"
	"github.com/mcpmon/mcpmon/pkg/netguard"
	"github.com/mcpmon/mcpmon/prober"
)

func TestParseSecrets(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     map[string]model.Secret
		err      string
	}{
		{"empty", "", map[string]model.Secret{}, ""},
		{"entries", "# billing\nbilling-token=s3cret\r\n\n  other.one = with = signs \nempty=\n", map[string]model.Secret{
			"billing-token": "s3cret", "other.one": " with = signs ", "empty": ""}, ""},
		{"no equals", "a=1\njust-a-name\n", nil, "line 2"},
		{"bad name", "bad name=x", nil, "line 1"},
		{"long name", strings.Repeat("n", 65) + "=x", nil, "line 1"},
		{"twice", "a=1\na=2\n", nil, "line 2: a is given twice"},
	} {
		got, err := ParseSecrets([]byte(tc.in))
		switch {
		case tc.err != "":
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: err %v, want %q", tc.name, err, tc.err)
			}
		case err != nil || len(got) != len(tc.want):
			t.Errorf("%s: %v, %v; want %v", tc.name, len(got), err, len(tc.want))
		default:
			for k, v := range tc.want {
				if got[k].Reveal() != v.Reveal() {
					t.Errorf("%s: %s = %q, want %q", tc.name, k, got[k].Reveal(), v.Reveal())
				}
			}
		}
	}
	if _, err := ParseSecrets([]byte("a=1\nno-value hunter2\n")); err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("a syntax error %v must not quote the line", err)
	}
}

// FuzzParseSecrets: a secrets file parses or is refused, never panics;
// what parses has valid names and one-line values.
func FuzzParseSecrets(f *testing.F) {
	for _, s := range []string{"a=b", "# c\n\na=b\r\n", "=x", "a", "a=1\na=2", strings.Repeat("n", 10<<10) + "=v", "a=${agent:x}", "\xff=\xff"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := ParseSecrets(b)
		if err != nil {
			return
		}
		for k, v := range m {
			if !model.ValidSecretName(k) || strings.ContainsAny(v.Reveal(), "\n") {
				t.Fatalf("parsed %q = %q", k, v.Reveal())
			}
		}
	})
}

// The file's entry wins over the environment's; a file others can read
// is warned of, without a value; a reload takes the new file, and a bad
// one keeps the secrets read before.
func TestSecretsFileAndEnvironment(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agent.secrets")
	if err := os.WriteFile(path, []byte("billing-token=from-file\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"MCPMON_AGENT_SECRET_BILLING_TOKEN": "from-env", "MCPMON_AGENT_SECRET_OTHER_ONE": "other-env"}
	var logs bytes.Buffer
	s, err := LoadSecrets(path, func(k string) (string, bool) { v, ok := env[k]; return v, ok }, slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := s.Lookup("billing-token"); v.Reveal() != "from-file" {
		t.Errorf("billing-token = %q, want the file's", v.Reveal())
	}
	if v, ok := s.Lookup("other.one"); !ok || v.Reveal() != "other-env" {
		t.Errorf("other.one = %q %v, want MCPMON_AGENT_SECRET_OTHER_ONE's", v.Reveal(), ok)
	}
	if _, ok := s.Lookup("absent"); ok {
		t.Error("an absent secret was found")
	}
	if !strings.Contains(logs.String(), "chmod 600") || strings.Contains(logs.String(), "from-file") {
		t.Errorf("logs %q: want a mode warning without the value", logs.String())
	}

	if err := os.WriteFile(path, []byte("billing-token=rotated\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := s.Reload(); err != nil {
		t.Fatal(err)
	}
	if v, _ := s.Lookup("billing-token"); v.Reveal() != "rotated" {
		t.Errorf("after reload billing-token = %q", v.Reveal())
	}
	if err := os.WriteFile(path, []byte("broken line\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := s.Reload(); err == nil {
		t.Error("a broken file reloaded")
	}
	if v, _ := s.Lookup("billing-token"); v.Reveal() != "rotated" {
		t.Errorf("after a failed reload billing-token = %q, want the secrets read before", v.Reveal())
	}
	if err := os.WriteFile(path, bytes.Repeat([]byte("#"), MaxSecretsFile+1), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := s.Reload(); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("an oversized file: %v", err)
	}
	if _, err := LoadSecrets(filepath.Join(t.TempDir(), "none"), nil, nil); err == nil {
		t.Error("a missing --secrets-file loaded")
	}
}

func TestMissingSecretText(t *testing.T) {
	if got, want := MissingSecretText("agent office-1", []string{"billing-token"}),
		"agent office-1 has no secret billing-token: set MCPMON_AGENT_SECRET_BILLING_TOKEN or add it to --secrets-file"; got != want {
		t.Errorf("one: %q\nwant %q", got, want)
	}
	got := MissingSecretText("this agent", []string{"a", "b.c"})
	if got != "this agent has no secrets a, b.c: set MCPMON_AGENT_SECRET_A, MCPMON_AGENT_SECRET_B_C or add them to --secrets-file" {
		t.Errorf("two: %q", got)
	}
	many := strings.Split("a b c d e f g h i j", " ")
	if got := MissingSecretText("agent x", many); !strings.Contains(got, "(and 2 more)") || strings.Contains(got, "MCPMON_AGENT_SECRET_I") {
		t.Errorf("many: %q", got)
	}
}

// secretMap is a SecretSource.
type secretMap map[string]model.Secret

func (m secretMap) Lookup(n string) (model.Secret, bool) { v, ok := m[n]; return v, ok }

// guardedFixture is a go-sdk MCP server on loopback that answers 401
// unless the request carries Authorization: Bearer s3cret-billing.
func guardedFixture(t *testing.T) string {
	srv := mcp.NewServer(&mcp.Implementation{Name: "guarded", Version: "1.0.0"}, nil)
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer s3cret-billing" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	return ts.URL + "/mcp"
}

// The agent fills in an endpoint's ${agent:NAME} from its own secrets and
// the target sees the value; without the secret nothing is sent and the
// result is secret_missing, naming the agent, the secret and the variable.
func TestRunFillsInAgentSecrets(t *testing.T) {
	target := guardedFixture(t)
	for _, tc := range []struct {
		name    string
		secrets SecretSource
		status  msg.Status
		class   string
	}{
		{"with the secret", secretMap{"billing-token": "s3cret-billing"}, msg.StatusUp, prober.ClassOK},
		{"without it", secretMap{}, msg.StatusDown, prober.ClassSecretMissing},
		{"no secrets at all", nil, msg.StatusDown, prober.ClassSecretMissing},
	} {
		slot := time.Now().UTC().Truncate(time.Second)
		cmd := apiv1.AgentCommand{EndpointID: "e1", Slot: slot, Endpoint: apiv1.AgentEndpoint{ID: "e1", URL: target, Transport: "auto",
			Schedule: "@every 1h", Timeout: "5s", Headers: map[string]string{"Authorization": "Bearer ${agent:billing-token}"}}}
		srv := newFakeServer(t, func(w http.ResponseWriter) {
			_ = json.NewEncoder(w).Encode(apiv1.AgentCommands{Commands: []apiv1.AgentCommand{cmd}, Agent: "office-1"})
		}, commands())
		r := firstResult(t, srv, Options{AllowPrivateTargets: true, Secrets: tc.secrets})
		if r.Status != tc.status || r.Class != tc.class || r.ProbeRunID != msg.ProbeRunID("e1", slot) {
			t.Errorf("%s: result %s/%s %q, want %s/%s", tc.name, r.Status, r.Class, r.Error, tc.status, tc.class)
		}
		if tc.class == prober.ClassSecretMissing && r.Error != MissingSecretText("agent office-1", []string{"billing-token"}) {
			t.Errorf("%s: error %q", tc.name, r.Error)
		}
	}
}

// What a target sends back is scrubbed of the agent-side values its
// endpoint was given before the result leaves the agent.
func TestResultsAreScrubbedOfAgentSecrets(t *testing.T) {
	a := &agent{eps: &endpoints{m: map[string]model.Endpoint{}}}
	a.eps.put(model.Endpoint{ID: "e1"}, []string{"acct-4242-secret", "abc"}, time.Now())
	res := msg.ProbeResult{Schema: msg.SchemaVersion, EndpointID: "e1", Status: msg.StatusDown, Class: prober.ClassToolFailed,
		Error:  "tool said: no account acct-4242-secret" + strings.Repeat("x", maxResultText),
		Events: []msg.Event{{Kind: "k", Message: "echo acct-4242-secret"}}, ServerName: "abc acct-4242-secret"}
	var out msg.ProbeResult
	if err := json.Unmarshal(a.scrub(res.Body()), &out); err != nil {
		t.Fatal(err)
	}
	body := string(out.Body())
	if strings.Contains(body, "acct-4242-secret") || !strings.Contains(out.Error, "no account "+model.Redacted) || len(out.Error) > maxResultText {
		t.Errorf("scrubbed result %.200s (error %d bytes)", body, len(out.Error))
	}
	if !strings.Contains(out.ServerName, "abc") {
		t.Errorf("a value shorter than %d bytes was scrubbed: %q", minScrubLen, out.ServerName)
	}
	other := msg.ProbeResult{Schema: msg.SchemaVersion, EndpointID: "e2", Error: "acct-4242-secret"}
	if got := a.scrub(other.Body()); !bytes.Equal(got, other.Body()) {
		t.Errorf("another endpoint's result changed: %s", got)
	}
}

// An endpoint that carries agent-side secrets is probed through a guard
// confined to the agent's networks: anyone with a write key of the tenant
// (or a compromised server) could otherwise point such an endpoint at a
// host of theirs and collect the secrets. The sentence of the refusal
// tells the two guards apart: with 10.0.0.0/8 allowed, a loopback target
// is refused by both, but a secret-bearing command is refused by the
// confined one. Inside the allowed networks the secret goes through.
func TestSecretsGoOnlyToTheAgentsNetworks(t *testing.T) {
	target := guardedFixture(t)
	for _, tc := range []struct {
		name     string
		allow    bool
		networks []string
		secret   bool
		class    string
		sentence error
	}{
		{"no secret, loopback not allowed", false, []string{"10.0.0.0/8"}, false, prober.ClassBlockedTarget, netguard.ErrBlocked},
		{"a secret, loopback not allowed", false, []string{"10.0.0.0/8"}, true, prober.ClassBlockedTarget, netguard.ErrOutsideSecretNetworks},
		{"a secret, loopback allowed", false, []string{"127.0.0.1/32"}, true, prober.ClassOK, nil},
		{"a secret, every private address allowed", true, nil, true, prober.ClassOK, nil},
	} {
		nets, err := netguard.ParseNetworks(tc.networks)
		if err != nil {
			t.Fatal(err)
		}
		slot := time.Now().UTC().Truncate(time.Second)
		headers := map[string]string{"Authorization": "Bearer s3cret-billing"}
		if tc.secret {
			headers = map[string]string{"Authorization": "Bearer ${agent:billing-token}"}
		}
		cmd := apiv1.AgentCommand{EndpointID: "e1", Slot: slot, Endpoint: apiv1.AgentEndpoint{ID: "e1", URL: target, Transport: "auto",
			Schedule: "@every 1h", Timeout: "5s", Headers: headers}}
		srv := newFakeServer(t, func(w http.ResponseWriter) {
			_ = json.NewEncoder(w).Encode(apiv1.AgentCommands{Commands: []apiv1.AgentCommand{cmd}, Agent: "office-1"})
		}, commands())
		r := firstResult(t, srv, Options{AllowPrivateTargets: tc.allow, AllowedNetworks: nets, Secrets: secretMap{"billing-token": "s3cret-billing"}})
		if r.Class != tc.class {
			t.Errorf("%s: result %s/%s %q, want class %s", tc.name, r.Status, r.Class, r.Error, tc.class)
			continue
		}
		if tc.sentence != nil && r.Error != tc.sentence.Error() {
			t.Errorf("%s: error %q, want %q", tc.name, r.Error, tc.sentence)
		}
	}
}
