package declarative

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	apiv1 "github.com/mcpmon/mcpmon/pkg/api/v1"
	"github.com/mcpmon/mcpmon/pkg/model"
)

// Export turns the server's endpoints into a Document that apply accepts
// and that plans no change against the same server. Secrets are never in
// a view, so each becomes a reference to an environment variable named
// from the endpoint and the field (PlaceholderName): set those variables
// (or edit the references) before applying the file elsewhere.
//
// Defaults are left out (transport auto, the default schedule and the
// timeout the server derives from it), so the file says only what was
// chosen.
func Export(views []apiv1.EndpointView) Document {
	views = slices.Clone(views)
	sort.Slice(views, func(i, j int) bool { return views[i].Name < views[j].Name })
	doc := Document{Endpoints: make([]apiv1.EndpointInput, 0, len(views))}
	for _, v := range views {
		in := apiv1.EndpointInput{
			Name: v.Name, URL: exportURL(v.Name, v.URL), ProtocolVersion: v.ProtocolVersion,
			LatencyThreshold: v.LatencyThreshold, Labels: v.Labels, Rules: v.Rules,
			Paused: v.Paused, Public: v.Public, Slug: v.Slug, TraceContext: v.TraceContext,
		}
		in.PublicConformance = v.PublicConformance
		if v.Transport != apiv1.DefaultTransport {
			in.Transport = v.Transport
		}
		if v.Schedule != apiv1.DefaultSchedule {
			in.Schedule = v.Schedule
		}
		if def := DefaultTimeout(v.Schedule); def == "" || !sameDuration(def, v.Timeout) {
			in.Timeout = v.Timeout
		}
		if len(v.Headers) > 0 {
			in.Headers = map[string]string{}
			for _, k := range slices.Sorted(maps.Keys(v.Headers)) {
				in.Headers[k] = ref(PlaceholderName(v.Name, k))
				if model.AgentOnly(v.Headers[k]) {
					in.Headers[k] = v.Headers[k] // an agent-side reference: a name, shown as written
				}
			}
		}
		if len(v.Sinks) > 0 && string(v.Sinks) != "null" {
			in.Sinks = exportSinks(v.Name, v.Sinks)
		}
		exportDeep(v, &in)
		doc.Endpoints = append(doc.Endpoints, in)
	}
	return doc
}

// PlaceholderName is the environment variable an exported file reads a
// secret from: MCPMON_APPLY_<ENDPOINT>_<FIELD...>, upper case, every
// character outside [A-Z0-9] an underscore. For the header Authorization of
// endpoint "search-api": MCPMON_APPLY_SEARCH_API_AUTHORIZATION. The prefix
// is DefaultAllowEnv's, so an exported file applies without --allow-env.
func PlaceholderName(parts ...string) string {
	s := strings.ToUpper(DefaultAllowEnv[0] + strings.Join(parts, "_"))
	return strings.Map(func(r rune) rune {
		if r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			return r
		}
		return '_'
	}, s)
}

func ref(name string) string { return "${env:" + name + "}" }

// exportURL replaces each redacted query parameter value with a reference.
func exportURL(endpoint, u string) string {
	base, q, ok := strings.Cut(u, "?")
	if !ok || !strings.Contains(q, apiv1.Redacted) {
		return u
	}
	pairs := strings.Split(q, "&")
	for i, p := range pairs {
		name, val, _ := strings.Cut(p, "=")
		if val == apiv1.Redacted {
			pairs[i] = name + "=" + ref(PlaceholderName(endpoint, "url", name))
		}
	}
	return base + "?" + strings.Join(pairs, "&")
}

// exportSinks replaces every redacted string in a sinks document with a
// reference named after the sink (its name member, else its index) and
// member. A value the server kept partly (a webhook URL shown as
// scheme://host/<redacted>) is replaced whole: the host alone is not the
// secret's value.
func exportSinks(endpoint string, raw json.RawMessage) json.RawMessage {
	var doc any
	if json.Unmarshal(raw, &doc) != nil {
		return raw
	}
	if list, ok := doc.([]any); ok {
		for i, s := range list {
			m, ok := s.(map[string]any)
			if !ok {
				continue
			}
			label := fmt.Sprint(i)
			if n, ok := m["name"].(string); ok && n != "" {
				label = n
			}
			list[i] = mapStrings(m, "", func(path, s string) string {
				if !strings.Contains(s, apiv1.Redacted) {
					return s
				}
				return ref(PlaceholderName(endpoint, "sink", label, strings.TrimPrefix(path, ".")))
			})
		}
	}
	b, err := json.Marshal(doc)
	if err != nil {
		return raw
	}
	return b
}
