// The fields of an endpoint beyond its URL and headers that a file may
// declare and apply must keep in step: its regions (and agent locations),
// the credential warning, the tool check and the OAuth client. The tool
// check's arguments and the OAuth client secret are secrets: the server
// shows them redacted (agent-side references as written), so they are
// compared redacted, exported as references and sent again only when the
// rest differs, the URL changes or --force-secrets asks.

package declarative

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"

	apiv1 "github.com/mcpmon/mcpmon/pkg/api/v1"
	"github.com/mcpmon/mcpmon/pkg/model"
)

// diffDeep adds the changes of regions, credentialWarning, toolCheck and
// oauth to set; resend forces the secret-bearing ones out even when their
// redacted forms are equal.
func diffDeep(d apiv1.EndpointInput, cur apiv1.EndpointView, resend bool, set func(field, from, to string, value any)) {
	want, have := slices.Sorted(slices.Values(d.Regions)), slices.Sorted(slices.Values(cur.Regions))
	if !slices.Equal(want, have) {
		var value any
		if len(want) > 0 {
			value = want
		}
		set("regions", showList(have), showList(want), value)
	}
	if !sameDuration(d.CredentialWarning, cur.CredentialWarning) {
		var value any
		if d.CredentialWarning != "" {
			value = d.CredentialWarning
		}
		set("credentialWarning", or(cur.CredentialWarning, "default"), or(d.CredentialWarning, "default"), value)
	}
	if d.ToolCheck != nil || cur.ToolCheck != nil {
		w, h := redactedToolCheck(d.ToolCheck), redactedToolCheck(cur.ToolCheck)
		if !reflect.DeepEqual(w, h) || (resend && d.ToolCheck != nil) {
			set("toolCheck", showJSON(h), showJSON(w), replacePatch(jsonValue(cur.ToolCheck), jsonValue(toolCheckDoc(d.ToolCheck))))
		}
	}
	if d.OAuth != nil || cur.OAuth != nil {
		w, h := redactedOAuth(d.OAuth), redactedOAuth(cur.OAuth)
		if !reflect.DeepEqual(w, h) || (resend && d.OAuth != nil) {
			set("oauth", showJSON(h), showJSON(w), replacePatch(jsonValue(cur.OAuth), jsonValue(oauthDoc(d.OAuth))))
		}
	}
}

// toolCheckDoc is the tool check as a merge patch sends it: every member
// present (null when empty), so merging it into the stored one leaves
// nothing of the old behind.
func toolCheckDoc(tc *apiv1.ToolCheckInput) any {
	if tc == nil {
		return nil
	}
	doc := map[string]any{"name": tc.Name, "arguments": rawOrNil(tc.Arguments), "expect": nil}
	if x := tc.Expect; x != nil {
		doc["expect"] = map[string]any{"contains": orNil(x.Contains), "jsonPath": orNil(x.JSONPath), "equals": rawOrNil(x.Equals)}
	}
	return doc
}

// oauthDoc is the OAuth client as a merge patch sends it.
func oauthDoc(o *apiv1.OAuthInput) any {
	if o == nil {
		return nil
	}
	var scopes any
	if len(o.Scopes) > 0 {
		scopes = o.Scopes
	}
	return map[string]any{"tokenUrl": orNil(o.TokenURL), "clientId": o.ClientID, "clientSecret": o.ClientSecret,
		"scopes": scopes, "audience": orNil(o.Audience)}
}

// redactedToolCheck is the comparable form of a tool check: its arguments
// redacted as the server shows them.
func redactedToolCheck(tc *apiv1.ToolCheckInput) any {
	if tc == nil {
		return nil
	}
	v := jsonValue(tc)
	if m, ok := v.(map[string]any); ok {
		if args, ok := m["arguments"]; ok {
			m["arguments"] = model.RedactLeaves(args)
		}
	}
	return v
}

// redactedOAuth is the comparable form of an OAuth client: its secret
// redacted as the server shows it.
func redactedOAuth(o *apiv1.OAuthInput) any {
	if o == nil {
		return nil
	}
	c := *o
	if c.ClientSecret != "" {
		c.ClientSecret = model.RedactValue(c.ClientSecret)
	}
	return jsonValue(c)
}

// replacePatch is the RFC 7386 merge patch that turns have into want:
// want's members, with every member of have that want lacks set to null,
// at any depth of objects (arrays and scalars replace).
func replacePatch(have, want any) any {
	w, wok := want.(map[string]any)
	h, hok := have.(map[string]any)
	if !wok || !hok {
		return want
	}
	out := make(map[string]any, len(w)+len(h))
	for k, v := range w {
		out[k] = replacePatch(h[k], v)
	}
	for k := range h {
		if _, ok := w[k]; !ok {
			out[k] = nil
		}
	}
	return out
}

// jsonValue is v's JSON form decoded into maps, slices and scalars; nil
// for a nil pointer.
func jsonValue(v any) any {
	if v == nil || reflect.ValueOf(v).Kind() == reflect.Pointer && reflect.ValueOf(v).IsNil() {
		return nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	var out any
	if json.Unmarshal(b, &out) != nil {
		return nil
	}
	return out
}

func rawOrNil(raw json.RawMessage) any {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	return raw
}

func orNil(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func showList(l []string) string { return "[" + strings.Join(l, ", ") + "]" }

// exportDeep copies the deep-check fields of a view into an exported
// input: a redacted tool argument or client secret becomes a reference
// to the environment variable PlaceholderName(endpoint, "toolCheck", path…)
// or (endpoint, "oauth", "clientSecret"); agent-side references stay as
// written. A tool argument that was not a string comes back as a
// reference to a string: edit the file if the tool wants a number.
func exportDeep(v apiv1.EndpointView, in *apiv1.EndpointInput) {
	in.Regions = slices.Clone(v.Regions)
	in.CredentialWarning = v.CredentialWarning
	if tc := v.ToolCheck; tc != nil {
		out := &apiv1.ToolCheckInput{Name: tc.Name, Expect: tc.Expect}
		var args any
		if len(tc.Arguments) > 0 && json.Unmarshal(tc.Arguments, &args) == nil {
			args = mapStrings(args, "", func(path, s string) string {
				if s != model.Redacted {
					return s
				}
				return ref(PlaceholderName(v.Name, "toolCheck"+strings.ReplaceAll(path, ".", "_")))
			})
			out.Arguments, _ = json.Marshal(args)
		}
		in.ToolCheck = out
	}
	if o := v.OAuth; o != nil {
		out := *o
		out.Scopes = slices.Clone(o.Scopes)
		if out.ClientSecret == model.Redacted {
			out.ClientSecret = ref(PlaceholderName(v.Name, "oauth", "clientSecret"))
		}
		in.OAuth = &out
	}
}

// resolveDeep fills in the references of a tool check's arguments (a
// literal argument is kept: many are not secret) and of the OAuth client
// secret, which, like a header value, must come from a reference or be an
// agent-side one.
func (r Resolver) resolveDeep(in *apiv1.EndpointInput, base string) error {
	if tc := in.ToolCheck; tc != nil && len(tc.Arguments) > 0 && hasRef(string(tc.Arguments)) {
		var args any
		if err := json.Unmarshal(tc.Arguments, &args); err != nil {
			return fmt.Errorf("toolCheck.arguments: %w", err)
		}
		var first error
		args = mapStrings(args, "toolCheck.arguments", func(path, s string) string {
			v, err := r.expand(s, base)
			if err != nil && first == nil {
				first = fmt.Errorf("%s: %w", path, err)
			}
			return v
		})
		if first != nil {
			return first
		}
		c := *tc
		c.Arguments, _ = json.Marshal(args)
		in.ToolCheck = &c
	}
	if o := in.OAuth; o != nil && o.ClientSecret != "" {
		if !hasRef(o.ClientSecret) && !model.AgentOnly(o.ClientSecret) {
			return fmt.Errorf("oauth.clientSecret: the client secret must come from ${env:NAME} or ${file:PATH}, or from the probing agent as ${agent:NAME}, not be written %s", r.writtenIn())
		}
		v, err := r.expand(o.ClientSecret, base)
		if err != nil {
			return fmt.Errorf("oauth.clientSecret: %w", err)
		}
		c := *o
		c.ClientSecret = v
		in.OAuth = &c
	}
	return nil
}
