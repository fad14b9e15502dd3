package alerter

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mcpmon/mcpmon/pkg/alert"
	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/msg"
)

// Regional incidents. A regional verdict (some regions down, fewer than the
// quorum) neither opens nor resolves the global incident; in a deployment
// with a region set (the verdict carries RegionStates) it opens a
// regional incident of its own: kind model.IncidentRegional, warning
// severity, IDs from msg.RegionalIncidentID (so its ledger keys never meet
// the global incident's), delivered through the same outbox, to the sinks
// that take warnings. The rules are the endpoint's:
//
//   - opens when openAfter of the last openWindow windows were regional and
//     the window at hand is, unless a global incident is open (it already
//     covers the outage: a global outage that recovers in some regions
//     first does not page again as regional);
//   - stays open through down windows (the outage grew; the global
//     incident opens on its own rule), degraded and regional ones;
//   - resolves after resolveAfter consecutive up windows, like the global.
//
// So one region failing pages once (regional, warning); a second region
// failing pages once more (global, critical); recovery resolves both.
// The state lives in the tracker's alerter data (trackerData.Regional),
// written in the same compare-and-set as everything else a verdict does.

// regionalTrack is the regional incident's fold, as fold's fields are the
// global one's.
type regionalTrack struct {
	Recent         []msg.State `json:"recent,omitempty"` // newest last, at most openWindow
	ConsecutiveUp  int         `json:"consecutiveUp,omitempty"`
	OpenIncidentID string      `json:"openIncidentId,omitempty"`
}

// foldRegional folds v into rt: whether a regional incident opens (if
// none is open) or the open one resolves.
func foldRegional(rt *regionalTrack, v msg.Verdict, r rules) (open, resolve bool) {
	if v.State == msg.StateNoData {
		return false, false
	}
	rt.Recent = append(slices.Clone(rt.Recent), v.State)
	if n := len(rt.Recent) - r.openWindow; n > 0 {
		rt.Recent = rt.Recent[n:]
	}
	rt.ConsecutiveUp = upRun(rt.ConsecutiveUp, v.State)
	return incidentRule(rt.Recent, rt.ConsecutiveUp, rt.OpenIncidentID != "", v.State, msg.StateRegional, r)
}

// regionalStep is transition's regional half, as pure: it folds v into
// d.Regional and returns the regional incident opened or resolved, the
// notification owed and the event. globalOpen: a global incident is open
// after the global half.
func regionalStep(in transitionInput, d *trackerData, globalOpen bool, now time.Time) ([]model.Incident, []pending, string) {
	v := in.Verdict
	if len(v.RegionStates) == 0 && d.Regional == nil {
		// Judged without a region set (no --regions): a regional state
		// there compares whichever probers happened to report, and opens
		// nothing, as before regional incidents existed.
		return nil, nil, ""
	}
	var rt regionalTrack
	if d.Regional != nil {
		rt = *d.Regional
	}
	cur := in.RegionalOpen
	if cur == nil || cur.State == model.IncidentResolved {
		cur, rt.OpenIncidentID = nil, ""
	}
	opened, resolved := foldRegional(&rt, v, in.Rules)
	var (
		incs  []model.Incident
		owed  []pending
		event string
	)
	switch {
	case opened && globalOpen:
	case opened && in.RegionalAlreadyOpened:
		rt.OpenIncidentID = msg.RegionalIncidentID(v.EndpointID, v.Window)
	case opened:
		inc := regionalIncident(rt, v, now)
		inc.Tenant = in.Tenant
		rt.OpenIncidentID = inc.ID
		incs, event = []model.Incident{inc}, eventOpened
		owed = []pending{{IncidentID: inc.ID, Kind: string(alert.KindOpen), CreatedAt: now, VerdictEmittedAt: v.EmittedAt}}
	case resolved && cur != nil:
		w := v.Window.UTC()
		inc := *cur
		inc.Transitions = append(slices.Clone(inc.Transitions), model.Transition{At: now, From: inc.State, To: model.IncidentResolved,
			Reason: fmt.Sprintf("%d consecutive up windows in every region; window %s", rt.ConsecutiveUp, w.Format(time.RFC3339))})
		inc.State, inc.ResolvedWindow, inc.ResolvedAt = model.IncidentResolved, &w, &now
		rt = regionalTrack{}
		incs, event = []model.Incident{inc}, eventResolved
		owed = []pending{{IncidentID: inc.ID, Kind: string(alert.KindResolve), CreatedAt: now, VerdictEmittedAt: v.EmittedAt}}
	}
	d.Regional = &rt
	if rt.OpenIncidentID == "" && len(rt.Recent) == 0 {
		d.Regional = nil
	}
	return incs, owed, event
}

// regionalIncident is the regional incident verdict v opens.
func regionalIncident(rt regionalTrack, v msg.Verdict, now time.Time) model.Incident {
	w := v.Window.UTC()
	n := 0
	for _, s := range rt.Recent {
		if s == msg.StateRegional {
			n++
		}
	}
	return model.Incident{
		ID: msg.RegionalIncidentID(v.EndpointID, v.Window), EndpointID: v.EndpointID,
		Kind: model.IncidentRegional, Regions: slices.Clone(v.FailingRegions), State: model.IncidentOpen,
		OpenedWindow: w, OpenedAt: now, FirstFailure: w, Class: v.Class, Reason: v.Reason,
		Transitions: []model.Transition{{At: now, To: model.IncidentOpen,
			Reason: fmt.Sprintf("%d of the last %d windows down in some regions, fewer than the quorum; window %s: failing in %s: %s",
				n, len(rt.Recent), w.Format(time.RFC3339), strings.Join(v.FailingRegions, ", "), cmpOr(v.Reason, v.Class))}},
	}
}

// regionalInput reads the regional incident the tracker in in points at.
func (a *Alerter) regionalInput(ctx context.Context, in *transitionInput) error {
	d, err := decodeData[trackerData](in.Tracker.Data, "tracker "+in.Tracker.EndpointID)
	if err != nil || d.Regional == nil || d.Regional.OpenIncidentID == "" {
		return err
	}
	inc, err := a.st.GetIncident(ctx, d.Regional.OpenIncidentID)
	switch {
	case err == nil:
		in.RegionalOpen = &inc
	case !errors.Is(err, model.ErrNotFound):
		return fmt.Errorf("alerter: incident %s: %w", d.Regional.OpenIncidentID, err)
	}
	return nil
}
