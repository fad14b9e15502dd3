package api

import (
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"

	"github.com/go-chi/chi/v5"

	apiv1 "github.com/mcpmon/mcpmon/pkg/api/v1"
	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/msg"
	"github.com/mcpmon/mcpmon/pkg/schedule"
	"github.com/mcpmon/mcpmon/pkg/store"
)

// storedCatalog is the part of a prober's catalog document the view shows.
type storedCatalog struct {
	Fingerprint string            `json:"fingerprint"`
	Tools       []json.RawMessage `json:"tools"`
	Truncated   bool              `json:"truncated"`
}

// getCatalog serves one region's catalog: ?region= names it (one of the
// endpoint's regions; 404 for any other, and for every region without a
// region set, whose probers share the endpoint's own catalog), and without
// it the region of the endpoint's latest result is shown, or the
// endpoint's own catalog in a deployment without a region set. A region that has stored no catalog yet
// shows the endpoint's own: the catalog that region's prober compares
// with until it stores its own (prober.loadObject).
func (s *server) getCatalog(w http.ResponseWriter, r *http.Request) {
	id := chi.URLParam(r, "id")
	ep, p := s.endpointOf(r, id)
	if p != nil {
		writeProblem(w, r, p)
		return
	}
	due := schedule.DueRegions(s.regions, ep.Regions)
	latest, err := s.store.LatestResult(r.Context(), id)
	hasLatest := err == nil
	if err != nil && !errors.Is(err, model.ErrNotFound) {
		writeProblem(w, r, s.storeProblem(r, err, "latest result of endpoint "+id))
		return
	}

	region, asked := r.URL.Query()["region"]
	view := apiv1.CatalogView{EndpointID: id, Tools: []json.RawMessage{}, Drift: []msg.Event{}}
	switch {
	case asked:
		view.Region = region[0]
	case len(due) > 0 && hasLatest:
		view.Region = latest.Region
	}
	if asked && !slices.Contains(due, view.Region) {
		writeProblem(w, r, problemf(http.StatusNotFound, "", "endpoint %s is not probed from region %q; its regions: %s", id, view.Region, orNone(due)))
		return
	}

	c, ok, p := s.regionCatalog(r, id, view.Region)
	if p != nil {
		writeProblem(w, r, p)
		return
	}
	if ok {
		view.Fingerprint, view.Truncated = c.Fingerprint, c.Truncated
		if c.Tools != nil {
			view.Tools = c.Tools
		}
	}
	// Without a region set the latest result is the endpoint's whatever
	// its prober's region label.
	if hasLatest && (len(due) == 0 || latest.Region == view.Region) {
		view.LatestFingerprint = latest.CatalogFingerprint
		for _, e := range latest.Events {
			if e.Kind == "catalog_changed" {
				view.Drift = append(view.Drift, e)
			}
		}
	}
	for _, reg := range due {
		c, ok, p := s.regionCatalog(r, id, reg)
		if p != nil {
			writeProblem(w, r, p)
			return
		}
		if ok && c.Fingerprint != "" {
			if view.Regions == nil {
				view.Regions = map[string]string{}
			}
			view.Regions[reg] = c.Fingerprint
		}
	}
	writeJSON(w, http.StatusOK, view)
}

// regionCatalog reads the catalog region's prober stored of endpoint id,
// or the endpoint's own when the region has none (or region is "").
func (s *server) regionCatalog(r *http.Request, id, region string) (storedCatalog, bool, *apiv1.Problem) {
	ids := []string{store.ProberObjectID(id, region)}
	if region != "" {
		ids = append(ids, id)
	}
	for _, oid := range ids {
		doc, err := s.store.GetObject(r.Context(), store.KindCatalog, oid)
		switch {
		case errors.Is(err, model.ErrNotFound):
			continue
		case err != nil:
			return storedCatalog{}, false, s.storeProblem(r, err, "catalog of endpoint "+id)
		}
		var c storedCatalog
		if err := json.Unmarshal(doc, &c); err != nil {
			return storedCatalog{}, false, s.storeProblem(r, err, "catalog of endpoint "+id)
		}
		return c, true, nil
	}
	return storedCatalog{}, false, nil
}

func orNone(rs []string) string {
	if len(rs) == 0 {
		return "none (this deployment has no region set)"
	}
	return strings.Join(rs, ", ")
}
