package declarative

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"reflect"
	"slices"
	"sort"
	"strings"
	"time"

	apiv1 "github.com/mcpmon/mcpmon/pkg/api/v1"
	"github.com/mcpmon/mcpmon/pkg/model"
)

// Action is what a Change does to the server.
type Action string

const (
	Create Action = "create"
	Update Action = "update"
	Delete Action = "delete"
)

// FieldChange is one field an update changes, with display values that
// never hold a secret (headers show names, sinks show redacted JSON).
type FieldChange struct {
	Field string `json:"field"`
	From  string `json:"from"`
	To    string `json:"to"`
}

// Change is one step of a plan.
type Change struct {
	Action Action `json:"action"`
	// Kind is KindStatusPage for a status page (Name its slug); empty for
	// an endpoint.
	Kind string `json:"kind,omitempty"`
	Name string `json:"name"`
	// ID and Version are the server's endpoint (update, delete); an update
	// is sent with If-Match on Version, so a change made since the plan was
	// read is refused rather than overwritten.
	ID      string        `json:"id,omitempty"`
	Version int64         `json:"version,omitempty"`
	Fields  []FieldChange `json:"fields,omitempty"`
	// Input is what a create sends (secrets resolved: never print it).
	Input *apiv1.EndpointInput `json:"-"`
	// Patch is the JSON merge patch an update sends (secrets resolved).
	Patch map[string]any `json:"-"`
	// Page is the whole page a status page's create or update sends.
	Page *apiv1.StatusPageInput `json:"-"`
}

// Plan is the ordered list of changes: creates, then updates, then
// deletes, each by name.
type Plan struct {
	Changes []Change `json:"changes"`
}

// Empty reports whether the plan changes nothing.
func (p Plan) Empty() bool { return len(p.Changes) == 0 }

// Options tune MakePlan.
type Options struct {
	// Prune deletes the server's endpoints that no file declares.
	Prune bool
	// ForceSecrets re-sends the headers and sinks of every declared
	// endpoint that has any, since a changed secret value is invisible in
	// a diff.
	ForceSecrets bool
	// RedactSinks is the server's sinks redactor; nil uses model.RedactSinks.
	RedactSinks func(json.RawMessage) json.RawMessage
}

// MakePlan compares desired (resolved endpoints, unique names) with
// current (the server's endpoints of the tenant) and returns the changes
// that make the server match. It refuses to plan when the server holds two
// endpoints of one name: which one a file means would be a guess.
func MakePlan(desired []apiv1.EndpointInput, current []apiv1.EndpointView, o Options) (Plan, error) {
	if o.RedactSinks == nil {
		o.RedactSinks = model.RedactSinks
	}
	byName := map[string][]apiv1.EndpointView{}
	for _, v := range current {
		byName[v.Name] = append(byName[v.Name], v)
	}
	var dups []string
	for _, name := range slices.Sorted(maps.Keys(byName)) {
		if vs := byName[name]; len(vs) > 1 {
			ids := make([]string, len(vs))
			for i, v := range vs {
				ids[i] = v.ID
			}
			dups = append(dups, fmt.Sprintf("%q (ids %s)", name, strings.Join(ids, ", ")))
		}
	}
	if len(dups) > 0 {
		return Plan{}, fmt.Errorf("the server holds more than one endpoint named %s: apply matches endpoints by name; rename or delete the extra ones (mcpmon endpoints rm ID) first", strings.Join(dups, "; "))
	}
	seen := map[string]bool{}
	var creates, updates, deletes []Change
	for _, d := range desired {
		if seen[d.Name] {
			return Plan{}, fmt.Errorf("endpoint name %q is declared twice: names must be unique", d.Name)
		}
		seen[d.Name] = true
		cur, ok := byName[d.Name]
		if !ok {
			in := d
			creates = append(creates, Change{Action: Create, Name: d.Name, Input: &in})
			continue
		}
		if c, changed := diff(d, cur[0], o); changed {
			updates = append(updates, c)
		}
	}
	if o.Prune {
		for _, v := range current {
			if !seen[v.Name] {
				deletes = append(deletes, Change{Action: Delete, Name: v.Name, ID: v.ID, Version: v.Version})
			}
		}
	}
	for _, cs := range [][]Change{creates, updates, deletes} {
		sort.SliceStable(cs, func(i, j int) bool { return cs[i].Name < cs[j].Name })
	}
	return Plan{Changes: append([]Change{}, slices.Concat(creates, updates, deletes)...)}, nil
}

// diff compares one desired endpoint with the server's and builds the
// merge patch of what differs. An empty desired field means the server's
// default: a field set on the server is patched back to null.
func diff(d apiv1.EndpointInput, cur apiv1.EndpointView, o Options) (Change, bool) {
	c := Change{Action: Update, Name: d.Name, ID: cur.ID, Version: cur.Version, Patch: map[string]any{}}
	set := func(field, from, to string, value any) {
		c.Fields = append(c.Fields, FieldChange{Field: field, From: from, To: to})
		c.Patch[field] = value
	}
	orNull := func(s string) any {
		if s == "" {
			return nil
		}
		return s
	}

	urlChanged := model.RedactURL(strings.TrimSpace(d.URL)) != cur.URL
	if urlChanged {
		set("url", cur.URL, model.RedactURL(d.URL), d.URL)
	}
	if want := or(d.Transport, apiv1.DefaultTransport); want != cur.Transport {
		set("transport", cur.Transport, want, orNull(d.Transport))
	}
	if d.ProtocolVersion != cur.ProtocolVersion {
		set("protocolVersion", cur.ProtocolVersion, d.ProtocolVersion, orNull(d.ProtocolVersion))
	}
	schedule := or(strings.TrimSpace(d.Schedule), apiv1.DefaultSchedule)
	if schedule != cur.Schedule {
		set("schedule", cur.Schedule, schedule, orNull(strings.TrimSpace(d.Schedule)))
	}
	if d.Timeout == "" {
		if def := DefaultTimeout(schedule); def != "" && !sameDuration(def, cur.Timeout) {
			set("timeout", cur.Timeout, "default ("+def+")", nil)
		}
	} else if !sameDuration(d.Timeout, cur.Timeout) {
		set("timeout", cur.Timeout, d.Timeout, d.Timeout)
	}
	if !sameDuration(d.LatencyThreshold, cur.LatencyThreshold) {
		set("latencyThreshold", cur.LatencyThreshold, d.LatencyThreshold, orNull(d.LatencyThreshold))
	}

	// Secrets: compare names only; send values when names differ, when the
	// URL changes (the server drops stored headers on a new origin unless
	// the request sends them again) or when forced.
	wantH, curH := sortedNames(d.Headers), sortedNames(cur.Headers)
	if !slices.Equal(wantH, curH) || (urlChanged && len(wantH) > 0) || (o.ForceSecrets && len(wantH) > 0) {
		patch := map[string]any{}
		for k, v := range d.Headers {
			patch[http.CanonicalHeaderKey(k)] = v
		}
		for _, k := range curH {
			if _, ok := patch[k]; !ok {
				patch[k] = nil
			}
		}
		var value any = patch
		if len(d.Headers) == 0 {
			value = nil
		}
		set("headers", "["+strings.Join(curH, ", ")+"]", "["+strings.Join(wantH, ", ")+"]", value)
	}

	if !sameMap(d.Labels, cur.Labels) {
		var value any
		if len(d.Labels) > 0 {
			patch := map[string]any{}
			for k, v := range d.Labels {
				patch[k] = v
			}
			for k := range cur.Labels {
				if _, ok := d.Labels[k]; !ok {
					patch[k] = nil
				}
			}
			value = patch
		}
		set("labels", showMap(cur.Labels), showMap(d.Labels), value)
	}

	if !sameRules(d.Rules, cur.Rules) {
		var value any
		if r := d.Rules; r != nil && *r != (apiv1.RulesInput{}) {
			value = map[string]any{"openAfter": r.OpenAfter, "openWindow": r.OpenWindow, "resolveAfter": r.ResolveAfter,
				"regionQuorum": r.RegionQuorum, "repeatInterval": orNull(r.RepeatInterval)}
		}
		set("rules", showJSON(cur.Rules), showJSON(d.Rules), value)
	}

	wantSinks := canonical(o.RedactSinks, d.Sinks)
	curSinks := canonical(nil, cur.Sinks)
	if !reflect.DeepEqual(wantSinks, curSinks) || (o.ForceSecrets && wantSinks != nil) {
		var value any
		if wantSinks != nil {
			value = json.RawMessage(d.Sinks)
		}
		set("sinks", showJSON(curSinks), showJSON(wantSinks), value)
	}

	diffDeep(d, cur, urlChanged || o.ForceSecrets, set)

	if d.Paused != cur.Paused {
		set("paused", fmt.Sprint(cur.Paused), fmt.Sprint(d.Paused), d.Paused)
	}
	if d.Public != cur.Public {
		set("public", fmt.Sprint(cur.Public), fmt.Sprint(d.Public), d.Public)
	}
	if d.Slug != cur.Slug {
		set("slug", cur.Slug, d.Slug, orNull(d.Slug))
	}
	if d.PublicConformance != cur.PublicConformance {
		set("publicConformance", fmt.Sprint(cur.PublicConformance), fmt.Sprint(d.PublicConformance), d.PublicConformance)
	}
	if d.TraceContext != cur.TraceContext {
		set("traceContext", fmt.Sprint(cur.TraceContext), fmt.Sprint(d.TraceContext), d.TraceContext)
	}
	return c, len(c.Fields) > 0
}

// DefaultTimeout is the timeout the server gives an endpoint of schedule
// without one: 10s, clamped to an "@every" interval (at least 1s). For
// other schedules it returns "" (unknown: no diff is made on it).
func DefaultTimeout(schedule string) string {
	if schedule == apiv1.DefaultSchedule || schedule == "" {
		return apiv1.DefaultTimeout.String()
	}
	every, ok := strings.CutPrefix(schedule, "@every ")
	if !ok {
		return ""
	}
	d, err := time.ParseDuration(strings.TrimSpace(every))
	if err != nil || d <= 0 {
		return ""
	}
	return max(min(apiv1.DefaultTimeout, d), apiv1.MinTimeout).String()
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// sameDuration compares two Go durations by value ("1m" equals "1m0s");
// strings that do not parse compare as text.
func sameDuration(a, b string) bool {
	if a == b {
		return true
	}
	da, err1 := time.ParseDuration(a)
	db, err2 := time.ParseDuration(b)
	return err1 == nil && err2 == nil && da == db
}

func sameMap(a, b map[string]string) bool {
	if len(a) == 0 && len(b) == 0 {
		return true
	}
	return maps.Equal(a, b)
}

func sameRules(a, b *apiv1.RulesInput) bool {
	var x, y apiv1.RulesInput
	if a != nil {
		x = *a
	}
	if b != nil {
		y = *b
	}
	if !sameDuration(x.RepeatInterval, y.RepeatInterval) {
		return false
	}
	x.RepeatInterval, y.RepeatInterval = "", ""
	return x == y
}

// canonical parses a sinks document (after redact, when given) into a
// comparable value; nil for none.
func canonical(redact func(json.RawMessage) json.RawMessage, raw json.RawMessage) any {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	if redact != nil {
		raw = redact(raw)
	}
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return string(raw)
	}
	return v
}

func showMap(m map[string]string) string {
	if len(m) == 0 {
		return "{}"
	}
	parts := make([]string, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, k+"="+m[k])
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

func showJSON(v any) string {
	if v == nil || reflect.ValueOf(v).Kind() == reflect.Pointer && reflect.ValueOf(v).IsNil() {
		return "none"
	}
	// Not json.Marshal: it writes < > & as \u003c…, and a plan is read by
	// people, to whom a redacted URL is ".../<redacted>".
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return "?"
	}
	return strings.TrimSuffix(b.String(), "\n")
}
