// Catalog divergence: regions that disagree on an endpoint's tool catalog,
// in a deployment with a region set (Options.Regions).
//
// Each region's prober remembers its own catalog (prober.objectID), so a
// region behind a stale edge cache raises no drift of its own: nothing
// changed from where it stands. Only the aggregator sees every region's
// result of a window, so it is where the disagreement is noticed.
// CatalogDivergence is the pure half — a window's results in, at most one
// catalog_divergent event out — and recordDivergence the effect, called
// while the window is decided, before its verdict is published: a crash
// after the append and before the publish decides the window again and
// appends nothing new (the fingerprint is known); the other order would
// lose the event with a crash between the two, the window being closed.
//
// The fingerprint covers the set of catalogs the regions saw, not which
// region saw which: a region missing from one window (its probe failed, or
// came late) is the same divergence, not a new one. A new set (the stale
// cache moved to another old catalog, the server changed again) is a new
// event; the regions agreeing again raises none (the history shows the
// divergence stopped being reported, and the verdicts that the endpoint is
// fine). The same set of catalogs diverging again within the event
// retention is not reported again, as for any change event.

package aggregator

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/msg"
	"github.com/mcpmon/mcpmon/pkg/store"
)

// CatalogReader reads the catalogs the probers remember, for the tool
// names in a divergence's message; the aggregator's store provides it
// when it implements it (every store.Store does). Without it the message
// names the fingerprints only.
type CatalogReader interface {
	GetObject(ctx context.Context, kind, id string) ([]byte, error)
}

// RegionCatalog is one region's catalog in a window: the fingerprint and
// tool count of its latest result that listed the tools.
type RegionCatalog struct {
	Fingerprint string `json:"fingerprint"`
	ToolCount   int    `json:"toolCount"`
}

// regionCatalogs returns, per region, the catalog of its latest result in
// the window that succeeded (up or degraded) and listed the tools, ordered
// as DecideDue orders results. Results without a region are left out:
// there is nothing to compare them with.
func regionCatalogs(results []msg.ProbeResult) map[string]RegionCatalog {
	latest := map[string]msg.ProbeResult{}
	for _, r := range results {
		if r.Region == "" || r.Status == msg.StatusDown || r.CatalogFingerprint == "" {
			continue
		}
		cur, ok := latest[r.Region]
		if !ok || cmp.Or(r.Slot.Compare(cur.Slot), r.FinishedAt.Compare(cur.FinishedAt), cmpString(r.ProbeRunID, cur.ProbeRunID)) > 0 {
			latest[r.Region] = r
		}
	}
	out := make(map[string]RegionCatalog, len(latest))
	for reg, r := range latest {
		out[reg] = RegionCatalog{Fingerprint: r.CatalogFingerprint, ToolCount: r.ToolCount}
	}
	return out
}

// diverges reports whether the regions saw more than one catalog.
func diverges(cats map[string]RegionCatalog) bool {
	var first string
	for _, c := range cats {
		if first == "" {
			first = c.Fingerprint
		} else if c.Fingerprint != first {
			return true
		}
	}
	return false
}

// divergenceDetails is the Details of a catalog_divergent event.
type divergenceDetails struct {
	// Regions is each region's catalog in the window.
	Regions map[string]RegionCatalog `json:"regions"`
	// Reference is the catalog the others are compared with: the one most
	// regions saw (ties: more tools, then the smaller fingerprint).
	Reference string `json:"reference"`
	// Missing and Extra name, per region whose catalog differs from the
	// reference, the tools it lacks and the tools only it has, when both
	// catalogs' tool names were known.
	Missing map[string][]string `json:"missing,omitempty"`
	Extra   map[string][]string `json:"extra,omitempty"`
}

// CatalogDivergence returns the catalog_divergent event a window's results
// show, or nil when fewer than two regions listed the tools successfully
// or they all saw the same catalog. endpointName names the endpoint in the
// message (its ID when empty). tools maps a catalog fingerprint to its tool
// names, where known (nil: the message names fingerprints only); it shapes
// the message and details, never the fingerprint. It reads nothing but its
// arguments.
func CatalogDivergence(endpointID, endpointName string, window time.Time, results []msg.ProbeResult, tools map[string][]string) *model.ChangeEvent {
	cats := regionCatalogs(results)
	if !diverges(cats) {
		return nil
	}
	regions := slices.Sorted(maps.Keys(cats))
	byFP := map[string][]string{} // fingerprint → regions, sorted
	for _, reg := range regions {
		byFP[cats[reg].Fingerprint] = append(byFP[cats[reg].Fingerprint], reg)
	}
	fps := slices.Sorted(maps.Keys(byFP))
	ref := slices.MaxFunc(fps, func(a, b string) int {
		ca, cb := cats[byFP[a][0]], cats[byFP[b][0]]
		return cmp.Or(cmp.Compare(len(byFP[a]), len(byFP[b])), cmp.Compare(ca.ToolCount, cb.ToolCount), strings.Compare(b, a))
	})

	d := divergenceDetails{Regions: cats, Reference: ref}
	var seen []string
	for _, reg := range regions {
		seen = append(seen, reg+"="+shortFP(cats[reg].Fingerprint))
	}
	var notes []string
	refTools, refKnown := tools[ref]
	for _, fp := range fps {
		cur, ok := tools[fp]
		if fp == ref || !ok || !refKnown {
			continue
		}
		missing, extra := setDiff(refTools, cur), setDiff(cur, refTools)
		who := strings.Join(byFP[fp], ", ")
		for _, reg := range byFP[fp] {
			if len(missing) > 0 {
				d.Missing = setMap(d.Missing, reg, missing)
			}
			if len(extra) > 0 {
				d.Extra = setMap(d.Extra, reg, extra)
			}
		}
		switch {
		case len(missing) > 0 && len(extra) > 0:
			notes = append(notes, fmt.Sprintf("%s lacks tools: %s; has others: %s", who, strings.Join(missing, ", "), strings.Join(extra, ", ")))
		case len(missing) > 0:
			notes = append(notes, fmt.Sprintf("%s lacks tools: %s", who, strings.Join(missing, ", ")))
		case len(extra) > 0:
			notes = append(notes, fmt.Sprintf("%s has tools the others lack: %s", who, strings.Join(extra, ", ")))
		default:
			notes = append(notes, fmt.Sprintf("%s: same tool names, different descriptions or schemas", who))
		}
	}
	name := cmp.Or(endpointName, endpointID)
	message := fmt.Sprintf("regions disagree on the tool catalog of %s: %s", name, strings.Join(seen, ", "))
	if len(notes) > 0 {
		message += " (" + strings.Join(notes, "; ") + ")"
	}
	details, _ := json.Marshal(d) // maps: keys sorted, a stable encoding
	return &model.ChangeEvent{
		EndpointID:  endpointID,
		Kind:        model.EventCatalogDivergent,
		Fingerprint: model.EventFingerprint(endpointID, model.EventCatalogDivergent, fps...),
		ObservedAt:  window.UTC(),
		Severity:    "warning",
		Message:     truncate(message, 4096),
		Details:     details,
	}
}

// shortFP shortens a catalog fingerprint for people: the first 12 hex
// digits.
func shortFP(fp string) string {
	h := strings.TrimPrefix(fp, "sha256:")
	if len(h) > 12 {
		h = h[:12] + "…"
	}
	return h
}

// setDiff returns the names in a but not in b, sorted, once each.
func setDiff(a, b []string) []string {
	var out []string
	for _, n := range a {
		if !slices.Contains(b, n) {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func setMap(m map[string][]string, k string, v []string) map[string][]string {
	if m == nil {
		m = map[string][]string{}
	}
	m[k] = v
	return m
}

func truncate(s string, n int) string {
	if len(s) > n {
		s = strings.ToValidUTF8(s[:n], "") + "…"
	}
	return s
}

// recordDivergence appends the window's catalog_divergent event, if its
// results show one (CatalogDivergence), reading the regions' stored
// catalogs for the tool names first. A store outage is returned, so the
// window is decided again later; an unreadable catalog only costs the
// message its tool names; an event the store refuses is logged and
// skipped, never holding the verdict back.
func (a *Aggregator) recordDivergence(ctx context.Context, ep model.Endpoint, ref store.WindowRef, results []msg.ProbeResult) error {
	if a.events == nil || len(a.opts.Regions) == 0 {
		// Without a region set probers take turns on one queue and share
		// one catalog whatever their label: nothing per region to compare.
		return nil
	}
	cats := regionCatalogs(results)
	if !diverges(cats) {
		return nil
	}
	var tools map[string][]string
	if cr, ok := a.st.(CatalogReader); ok {
		tools = a.catalogTools(ctx, cr, ref.EndpointID, cats)
	}
	ev := CatalogDivergence(ref.EndpointID, ep.Name, ref.Window, results, tools)
	return a.appendEvents(ctx, fmt.Sprintf("catalog divergence of endpoint %s window %s", ref.EndpointID, ref.Window.Format(time.RFC3339)), *ev)
}

// catalogTools reads each region's stored catalog (store.ProberObjectID)
// and keeps the tool names of those whose fingerprint is the one the
// region's result reported: a catalog stored since belongs to a later
// probe. Reads that fail are skipped.
func (a *Aggregator) catalogTools(ctx context.Context, cr CatalogReader, endpointID string, cats map[string]RegionCatalog) map[string][]string {
	out := map[string][]string{}
	for _, reg := range slices.Sorted(maps.Keys(cats)) {
		fp := cats[reg].Fingerprint
		if _, ok := out[fp]; ok {
			continue
		}
		doc, err := cr.GetObject(ctx, store.KindCatalog, store.ProberObjectID(endpointID, reg))
		if err != nil {
			if !errors.Is(err, model.ErrNotFound) {
				a.log.Debug("read a region's catalog for a divergence failed", "endpoint", endpointID, "region", reg, "err", err)
			}
			continue
		}
		var c struct {
			Fingerprint string `json:"fingerprint"`
			Tools       []struct {
				Name string `json:"name"`
			} `json:"tools"`
		}
		if json.Unmarshal(doc, &c) != nil || c.Fingerprint != fp {
			continue
		}
		names := make([]string, 0, len(c.Tools))
		for _, t := range c.Tools {
			names = append(names, t.Name)
		}
		out[fp] = names
	}
	return out
}
