package registry

import (
	"cmp"
	"fmt"
	"maps"
	"slices"

	apiv1 "github.com/mcpmon/mcpmon/pkg/api/v1"
	"github.com/mcpmon/mcpmon/pkg/model"
)

// DefaultMaxCreate bounds the endpoints one import creates when
// PlanOptions.MaxCreate is 0: a first import of a large registry (or a
// wrong --url) should not register thousands of probes in one go.
const DefaultMaxCreate = 100

// PlanOptions shape a plan.
type PlanOptions struct {
	// Full says the listing is complete: an imported endpoint it does not
	// ask for is removed. A sync (updated_since) delta is not complete:
	// only endpoints of servers it touches are reconciled.
	Full bool
	// Schedule and Timeout of new endpoints; empty takes mcpmon's
	// defaults. Updates never change them (people tune them).
	Schedule string
	Timeout  string
	// MaxCreate bounds creates; 0 is DefaultMaxCreate, negative no bound.
	// Creates past it are reported as skipped and made by a later import.
	MaxCreate int
}

// Create is an endpoint to register.
type Create struct {
	Desired
	Input apiv1.EndpointInput
}

// Update is a merge patch for an imported endpoint that drifted from its
// registry entry.
type Update struct {
	ID string
	Desired
	Fields []string       // what changed, for the report
	Patch  map[string]any // JSON merge patch body
}

// Remove is an imported endpoint the registry no longer asks for.
type Remove struct {
	ID     string
	Name   string
	Server string
	URL    string
	Reason string
}

// Plan is what an import would do.
type Plan struct {
	Creates   []Create
	Updates   []Update
	Removes   []Remove
	Skips     []Skip
	Unchanged int
	// Deferred counts creates over MaxCreate (also in Skips).
	Deferred int
}

// MakePlan compares what the registry asks for with the imported endpoints
// mcpmon has (existing: every endpoint carrying the source label). It is
// pure. Endpoints are matched by LabelKey; in a sync only endpoints of
// touched servers are in scope, in a full import all of them are.
func MakePlan(d Desire, existing []apiv1.EndpointView, opts PlanOptions) Plan {
	p := Plan{Skips: slices.Clone(d.Skips)}
	inScope := func(e apiv1.EndpointView) bool { return opts.Full || d.Touched[e.Labels[LabelServerID]] }

	byKey := map[string][]apiv1.EndpointView{}
	taken := map[string]string{} // normalized URL → name, of endpoints this plan keeps but does not own
	for _, e := range existing {
		key := e.Labels[LabelKey]
		if !inScope(e) {
			if n, err := normalizeURL(e.URL); err == nil {
				taken[n] = e.Name
			}
			continue
		}
		if key == "" {
			p.Skips = append(p.Skips, Skip{Server: e.Labels[LabelServer], URL: e.URL,
				Reason: fmt.Sprintf("endpoint %s (%q) has the source label but no %s label; left alone", e.ID, e.Name, LabelKey)})
			continue
		}
		byKey[key] = append(byKey[key], e)
	}
	for _, es := range byKey {
		slices.SortFunc(es, func(a, b apiv1.EndpointView) int { return cmp.Compare(a.ID, b.ID) })
	}

	limit := opts.MaxCreate
	if limit == 0 {
		limit = DefaultMaxCreate
	}
	wanted := map[string]bool{}
	for _, want := range d.Endpoints {
		wanted[want.Key] = true
		es := byKey[want.Key]
		if len(es) == 0 {
			if n, _ := normalizeURL(want.URL); taken[n] != "" {
				p.Skips = append(p.Skips, Skip{Server: want.Server, Version: want.Version, URL: want.URL,
					Reason: fmt.Sprintf("same URL as imported endpoint %q", taken[n])})
				continue
			}
			if limit >= 0 && len(p.Creates) >= limit {
				p.Deferred++
				p.Skips = append(p.Skips, Skip{Server: want.Server, Version: want.Version, URL: want.URL,
					Reason: fmt.Sprintf("over the limit of %d creates per import; the next import creates it", limit)})
				continue
			}
			p.Creates = append(p.Creates, Create{Desired: want, Input: apiv1.EndpointInput{
				Name: want.Name, URL: want.URL, Transport: want.Transport, Schedule: opts.Schedule,
				Timeout: opts.Timeout, Headers: want.Headers, Labels: want.Labels,
			}})
			continue
		}
		if u, ok := diff(es[0], want); ok {
			p.Updates = append(p.Updates, u)
		} else {
			p.Unchanged++
		}
		for _, dup := range es[1:] {
			p.Removes = append(p.Removes, Remove{ID: dup.ID, Name: dup.Name, Server: want.Server, URL: dup.URL,
				Reason: fmt.Sprintf("duplicate of endpoint %s", es[0].ID)})
		}
	}
	for _, key := range slices.Sorted(maps.Keys(byKey)) {
		if wanted[key] {
			continue
		}
		for _, e := range byKey[key] {
			reason := d.Gone[e.Labels[LabelServerID]]
			switch {
			case reason != "":
			case d.Touched[e.Labels[LabelServerID]]:
				reason = "remote no longer listed by the server's latest version"
			default:
				reason = "server no longer listed by the registry"
			}
			p.Removes = append(p.Removes, Remove{ID: e.ID, Name: e.Name, Server: e.Labels[LabelServer], URL: e.URL, Reason: reason})
		}
	}
	return p
}

// diff builds the merge patch that brings e to want. Only what the importer
// owns is compared: name, URL, transport, its own labels, and the headers
// (through LabelRemote, since mcpmon returns no header values). Schedule,
// timeout, rules, sinks, pausing and other labels belong to people.
func diff(e apiv1.EndpointView, want Desired) (Update, bool) {
	u := Update{ID: e.ID, Desired: want, Patch: map[string]any{}}
	if e.Name != want.Name {
		u.Fields = append(u.Fields, "name")
		u.Patch["name"] = want.Name
	}
	// mcpmon returns URLs with credential-like query values redacted.
	if e.URL != model.RedactURL(want.URL) {
		u.Fields = append(u.Fields, "url")
		u.Patch["url"] = want.URL
	}
	if e.Transport != want.Transport {
		u.Fields = append(u.Fields, "transport")
		u.Patch["transport"] = want.Transport
	}
	labels := map[string]any{}
	for _, k := range slices.Sorted(maps.Keys(want.Labels)) {
		if e.Labels[k] != want.Labels[k] {
			labels[k] = want.Labels[k]
		}
	}
	for _, k := range []string{LabelServer, LabelVersion} {
		if _, ok := want.Labels[k]; !ok && e.Labels[k] != "" {
			labels[k] = nil
		}
	}
	if len(labels) > 0 {
		u.Fields = append(u.Fields, "labels")
		u.Patch["labels"] = labels
	}
	// A changed remote fingerprint (or a moved URL, after which mcpmon drops
	// headers it was not sent again) resends the registry's headers.
	if e.Labels[LabelRemote] != want.Labels[LabelRemote] || u.Patch["url"] != nil {
		if len(want.Headers) > 0 {
			hs := map[string]any{}
			for k, v := range want.Headers {
				hs[k] = v
			}
			u.Fields = append(u.Fields, "headers")
			u.Patch["headers"] = hs
		}
	}
	return u, len(u.Patch) > 0
}
