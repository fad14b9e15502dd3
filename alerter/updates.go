package alerter

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mcpmon/mcpmon/alerter/notify"
	"github.com/mcpmon/mcpmon/pkg/alert"
	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/store"
)

// Update notifications: an update the incident's owner posts with notify
// set goes to the incident's sinks (the endpoint's sinks that take
// incidents and the incident's severity, as its open did) as one
// KindUpdate notification per sink, ledger key
// msg.LedgerKey(endpoint, incident, "update-N", sink).
//
// The API saves the update and a model.UpdateNotice on the endpoint's
// tracker in one SaveTracker, which lists the outbox as pending in the
// same transaction: once the API has answered, the notice is durable and
// the next drain or sweep finds it. adoptNotices moves the notices into
// the outbox as update-N entries (one compare-and-set), and from there
// they take the outbox's path: drained in order per sink, through the
// notify pipeline with its record stage, settled when every sink has
// them. The maintenance gate sends them whatever the windows say. What a
// crash costs: before the adoption, nothing (the notice stays listed);
// after it, what it costs any outbox entry (outbox.go).

// isUpdateKind reports whether ledger kind k is an update's (update-N).
func isUpdateKind(k string) bool { return strings.HasPrefix(k, string(alert.KindUpdate)+"-") }

// adoptNotices moves the tracker's update notices into its outbox, each
// once, and returns the tracker as saved.
func (a *Alerter) adoptNotices(ctx context.Context, endpointID string) (model.Tracker, error) {
	for range maxCASAttempts {
		t, err := a.st.GetTracker(ctx, endpointID)
		if err != nil {
			return t, fmt.Errorf("alerter: tracker of endpoint %s: %w", endpointID, err)
		}
		if len(t.Notices) == 0 {
			return t, nil
		}
		d, err := decodeData[trackerData](t.Data, "tracker "+endpointID)
		if err != nil {
			return t, err
		}
		d.Outbox = adopt(d.Outbox, t.Notices, a.clk.Now().UTC())
		t.Notices = nil
		setTrackerData(&t, d)
		err = a.st.SaveTracker(ctx, t)
		if errors.Is(err, store.ErrConflict) {
			continue
		}
		if err != nil {
			return t, fmt.Errorf("alerter: adopt update notices of endpoint %s: %w", endpointID, err)
		}
		t.Version++
		return t, a.hook("adopted")
	}
	return model.Tracker{}, fmt.Errorf("alerter: tracker of endpoint %s kept changing: %w", endpointID, store.ErrConflict)
}

// adopt is outbox with an update-N entry appended for each notice it does
// not already hold.
func adopt(outbox []pending, notices []model.UpdateNotice, now time.Time) []pending {
	out := slices.Clip(outbox)
	for _, n := range notices {
		p := pending{IncidentID: n.IncidentID, Kind: notify.UpdateKind(n.Seq), Seq: n.Seq, CreatedAt: now}
		if !slices.ContainsFunc(out, p.same) {
			out = append(out, p)
		}
	}
	return out
}

// updateOf is the owner's update an update-N entry announces (nil for
// other kinds, or an update the incident does not hold).
func updateOf(inc model.Incident, p pending) *alert.Update {
	if !isUpdateKind(p.Kind) || p.Seq < 1 || p.Seq > len(inc.Updates) {
		return nil
	}
	u := inc.Updates[p.Seq-1]
	return &alert.Update{Seq: p.Seq, At: u.At, Status: string(u.Status), Message: u.Message}
}
