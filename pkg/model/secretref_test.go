package model

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestAgentRefSyntax(t *testing.T) {
	long := strings.Repeat("n", MaxSecretNameLen)
	for _, tc := range []struct {
		in      string
		names   []string
		bad     bool
		onlyRef bool // AgentOnly
	}{
		{in: "plain value"},
		{in: "", names: nil},
		{in: "${agent:billing-token}", names: []string{"billing-token"}, onlyRef: true},
		{in: "Bearer ${agent:billing-token}", names: []string{"billing-token"}, onlyRef: true},
		{in: "bearer ${agent:a}", names: []string{"a"}, onlyRef: true},
		{in: "${agent:user}:${agent:pass}", names: []string{"user", "pass"}, onlyRef: true},
		{in: "${agent:a}${agent:a}", names: []string{"a"}, onlyRef: true},
		{in: "sk-live-123${agent:a}", names: []string{"a"}},      // a literal beside it may be a secret
		{in: "Bearer ${agent:a} trailing", names: []string{"a"}}, // likewise
		{in: "$${agent:x}", names: []string{"x"}},                // no escape: "$" then a reference
		{in: "${agent:A.b_c-9}", names: []string{"A.b_c-9"}, onlyRef: true},
		{in: "${agent:" + long + "}", names: []string{long}, onlyRef: true},
		{in: "${env:x}", names: nil}, // not ours
		{in: "${agent:}", bad: true},
		{in: "${agent:${agent:x}}", bad: true},
		{in: "${agent:x", bad: true},
		{in: "${agent:", bad: true},
		{in: "${agent:x y}", bad: true},
		{in: "${agent:x}${agent:", bad: true},
		{in: "${agent:" + long + "n}", bad: true},
		{in: "${agent:" + strings.Repeat("n", 10<<10) + "}", bad: true},
	} {
		names, err := AgentRefs(tc.in)
		if tc.bad != (err != nil) || !tc.bad && !slices.Equal(names, tc.names) {
			t.Errorf("AgentRefs(%.40q) = %v, %v; want %v (malformed %v)", tc.in, names, err, tc.names, tc.bad)
		}
		if tc.bad && !errors.Is(err, ErrBadAgentRef) {
			t.Errorf("AgentRefs(%.40q) error %v is not ErrBadAgentRef", tc.in, err)
		}
		if got := AgentOnly(tc.in); got != tc.onlyRef {
			t.Errorf("AgentOnly(%.40q) = %v, want %v", tc.in, got, tc.onlyRef)
		}
	}
}

func TestBadAgentRefErrorQuotesNoValue(t *testing.T) {
	_, err := AgentRefs("hunter2-secret ${agent:x")
	if err == nil || strings.Contains(err.Error(), "hunter2") || !strings.Contains(err.Error(), "at byte 15") {
		t.Fatalf("error %v: want the offset, not the value", err)
	}
}

func TestExpandAgentRefs(t *testing.T) {
	secrets := map[string]string{"tok": "s3cret", "empty": ""}
	lookup := func(n string) (string, bool) { v, ok := secrets[n]; return v, ok }
	for _, tc := range []struct{ in, out, missing string }{
		{"Bearer ${agent:tok}", "Bearer s3cret", ""},
		{"${agent:tok}/${agent:tok}", "s3cret/s3cret", ""},
		{"x${agent:empty}y", "xy", ""},
		{"${agent:nope} and ${agent:tok} and ${agent:nope}", "${agent:nope} and s3cret and ${agent:nope}", "nope"},
		{"no refs ${ at all }", "no refs ${ at all }", ""},
	} {
		out, missing, err := ExpandAgentRefs(tc.in, lookup)
		if err != nil || out != tc.out || strings.Join(missing, ",") != tc.missing {
			t.Errorf("ExpandAgentRefs(%q) = %q, %v, %v; want %q, [%s]", tc.in, out, missing, err, tc.out, tc.missing)
		}
	}
}

func TestEndpointAgentRefs(t *testing.T) {
	ep := Endpoint{
		Headers:   map[string]string{"Authorization": "Bearer ${agent:billing-token}", "X-Trace": "plain", "X/Odd": "${agent:bad"},
		OAuth:     &OAuthClient{ClientID: "${agent:cid}", ClientSecret: "${agent:csecret}"},
		ToolCheck: &ToolCheck{Name: "t", Arguments: json.RawMessage(`{"b":["${agent:zz}",1],"a":{"k":"${agent:aa}"}}`)},
	}
	uses, errs := ep.AgentRefs()
	want := []AgentRefUse{{"headers/Authorization", "billing-token"}, {"oauth/clientId", "cid"}, {"oauth/clientSecret", "csecret"},
		{"toolCheck/arguments", "aa"}, {"toolCheck/arguments", "zz"}}
	if !slices.Equal(uses, want) {
		t.Errorf("uses = %v, want %v", uses, want)
	}
	if len(errs) != 1 || errs[0].Field != "headers/X~1Odd" {
		t.Errorf("errs = %v, want one for headers/X~1Odd", errs)
	}
}

func TestAgentRefsNeedAgentOnlyRegions(t *testing.T) {
	ref := Endpoint{Headers: map[string]string{"Authorization": "Bearer ${agent:tok}"}}
	for _, tc := range []struct {
		regions []string
		ok      bool
	}{
		{nil, false},
		{[]string{"eu"}, false},
		{[]string{"eu", "loc-office"}, false},
		{[]string{"loc-office"}, true},
		{[]string{"loc-office", "loc-dc-2"}, true},
	} {
		ep := ref
		ep.Regions = tc.regions
		errs := ValidateAgentRefs(ep)
		if tc.ok != (len(errs) == 0) {
			t.Errorf("regions %v: errors %v, want ok %v", tc.regions, errs, tc.ok)
		}
		if !tc.ok && (errs[0].Field != "regions" || !strings.Contains(errs[0].Detail, "#/headers/Authorization") || !strings.Contains(errs[0].Detail, "loc-")) {
			t.Errorf("regions %v: error %v should be at regions, name the field and the fix", tc.regions, errs)
		}
	}
	if errs := ValidateAgentRefs(Endpoint{Headers: map[string]string{"A": "b"}}); len(errs) != 0 {
		t.Errorf("an endpoint without references: %v", errs)
	}
}

func TestCentralSecrets(t *testing.T) {
	for _, tc := range []struct {
		name    string
		ep      Endpoint
		central bool
	}{
		{"none", Endpoint{URL: "https://a.example/mcp"}, false},
		{"agent-only header", Endpoint{Headers: map[string]string{"Authorization": "Bearer ${agent:t}"}}, false},
		{"plain header", Endpoint{Headers: map[string]string{"Authorization": "Bearer ${agent:t}", "X-Key": "k"}}, true},
		{"mixed header", Endpoint{Headers: map[string]string{"Authorization": "abc${agent:t}"}}, true},
		{"agent-only oauth", Endpoint{OAuth: &OAuthClient{ClientID: "id", ClientSecret: "${agent:cs}"}}, false},
		{"central oauth", Endpoint{OAuth: &OAuthClient{ClientID: "${agent:id}", ClientSecret: "cs"}}, true},
		{"agent-only args", Endpoint{ToolCheck: &ToolCheck{Arguments: json.RawMessage(`{"a":"${agent:x}","b":null,"c":["${agent:y}"]}`)}}, false},
		{"a number is a secret", Endpoint{ToolCheck: &ToolCheck{Arguments: json.RawMessage(`{"a":"${agent:x}","n":5}`)}}, true},
		{"plain args", Endpoint{ToolCheck: &ToolCheck{Arguments: json.RawMessage(`{"a":"v"}`)}}, true},
		{"query secret", Endpoint{URL: "https://a.example/mcp?api_key=k"}, true},
	} {
		if got := CentralSecrets(tc.ep); got != tc.central {
			t.Errorf("%s: CentralSecrets = %v, want %v", tc.name, got, tc.central)
		}
	}
}

func TestResolveAgentRefs(t *testing.T) {
	ep := Endpoint{ID: "e",
		Headers:   map[string]string{"Authorization": "Bearer ${agent:tok}", "X-Plain": "p"},
		OAuth:     &OAuthClient{ClientID: "cid", ClientSecret: "${agent:cs}"},
		ToolCheck: &ToolCheck{Name: "t", Arguments: json.RawMessage(`{"acct":"${agent:acct}","n":12345678901234567890}`)},
	}
	secrets := map[string]string{"tok": "T0K", "cs": "C\"S", "acct": "ACCT"}
	lookup := func(n string) (string, bool) { v, ok := secrets[n]; return v, ok }
	out, values, missing, err := ResolveAgentRefs(ep, lookup)
	if err != nil || len(missing) != 0 {
		t.Fatalf("resolve: %v, missing %v", err, missing)
	}
	if out.Headers["Authorization"] != "Bearer T0K" || out.Headers["X-Plain"] != "p" || out.OAuth.ClientSecret != `C"S` {
		t.Errorf("resolved endpoint %+v %+v", out.Headers, out.OAuth)
	}
	var args map[string]json.RawMessage
	if err := json.Unmarshal(out.ToolCheck.Arguments, &args); err != nil || string(args["acct"]) != `"ACCT"` || string(args["n"]) != "12345678901234567890" {
		t.Errorf("resolved arguments %s (%v)", out.ToolCheck.Arguments, err)
	}
	slices.Sort(values)
	if !slices.Equal(values, []string{"ACCT", `C"S`, "T0K"}) {
		t.Errorf("values = %q", values)
	}
	if ep.Headers["Authorization"] != "Bearer ${agent:tok}" || ep.OAuth.ClientSecret != "${agent:cs}" || !strings.Contains(string(ep.ToolCheck.Arguments), "${agent:acct}") {
		t.Error("ResolveAgentRefs changed its input")
	}
	delete(secrets, "cs")
	delete(secrets, "acct")
	if _, _, missing, _ := ResolveAgentRefs(ep, lookup); !slices.Equal(missing, []string{"acct", "cs"}) {
		t.Errorf("missing = %v, want [acct cs]", missing)
	}
}

// FuzzAgentRefs: parsing never panics; a value that parses names only
// valid names, expands with every reference gone, and expands back to
// itself when each name maps to its own reference.
func FuzzAgentRefs(f *testing.F) {
	for _, s := range []string{"${agent:}", "${agent:${agent:x}}", "${agent:x", "$${agent:x}", "Bearer ${agent:billing-token}",
		"${agent:" + strings.Repeat("a", 10<<10) + "}", "${agent:a}${agent:b}", "${agent:a}}", "${{agent:a}", "${agent:é}", "\x00${agent:a}"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		names, err := AgentRefs(s)
		only := AgentOnly(s)
		if err != nil {
			if only {
				t.Fatalf("AgentOnly(%q) though malformed", s)
			}
			return
		}
		for _, n := range names {
			if !ValidSecretName(n) {
				t.Fatalf("AgentRefs(%q) named %q", s, n)
			}
		}
		if only && len(names) == 0 {
			t.Fatalf("AgentOnly(%q) without a reference", s)
		}
		out, missing, err := ExpandAgentRefs(s, func(string) (string, bool) { return "<v>", true })
		if err != nil || len(missing) != 0 || strings.Contains(out, agentRefOpen) {
			t.Fatalf("ExpandAgentRefs(%q) = %q, %v, %v", s, out, missing, err)
		}
		back, _, _ := ExpandAgentRefs(s, func(n string) (string, bool) { return agentRefOpen + n + "}", true })
		if back != s {
			t.Fatalf("identity expansion of %q = %q", s, back)
		}
	})
}
