package model_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/mcpmon/mcpmon/pkg/model"
)

const hidden = "hunter2-Tok3n"

// TestSecretNeverRenders: every way Go renders a value shows the marker,
// never the secret; an empty secret renders empty.
func TestSecretNeverRenders(t *testing.T) {
	type holder struct {
		S model.Secret    `json:"s"`
		U model.SecretURL `json:"u"`
	}
	s := model.Secret(hidden)
	u := model.SecretURL("https://hooks.example/services/" + hidden + "?k=" + hidden)
	var logs bytes.Buffer
	slog.New(slog.NewJSONHandler(&logs, nil)).Info("x", "s", s, "u", u, "h", holder{s, u})
	slog.New(slog.NewTextHandler(&logs, nil)).Info("x", "s", s, "u", u)
	js, err := json.Marshal(holder{s, u})
	if err != nil {
		t.Fatal(err)
	}
	txt, _ := s.MarshalText()
	utxt, _ := u.MarshalText()
	renderings := map[string]string{
		"json": string(js), "text": string(txt) + string(utxt), "slog": logs.String(),
	}
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%X", "%10s", "%d"} {
		renderings[verb] = fmt.Sprintf(verb, s) + fmt.Sprintf(verb, u) + fmt.Sprintf(verb, holder{s, u}) + fmt.Sprintf(verb, &s)
	}
	renderings["Sprint"] = fmt.Sprint(s, u, []model.Secret{s}, map[string]model.Secret{"a": s})
	renderings["error"] = fmt.Errorf("wrap %v: %w", s, fmt.Errorf("%s", u)).Error()
	for name, out := range renderings {
		if strings.Contains(out, hidden) || strings.Contains(strings.ToLower(out), fmt.Sprintf("%x", hidden)) {
			t.Errorf("%s rendering leaks the secret: %s", name, out)
		}
	}
	var back struct{ S, U string }
	if err := json.Unmarshal(js, &back); err != nil || back.S != model.Redacted || back.U != "https://hooks.example/<redacted>?<redacted>" {
		t.Errorf("JSON = %s (%v), want the marker", js, err)
	}
	if !strings.Contains(renderings["slog"], `"s":"<redacted>"`) || !strings.Contains(renderings["%v"], model.Redacted) {
		t.Errorf("renderings do not show the marker: %v", renderings)
	}
	if got := fmt.Sprintf("%v|%s|%#v", model.Secret(""), model.SecretURL(""), model.Secret("")); got != `||model.Secret("")` {
		t.Errorf("empty secret renders %q", got)
	}
	if s.Reveal() != hidden || u.Reveal() != string(u) {
		t.Error("Reveal does not return the value")
	}
}

func TestSecretURLKeepsOnlySchemeAndHost(t *testing.T) {
	for raw, want := range map[string]string{
		"https://user:pw@h.example/a?b=c":            "https://h.example/<redacted>?<redacted>",
		"https://hooks.slack.com/services/T0/B0/xyz": "https://hooks.slack.com/<redacted>",
		"https://h.example/":                         "https://h.example",
		"https://h.example:8443?token=x":             "https://h.example:8443?<redacted>",
		"not a url with a host":                      model.Redacted,
		"://":                                        model.Redacted,
	} {
		if got := model.SecretURL(raw).String(); got != want {
			t.Errorf("SecretURL(%q) = %q, want %q", raw, got, want)
		}
	}
}

func TestRedactURLHidesCredentialsOnly(t *testing.T) {
	for raw, want := range map[string]string{
		"https://x.example/mcp":                                 "https://x.example/mcp",
		"https://x.example/mcp?tenant=a&api%5Fkey=k%2F1&sig=&b": "https://x.example/mcp?tenant=a&api%5Fkey=<redacted>&sig=&b",
		"https://x.example/mcp?token=a&token=b#token=c":         "https://x.example/mcp?token=<redacted>&token=<redacted>#token=c",
		"https://tok@x.example/p?q=1":                           "https://x.example/p?q=1",
		"https://u:p@x.example?token=t":                         "https://x.example?token=<redacted>",
		"https://x.example/a@b?X-Amz-Signature=s":               "https://x.example/a@b?X-Amz-Signature=<redacted>",
		"%zz?key=v": "%zz?key=<redacted>",
	} {
		if got := model.RedactURL(raw); got != want {
			t.Errorf("RedactURL(%q) = %q, want %q", raw, got, want)
		}
	}
}

func TestMapSecretParamsCountsRepeatedNames(t *testing.T) {
	var seen []string
	out := model.MapSecretParams("https://x/?key=a&q=1&key=b&Key=c", func(name, v string, n int) (string, bool) {
		seen = append(seen, fmt.Sprintf("%s=%s#%d", name, v, n))
		return "", n == 1
	})
	if want := "key=a#0,key=b#1,Key=c#0"; strings.Join(seen, ",") != want {
		t.Errorf("visited %v, want %s", seen, want)
	}
	if out != "https://x/?key=a&q=1&key=&Key=c" {
		t.Errorf("rewrote to %q", out)
	}
}

func TestSecretParams(t *testing.T) {
	for name, want := range map[string]bool{
		"key": true, "api_key": true, "API-KEY": true, "token": true, "access_token": true, "sig": true,
		"X-Amz-Signature": true, "client_secret": true, "password": true, "auth": true, "code": true, "session_id": true, "bearer": true, "bearer_value": true,
		"tenant": false, "page": false, "design": false, "q": false, "region": false,
	} {
		if got := model.IsSecretParam(name); got != want {
			t.Errorf("IsSecretParam(%q) = %v, want %v", name, got, want)
		}
	}
}

func TestSecretFields(t *testing.T) {
	for name, want := range map[string]bool{
		"url": true, "webhookUrl": true, "routingKey": true, "APIKey": true, "smtpPassword": true, "dsn": true,
		"name": false, "type": false, "severity": false, "to": false,
	} {
		if got := model.IsSecretField(name); got != want {
			t.Errorf("IsSecretField(%q) = %v, want %v", name, got, want)
		}
	}
}

func TestCredentialHeaders(t *testing.T) {
	for name, want := range map[string]bool{
		"Authorization": true, "proxy-authorization": true, "Cookie": true, "X-Api-Key": true, "Apikey": true,
		"Ocp-Apim-Subscription-Key": true, "X-Auth-Token": true, "X-Client-Secret": true, "X-Password": true,
		"X-Trace-Id": false, "X-Tenant": false, "Accept": false, "X-Keyboard": false,
	} {
		if got := model.IsCredentialHeader(name); got != want {
			t.Errorf("IsCredentialHeader(%q) = %v, want %v", name, got, want)
		}
	}
}

func TestScrubReplacesEachSecretInOrder(t *testing.T) {
	got := model.Scrub("post https://h/x/abc failed: abc", "https://h/x/abc", "", "abc")
	if got != "post <redacted> failed: <redacted>" {
		t.Errorf("Scrub = %q", got)
	}
}

// redactionMarker matches a literal that renders a hidden secret in any
// spelling: model.Redacted, ScrubbedText, or a look-alike of them.
var redactionMarker = regexp.MustCompile(`(?i)<redacted[^>]*>|\[redacted\]|^redacted$`)

// secretParamNames are names that only a list of credential-like names
// would hold together.
var secretParamNames = []string{"sig", "jwt", "sas", "pwd", "passw", "apikey", "credential", "signature", "token", "secret"}

// TestRedactionHasOneHome fails when a second non-test Go file of the
// module spells the redaction marker in a string literal or declares a list
// of credential-like names: both belong here, in secret.go.
func TestRedactionHasOneHome(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("module root not found at %s: %v", root, err)
	}
	home := filepath.Join("pkg", "model", "secret.go")
	var markers, lists []string
	fset := token.NewFileSet()
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); path != root && (strings.HasPrefix(n, ".") || n == "testdata" || n == "vendor" || n == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch x := n.(type) {
			case *ast.BasicLit:
				if s, ok := stringLit(x); ok && redactionMarker.MatchString(s) && rel != home {
					markers = append(markers, fset.Position(x.Pos()).String())
				}
			case *ast.CompositeLit:
				if namesSecrets(x) && rel != home {
					lists = append(lists, fset.Position(x.Pos()).String())
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(markers) > 0 {
		t.Errorf("a redaction marker is spelled outside %s; use model.Redacted or model.ScrubbedText:\n%s", home, strings.Join(markers, "\n"))
	}
	if len(lists) > 0 {
		t.Errorf("a list of credential-like names is declared outside %s; use model.IsSecretParam or model.IsSecretField:\n%s", home, strings.Join(lists, "\n"))
	}
	// The check itself must see the home's own definitions.
	src, err := os.ReadFile(filepath.Join(root, home))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(src, []byte(`"<redacted>"`)) || !bytes.Contains(src, []byte(`"apikey"`)) {
		t.Errorf("%s no longer holds the marker and the name list the check looks for", home)
	}
}

func stringLit(x *ast.BasicLit) (string, bool) {
	if x.Kind != token.STRING {
		return "", false
	}
	s, err := strconv.Unquote(x.Value)
	return s, err == nil
}

// namesSecrets reports whether a composite literal (a slice, array or map
// literal, keys included) holds at least three of secretParamNames.
func namesSecrets(c *ast.CompositeLit) bool {
	found := map[string]bool{}
	for _, e := range c.Elts {
		if kv, ok := e.(*ast.KeyValueExpr); ok {
			e = kv.Key
		}
		if b, ok := e.(*ast.BasicLit); ok {
			if s, ok := stringLit(b); ok {
				for _, n := range secretParamNames {
					if strings.EqualFold(s, n) {
						found[n] = true
					}
				}
			}
		}
	}
	return len(found) >= 3
}
