package declarative

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	apiv1 "github.com/mcpmon/mcpmon/pkg/api/v1"
)

func view(name string, mod func(*apiv1.EndpointView)) apiv1.EndpointView {
	v := apiv1.EndpointView{ID: "id-" + name, Name: name, URL: "https://mcp.example.com/" + name, Transport: "auto",
		Schedule: apiv1.DefaultSchedule, Timeout: "10s", Version: 3}
	if mod != nil {
		mod(&v)
	}
	return v
}

func input(name string, mod func(*apiv1.EndpointInput)) apiv1.EndpointInput {
	in := apiv1.EndpointInput{Name: name, URL: "https://mcp.example.com/" + name}
	if mod != nil {
		mod(&in)
	}
	return in
}

func fields(c Change) string {
	var out []string
	for _, f := range c.Fields {
		out = append(out, f.Field)
	}
	return strings.Join(out, ",")
}

func TestPlanMatchesByName(t *testing.T) {
	for _, tc := range []struct {
		name    string
		desired []apiv1.EndpointInput
		current []apiv1.EndpointView
		opts    Options
		want    []string // action:name[:fields]
		patch   map[string]any
	}{
		{name: "defaults on both sides are no change",
			desired: []apiv1.EndpointInput{input("a", nil)}, current: []apiv1.EndpointView{view("a", nil)}},
		{name: "equal durations written differently are no change",
			desired: []apiv1.EndpointInput{input("a", func(in *apiv1.EndpointInput) { in.Timeout = "5s"; in.Schedule = "@every 1m" })},
			current: []apiv1.EndpointView{view("a", func(v *apiv1.EndpointView) { v.Timeout = "5s"; v.Schedule = "@every 1m" })}},
		{name: "a new name is created", desired: []apiv1.EndpointInput{input("b", nil)}, current: []apiv1.EndpointView{view("a", nil)},
			want: []string{"create:b"}},
		{name: "without prune the server's extra endpoint stays", desired: nil, current: []apiv1.EndpointView{view("a", nil)}},
		{name: "prune deletes what no file declares", desired: nil, current: []apiv1.EndpointView{view("a", nil)},
			opts: Options{Prune: true}, want: []string{"delete:a"}},
		{name: "changed fields are patched, removed ones nulled",
			desired: []apiv1.EndpointInput{input("a", func(in *apiv1.EndpointInput) {
				in.Schedule = "@every 10s"
				in.Labels = map[string]string{"team": "x"}
			})},
			current: []apiv1.EndpointView{view("a", func(v *apiv1.EndpointView) {
				v.Labels = map[string]string{"team": "y", "env": "dev"}
				v.LatencyThreshold = "2s"
			})},
			want:  []string{"update:a:schedule,latencyThreshold,labels"},
			patch: map[string]any{"schedule": "@every 10s", "latencyThreshold": nil, "labels": map[string]any{"team": "x", "env": nil}}},
		{name: "a timeout left out follows a short schedule's default",
			desired: []apiv1.EndpointInput{input("a", func(in *apiv1.EndpointInput) { in.Schedule = "@every 5s" })},
			current: []apiv1.EndpointView{view("a", func(v *apiv1.EndpointView) { v.Schedule = "@every 5s"; v.Timeout = "5s" })}},
		{name: "header values are not compared, names are",
			desired: []apiv1.EndpointInput{input("a", func(in *apiv1.EndpointInput) { in.Headers = map[string]string{"authorization": "new"} })},
			current: []apiv1.EndpointView{view("a", func(v *apiv1.EndpointView) { v.Headers = map[string]string{"Authorization": apiv1.Redacted} })}},
		{name: "force-secrets re-sends header values",
			desired: []apiv1.EndpointInput{input("a", func(in *apiv1.EndpointInput) { in.Headers = map[string]string{"Authorization": "new"} })},
			current: []apiv1.EndpointView{view("a", func(v *apiv1.EndpointView) { v.Headers = map[string]string{"Authorization": apiv1.Redacted} })},
			opts:    Options{ForceSecrets: true}, want: []string{"update:a:headers"},
			patch: map[string]any{"headers": map[string]any{"Authorization": "new"}}},
		{name: "a removed header is nulled",
			desired: []apiv1.EndpointInput{input("a", func(in *apiv1.EndpointInput) { in.Headers = map[string]string{"X-Key": "k"} })},
			current: []apiv1.EndpointView{view("a", func(v *apiv1.EndpointView) {
				v.Headers = map[string]string{"Authorization": apiv1.Redacted, "X-Key": apiv1.Redacted}
			})},
			want: []string{"update:a:headers"}, patch: map[string]any{"headers": map[string]any{"X-Key": "k", "Authorization": nil}}},
		{name: "a new URL re-sends the headers the server would drop",
			desired: []apiv1.EndpointInput{input("a", func(in *apiv1.EndpointInput) {
				in.URL = "https://other.example.com/mcp"
				in.Headers = map[string]string{"Authorization": "t"}
			})},
			current: []apiv1.EndpointView{view("a", func(v *apiv1.EndpointView) { v.Headers = map[string]string{"Authorization": apiv1.Redacted} })},
			want:    []string{"update:a:url,headers"}},
		{name: "sinks compare after redaction",
			desired: []apiv1.EndpointInput{input("a", func(in *apiv1.EndpointInput) {
				in.Sinks = json.RawMessage(`[{"name":"hook","type":"webhook","url":"https://hooks.example.com/new-token"}]`)
			})},
			current: []apiv1.EndpointView{view("a", func(v *apiv1.EndpointView) {
				v.Sinks = json.RawMessage(`[{"name":"hook","type":"webhook","url":"<redacted>"}]`)
			})}},
		{name: "a sink's visible member differs",
			desired: []apiv1.EndpointInput{input("a", func(in *apiv1.EndpointInput) {
				in.Sinks = json.RawMessage(`[{"name":"hook2","type":"webhook","url":"https://hooks.example.com/t"}]`)
			})},
			current: []apiv1.EndpointView{view("a", func(v *apiv1.EndpointView) {
				v.Sinks = json.RawMessage(`[{"name":"hook","type":"webhook","url":"<redacted>"}]`)
			})},
			want: []string{"update:a:sinks"}},
		{name: "publishing conformance is a change",
			desired: []apiv1.EndpointInput{input("a", func(in *apiv1.EndpointInput) { in.Public, in.Slug, in.PublicConformance = true, "a-mcp", true })},
			current: []apiv1.EndpointView{view("a", func(v *apiv1.EndpointView) { v.Public, v.Slug = true, "a-mcp" })},
			want:    []string{"update:a:publicConformance"}, patch: map[string]any{"publicConformance": true}},
		{name: "traceContext is patched both ways",
			desired: []apiv1.EndpointInput{input("a", func(in *apiv1.EndpointInput) { in.TraceContext = true }), input("b", nil)},
			current: []apiv1.EndpointView{view("a", nil), view("b", func(v *apiv1.EndpointView) { v.TraceContext = true })},
			want:    []string{"update:a:traceContext", "update:b:traceContext"}, patch: map[string]any{"traceContext": true}},
		{name: "regions are compared as sets and patched whole",
			desired: []apiv1.EndpointInput{input("a", func(in *apiv1.EndpointInput) { in.Regions = []string{"us", "loc-office"} }),
				input("b", func(in *apiv1.EndpointInput) { in.Regions = []string{"eu", "us"} })},
			current: []apiv1.EndpointView{view("a", func(v *apiv1.EndpointView) { v.Regions = []string{"eu"} }),
				view("b", func(v *apiv1.EndpointView) { v.Regions = []string{"us", "eu"} })},
			want: []string{"update:a:regions"}, patch: map[string]any{"regions": []string{"loc-office", "us"}}},
		{name: "regions left out of the file are removed",
			desired: []apiv1.EndpointInput{input("a", nil)},
			current: []apiv1.EndpointView{view("a", func(v *apiv1.EndpointView) { v.Regions = []string{"eu"} })},
			want:    []string{"update:a:regions"}, patch: map[string]any{"regions": nil}},
		{name: "credentialWarning compares by value",
			desired: []apiv1.EndpointInput{input("a", func(in *apiv1.EndpointInput) { in.CredentialWarning = "24h" }),
				input("b", func(in *apiv1.EndpointInput) { in.CredentialWarning = "48h" })},
			current: []apiv1.EndpointView{view("a", func(v *apiv1.EndpointView) { v.CredentialWarning = "24h0m0s" }), view("b", nil)},
			want:    []string{"update:b:credentialWarning"}, patch: map[string]any{"credentialWarning": "48h"}},
		{name: "tool arguments compare redacted; a changed expectation re-sends them and nulls what went",
			desired: []apiv1.EndpointInput{
				input("a", func(in *apiv1.EndpointInput) {
					in.ToolCheck = &apiv1.ToolCheckInput{Name: "t", Arguments: json.RawMessage(`{"q":"new"}`), Expect: &apiv1.ToolExpectInput{Contains: "ok"}}
				}),
				input("b", func(in *apiv1.EndpointInput) {
					in.ToolCheck = &apiv1.ToolCheckInput{Name: "t", Arguments: json.RawMessage(`{"q":"x"}`), Expect: &apiv1.ToolExpectInput{JSONPath: "$.ok"}}
				})},
			current: []apiv1.EndpointView{
				view("a", func(v *apiv1.EndpointView) {
					v.ToolCheck = &apiv1.ToolCheckInput{Name: "t", Arguments: json.RawMessage(`{"q":"<redacted>"}`), Expect: &apiv1.ToolExpectInput{Contains: "ok"}}
				}),
				view("b", func(v *apiv1.EndpointView) {
					v.ToolCheck = &apiv1.ToolCheckInput{Name: "t", Arguments: json.RawMessage(`{"q":"<redacted>","old":"<redacted>"}`), Expect: &apiv1.ToolExpectInput{Contains: "ok"}}
				})},
			want: []string{"update:b:toolCheck"},
			patch: map[string]any{"toolCheck": map[string]any{"arguments": map[string]any{"old": nil, "q": "x"},
				"expect": map[string]any{"contains": nil, "equals": nil, "jsonPath": "$.ok"}, "name": "t"}}},
		{name: "a tool check left out of the file is removed; an OAuth client's visible fields are compared",
			desired: []apiv1.EndpointInput{input("a", func(in *apiv1.EndpointInput) {
				in.OAuth = &apiv1.OAuthInput{TokenURL: "https://auth.example.com/token", ClientID: "c2", ClientSecret: "s"}
			})},
			current: []apiv1.EndpointView{view("a", func(v *apiv1.EndpointView) {
				v.ToolCheck = &apiv1.ToolCheckInput{Name: "t"}
				v.OAuth = &apiv1.OAuthInput{TokenURL: "https://auth.example.com/token", ClientID: "c1", ClientSecret: apiv1.Redacted, Scopes: []string{"read"}}
			})},
			want: []string{"update:a:toolCheck,oauth"},
			patch: map[string]any{"toolCheck": nil, "oauth": map[string]any{"audience": nil, "clientId": "c2", "clientSecret": "s",
				"scopes": nil, "tokenUrl": "https://auth.example.com/token"}}},
		{name: "creates, updates and deletes come in that order",
			desired: []apiv1.EndpointInput{input("z", nil), input("m", func(in *apiv1.EndpointInput) { in.Paused = true })},
			current: []apiv1.EndpointView{view("m", nil), view("a", nil)}, opts: Options{Prune: true},
			want: []string{"create:z", "update:m:paused", "delete:a"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := MakePlan(tc.desired, tc.current, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, c := range p.Changes {
				s := string(c.Action) + ":" + c.Name
				if c.Action == Update {
					s += ":" + fields(c)
				}
				got = append(got, s)
			}
			if strings.Join(got, " ") != strings.Join(tc.want, " ") {
				t.Fatalf("plan = %v, want %v", got, tc.want)
			}
			if tc.patch != nil {
				gb, _ := json.Marshal(p.Changes[0].Patch)
				wb, _ := json.Marshal(tc.patch)
				if string(gb) != string(wb) {
					t.Fatalf("patch = %s, want %s", gb, wb)
				}
			}
		})
	}
}

func TestPlanRefusesServerDuplicates(t *testing.T) {
	a1 := view("a", func(v *apiv1.EndpointView) { v.ID = "one" })
	a2 := view("a", func(v *apiv1.EndpointView) { v.ID = "two" })
	_, err := MakePlan([]apiv1.EndpointInput{input("a", nil)}, []apiv1.EndpointView{a1, a2}, Options{})
	if err == nil || !strings.Contains(err.Error(), `"a" (ids one, two)`) {
		t.Fatalf("err = %v, want one naming both IDs", err)
	}
}

func TestLoadRefusesDuplicateNames(t *testing.T) {
	fsys := fstest.MapFS{
		"cfg/a.yaml": {Data: []byte("endpoints:\n  - name: x\n    url: https://a.example.com/mcp\n")},
		"cfg/b.yml":  {Data: []byte("endpoints:\n  - name: x\n    url: https://b.example.com/mcp\n")},
	}
	_, err := Load(fsys, "cfg")
	if err == nil || !strings.Contains(err.Error(), "cfg/a.yaml and cfg/b.yml") {
		t.Fatalf("err = %v, want the two files named", err)
	}
}

func TestParseRefusesUnknownFields(t *testing.T) {
	_, err := Parse([]byte("endpoints:\n  - name: x\n    url: https://a.example.com\n    schedul: '@every 1m'\n"))
	if err == nil || !strings.Contains(err.Error(), "schedul") {
		t.Fatalf("err = %v, want the unknown field named", err)
	}
}

func TestResolveRefusesLiteralSecrets(t *testing.T) {
	env := map[string]string{"TOKEN": "s3cret", "HOOK": "https://hooks.example.com/T0K"}
	r := Resolver{
		Env:          func(k string) (string, bool) { v, ok := env[k]; return v, ok },
		AllowEnv:     []string{"TOKEN", "HOOK", "NOPE"},
		EvalSymlinks: func(p string) (string, error) { return p, nil },
		ReadFile: func(p string) ([]byte, error) {
			if abs, _ := filepath.Abs("dir/key.txt"); p == abs {
				return []byte("filekey\n"), nil
			}
			return nil, os.ErrNotExist
		},
	}
	for _, tc := range []struct {
		name, yaml, wantErr string
		check               func(t *testing.T, in apiv1.EndpointInput)
	}{
		{name: "header from env with a literal prefix", yaml: `headers: {Authorization: "Bearer ${env:TOKEN}"}`,
			check: func(t *testing.T, in apiv1.EndpointInput) {
				if in.Headers["Authorization"] != "Bearer s3cret" {
					t.Fatalf("header = %q", in.Headers["Authorization"])
				}
			}},
		{name: "header from the probing agent", yaml: `headers: {Authorization: "Bearer ${agent:billing-token}"}`,
			check: func(t *testing.T, in apiv1.EndpointInput) {
				if in.Headers["Authorization"] != "Bearer ${agent:billing-token}" {
					t.Fatalf("header = %q, want the agent-side reference as written", in.Headers["Authorization"])
				}
			}},
		{name: "a literal beside an agent reference", yaml: `headers: {Authorization: "sk-live-1${agent:x}"}`, wantErr: "must come from"},
		{name: "header from a file relative to the YAML", yaml: `headers: {X-Key: "${file:key.txt}"}`,
			check: func(t *testing.T, in apiv1.EndpointInput) {
				if in.Headers["X-Key"] != "filekey" {
					t.Fatalf("header = %q", in.Headers["X-Key"])
				}
			}},
		{name: "literal header value", yaml: `headers: {Authorization: "Bearer abc"}`, wantErr: "headers.Authorization"},
		{name: "unset variable", yaml: `headers: {Authorization: "${env:NOPE}"}`, wantErr: "NOPE"},
		{name: "literal sink secret", yaml: `sinks: [{name: h, type: webhook, url: "https://hooks.example.com/T0K"}]`, wantErr: "sinks[0].url"},
		{name: "sink secret from env", yaml: `sinks: [{name: h, type: webhook, url: "${env:HOOK}"}]`,
			check: func(t *testing.T, in apiv1.EndpointInput) {
				if !strings.Contains(string(in.Sinks), "T0K") {
					t.Fatalf("sinks = %s", in.Sinks)
				}
			}},
		{name: "literal URL token", yaml: `url: "https://a.example.com/mcp?token=abc"`, wantErr: `query parameter "token"`},
		{name: "literal OAuth client secret", yaml: `oauth: {clientId: c, clientSecret: abc}`, wantErr: "oauth.clientSecret"},
		{name: "OAuth client secret and a tool argument from env", yaml: "oauth: {clientId: c, clientSecret: \"${env:TOKEN}\"}\n    toolCheck: {name: t, arguments: {q: \"${env:TOKEN}\", n: 7, plain: x}}",
			check: func(t *testing.T, in apiv1.EndpointInput) {
				if in.OAuth.ClientSecret != "s3cret" {
					t.Fatalf("clientSecret = %q", in.OAuth.ClientSecret)
				}
				var args map[string]any
				if err := json.Unmarshal(in.ToolCheck.Arguments, &args); err != nil || args["q"] != "s3cret" || args["n"] != 7.0 || args["plain"] != "x" {
					t.Fatalf("arguments = %s (%v)", in.ToolCheck.Arguments, err)
				}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := "endpoints:\n  - name: e\n    url: https://a.example.com/mcp\n"
			lines := strings.Replace(src, "    url: https://a.example.com/mcp\n", "", 1)
			if !strings.HasPrefix(tc.yaml, "url:") {
				lines = src
			}
			doc, err := Parse([]byte(lines + "    " + tc.yaml + "\n"))
			if err != nil {
				t.Fatal(err)
			}
			got, err := r.Resolve([]Desired{{Input: doc.Endpoints[0], Source: "dir/e.yaml"}})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want it to name %s", err, tc.wantErr)
				}
				if err != nil && (strings.Contains(err.Error(), "abc") || strings.Contains(err.Error(), "T0K")) {
					t.Fatalf("the error quotes the secret: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, got[0])
		})
	}
}

func TestExportPlansNoChange(t *testing.T) {
	views := []apiv1.EndpointView{
		view("a", func(v *apiv1.EndpointView) {
			v.Headers = map[string]string{"Authorization": apiv1.Redacted}
			v.Schedule = "@every 5s"
			v.Timeout = "5s"
			v.Labels = map[string]string{"team": "x"}
			v.Rules = &apiv1.RulesInput{OpenAfter: 2}
			v.Sinks = json.RawMessage(`[{"name":"hook","type":"webhook","url":"https://hooks.example.com/<redacted>"}]`)
		}),
		view("b", func(v *apiv1.EndpointView) { v.Paused = true; v.Timeout = "3s"; v.TraceContext = true }),
		view("c", func(v *apiv1.EndpointView) { v.Public, v.Slug, v.PublicConformance = true, "c-mcp", true }),
		view("d", func(v *apiv1.EndpointView) {
			v.Regions = []string{"eu", "loc-office"}
			v.CredentialWarning = "24h0m0s"
			v.ToolCheck = &apiv1.ToolCheckInput{Name: "balance", Arguments: json.RawMessage(`{"account":"<redacted>","agent":"${agent:acct}"}`),
				Expect: &apiv1.ToolExpectInput{JSONPath: "$.ok", Equals: json.RawMessage(`true`)}}
			v.OAuth = &apiv1.OAuthInput{TokenURL: "https://auth.example.com/token", ClientID: "c", ClientSecret: apiv1.Redacted, Scopes: []string{"read"}}
		}),
	}
	out, err := YAML(Export(views))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(out), apiv1.Redacted) {
		t.Fatalf("export holds a redaction placeholder:\n%s", out)
	}
	doc, err := Parse(out)
	if err != nil {
		t.Fatalf("export does not parse: %v\n%s", err, out)
	}
	env := map[string]string{
		"MCPMON_APPLY_A_AUTHORIZATION":      "tok",
		"MCPMON_APPLY_A_SINK_HOOK_URL":      "https://hooks.example.com/secret",
		"MCPMON_APPLY_D_TOOLCHECK_ACCOUNT":  "acct-7",
		"MCPMON_APPLY_D_OAUTH_CLIENTSECRET": "cs",
	}
	r := Resolver{Env: func(k string) (string, bool) { v, ok := env[k]; return v, ok }, ReadFile: func(string) ([]byte, error) { return nil, errors.New("no files") }}
	ds := make([]Desired, len(doc.Endpoints))
	for i, in := range doc.Endpoints {
		ds[i] = Desired{Input: in, Source: "export.yaml"}
	}
	resolved, err := r.Resolve(ds)
	if err != nil {
		t.Fatalf("resolve the export: %v\n%s", err, out)
	}
	redact := func(raw json.RawMessage) json.RawMessage {
		return json.RawMessage(strings.ReplaceAll(string(raw), "/secret", "/<redacted>"))
	}
	p, err := MakePlan(resolved, views, Options{Prune: true, RedactSinks: redact})
	if err != nil {
		t.Fatal(err)
	}
	if !p.Empty() {
		t.Fatalf("export then plan = %+v, want no change\n%s", p.Changes, out)
	}
}

// TestShowJSONWritesAngleBracketsAsThemselves: a plan names a redacted
// sink URL as .../<redacted>, not in JSON's HTML-safe \u003c escapes.
func TestShowJSONWritesAngleBracketsAsThemselves(t *testing.T) {
	got := showJSON(json.RawMessage(`[{"url":"https://hooks.example.com/<redacted>?a=1&b=2"}]`))
	if want := `[{"url":"https://hooks.example.com/<redacted>?a=1&b=2"}]`; got != want {
		t.Fatalf("showJSON = %s, want %s", got, want)
	}
}
