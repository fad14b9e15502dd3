// Agent notices: when an agent (`mcpmon agent`) goes silent, its tenant
// hears it once — one message per agent, not one per endpoint its silence
// leaves without data — and once more when it polls again.
//
// The API replicas keep each agent's record (model.AgentSeen,
// store.KindAgentSeen: its last poll); NotifyAgents, run every
// AgentInterval on every alerter replica, reads the records and its own
// notices (agentNotice, store.KindAgentOffline: the agents it reported
// offline) and decides with decideAgents, a pure function:
//   - an agent without a poll for Options.AgentOfflineAfter and no notice
//     owes agent_offline, "offline since <its last poll>";
//   - an agent with a notice that polled after the notice's start owes
//     agent_online, "back online after <the gap>";
//   - a notice whose agent has no record (revoked: the API drops it) is
//     forgotten without a message.
//
// A message goes to every distinct sink of the tenant's endpoints probed
// from the agent's location that takes their warning incidents (global ones
// by name, an endpoint's own by name and configuration), as a change-event
// notification of kind agent_offline or agent_online, through the events'
// notify pipeline under the ledger key
// agent-<agentId>-<offlineSinceUnix>-<offline|online>:<sink>. The key is
// the same on every replica and after a restart, so the ledger lets one
// send through. The notice is written (offline) or deleted (online) only
// once every sink has the message (sent, found done, or given up). What a
// crash between two steps costs:
//   - before a send: nothing; the next run decides the same and sends.
//   - after a send, before its mark: the alerter's one duplicate window
//     (see the package doc).
//   - after every mark, before the notice is written or deleted: the next
//     run decides the same, finds every key done, and writes it then.
package alerter

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mcpmon/mcpmon/alerter/notify"
	"github.com/mcpmon/mcpmon/pkg/alert"
	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/schedule"
	"github.com/mcpmon/mcpmon/pkg/store"
)

// The change-event kinds of agent notices. They are not model event kinds:
// no endpoint records them, and a sink's notify list does not select them
// (agentSinks says who gets them).
const (
	KindAgentOffline = "agent_offline"
	KindAgentOnline  = "agent_online"
)

// DefaultAgentInterval is how often RunAgents looks at the agents' records:
// with the API's 15 s record writes, an agent is reported at most ~30 s
// after its offline timeout.
const DefaultAgentInterval = 15 * time.Second

// agentNotice is an agent the alerter reported offline and not yet back.
type agentNotice struct {
	// OfflineSince is the reported spell's start: the agent's last poll.
	OfflineSince time.Time `json:"offlineSince"`
}

// agentStep is what decideAgents owes one agent.
type agentStep struct {
	ID   string
	Seen model.AgentSeen
	// Kind is KindAgentOffline, KindAgentOnline, or "" to forget the
	// notice of an agent that no longer has a record.
	Kind string
	// Since is the offline spell's start; Back the poll that ended it.
	Since, Back time.Time
}

// decideAgents decides the agent notices owed at now, by agent ID.
func decideAgents(seen map[string]model.AgentSeen, notices map[string]agentNotice, now time.Time, after time.Duration) []agentStep {
	var out []agentStep
	for _, id := range slices.Sorted(maps.Keys(seen)) {
		s := seen[id]
		n, noticed := notices[id]
		switch {
		case s.Location == "" || s.LastSeen.IsZero():
			// A record without its key's location (written before it had
			// one) names no endpoints to tell; it gains one at the next poll.
		case noticed && s.LastSeen.After(n.OfflineSince):
			out = append(out, agentStep{ID: id, Seen: s, Kind: KindAgentOnline, Since: n.OfflineSince, Back: s.LastSeen})
		case !noticed && s.Offline(now, after):
			out = append(out, agentStep{ID: id, Seen: s, Kind: KindAgentOffline, Since: s.LastSeen})
		}
	}
	for _, id := range slices.Sorted(maps.Keys(notices)) {
		if _, ok := seen[id]; !ok {
			out = append(out, agentStep{ID: id})
		}
	}
	return out
}

// endpointLister is the store capability of listing one tenant's
// endpoints (through its index); every store.Store has it.
type endpointLister interface {
	ListEndpointsOf(ctx context.Context, tenant string) ([]model.Endpoint, error)
}

// NotifyAgents sends the agent notices owed now (see the file comment).
func (a *Alerter) NotifyAgents(ctx context.Context) error {
	a.agentsMu.Lock()
	defer a.agentsMu.Unlock()
	seenDocs, err := a.st.ListObjects(ctx, store.KindAgentSeen)
	if err != nil {
		return fmt.Errorf("alerter: agent records: %w", err)
	}
	noticeDocs, err := a.st.ListObjects(ctx, store.KindAgentOffline)
	if err != nil {
		return fmt.Errorf("alerter: agent notices: %w", err)
	}
	seen := make(map[string]model.AgentSeen, len(seenDocs))
	for id, doc := range seenDocs {
		var s model.AgentSeen
		if json.Unmarshal(doc, &s) == nil {
			seen[id] = s
		}
	}
	notices := make(map[string]agentNotice, len(noticeDocs))
	for id, doc := range noticeDocs {
		var n agentNotice
		if json.Unmarshal(doc, &n) == nil {
			notices[id] = n
		}
	}
	now := a.clk.Now()
	if a.agentSeries == nil {
		a.agentSeries = map[[2]string]bool{}
	}
	a.m.agentsOnline(seen, a.agentSeries, now, a.agentOfflineAfter())
	steps := decideAgents(seen, notices, now, a.agentOfflineAfter())
	var (
		// byTenant holds the endpoints of each tenant a step names, read
		// once per run and only when a notice is owed.
		byTenant = map[string][]model.Endpoint{}
		errs     []error
	)
	for _, st := range steps {
		if st.Kind == "" {
			if err := a.st.DeleteObject(ctx, store.KindAgentOffline, st.ID); err != nil && !errors.Is(err, model.ErrNotFound) {
				errs = append(errs, fmt.Errorf("alerter: forget agent notice %s: %w", st.ID, err))
			}
			continue
		}
		tenant := model.TenantOf(st.Seen.Tenant)
		eps, listed := byTenant[tenant]
		if l, ok := a.st.(endpointLister); ok && !listed {
			if eps, err = l.ListEndpointsOf(ctx, tenant); err != nil {
				return errors.Join(append(errs, fmt.Errorf("alerter: endpoints of tenant %s for agent notices: %w", tenant, err))...)
			}
			byTenant[tenant] = eps
		}
		sinks, err := a.agentSinks(ctx, eps, st.Seen)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		settled, err := a.deliverAgent(ctx, st, sinks)
		if errors.Is(err, notify.ErrCrash) {
			return err
		}
		if err != nil {
			errs = append(errs, err)
		}
		if !settled {
			continue
		}
		// Written only now that every sink has the message (rule: state
		// after the message that announces it).
		if st.Kind == KindAgentOffline {
			doc, _ := json.Marshal(agentNotice{OfflineSince: st.Since})
			err = a.st.PutObject(ctx, store.KindAgentOffline, st.ID, doc)
		} else {
			err = a.st.DeleteObject(ctx, store.KindAgentOffline, st.ID)
		}
		if err != nil && !errors.Is(err, model.ErrNotFound) {
			errs = append(errs, fmt.Errorf("alerter: agent notice %s: %w", st.ID, err))
		}
	}
	return errors.Join(errs...)
}

func (a *Alerter) agentOfflineAfter() time.Duration {
	if a.opts.AgentOfflineAfter > 0 {
		return a.opts.AgentOfflineAfter
	}
	return model.DefaultAgentOfflineAfter
}

// agentSink is one destination of an agent notice and the identity it is
// deduplicated and keyed by.
type agentSink struct {
	alert.Sink
	id string
}

// agentSinks are the distinct sinks that take incidents of the tenant's
// endpoints probed from s's location, warnings included, in identity order. A global sink is
// one sink whichever endpoints it serves; an endpoint's own sink is
// identified by its name and a digest of its configuration, so two
// endpoints' identical sinks are one, and two different sinks of one name
// are two.
func (a *Alerter) agentSinks(ctx context.Context, eps []model.Endpoint, s model.AgentSeen) ([]agentSink, error) {
	region := schedule.Location(s.Location)
	byID := map[string]agentSink{}
	for _, ep := range eps {
		if !model.SameTenant(ep.Tenant, s.Tenant) || !slices.Contains(ep.Regions, region) {
			continue
		}
		sinks, err := a.sinksOf(ctx, ep)
		if err != nil {
			return nil, err
		}
		own := ownSinkConfigs(ep.Sinks)
		for _, sk := range sinks {
			// Routed as a warning, both halves of the pair: a sink that
			// takes only critical incidents (a pager) is not woken for
			// an agent, and one that heard "offline" hears "back".
			if !alert.Subscribes(sk, alert.NotifyIncidents) || !alert.Takes(sk, model.SeverityWarning) {
				continue
			}
			id := sk.Name()
			if cfg, ok := own[sk.Name()]; ok {
				sum := sha256.Sum256(cfg)
				id += "-" + hex.EncodeToString(sum[:4])
			}
			if _, dup := byID[id]; !dup {
				byID[id] = agentSink{Sink: sk, id: id}
			}
		}
	}
	out := make([]agentSink, 0, len(byID))
	for _, id := range slices.Sorted(maps.Keys(byID)) {
		out = append(out, byID[id])
	}
	return out, nil
}

// ownSinkConfigs are an endpoint's own sink configurations by name, each
// re-encoded so key order does not change its identity. A configuration
// that does not decode is left out (the resolver refuses it anyway).
func ownSinkConfigs(raw json.RawMessage) map[string][]byte {
	var list []map[string]any
	if len(raw) == 0 || json.Unmarshal(raw, &list) != nil {
		return nil
	}
	out := map[string][]byte{}
	for _, c := range list {
		name, _ := c["name"].(string)
		if doc, err := json.Marshal(c); err == nil && name != "" {
			out[name] = doc
		}
	}
	return out
}

// deliverAgent sends st's message to each sink; settled once every one
// has it or has given it up.
func (a *Alerter) deliverAgent(ctx context.Context, st agentStep, sinks []agentSink) (settled bool, err error) {
	ds := make([]*notify.Delivery, 0, len(sinks))
	for _, s := range sinks {
		n := agentNotification(st, s.id, a.agentOfflineAfter())
		ds = append(ds, &notify.Delivery{Notification: alert.Notification{Key: n.Key}, Sink: eventCall{Sink: s.Sink, n: n}, Origin: n.ObservedAt})
	}
	a.events.Deliver(ctx, ds...)
	settled = true
	var errs []error
	for i, d := range ds {
		s := sinks[i]
		switch {
		case errors.Is(d.Err, notify.ErrCrash):
			return false, d.Err
		case d.Err != nil:
			settled = false
			if errors.Is(d.Err, notify.ErrClaimHeld) {
				continue // another replica is sending it
			}
			errs = append(errs, redactedError{msg: redact(d.Err), err: d.Err})
			a.log.Warn("agent notice not delivered; retried at the next run", "sink", s.Name(), "agent", st.ID, "kind", st.Kind, "err", redact(d.Err))
		case d.GaveUp:
			a.m.givenUp(alert.MetricLabel(s))
			a.log.Warn("agent notice given up for this sink (failed permanently, or failing past the give-up age)", "sink", s.Name(), "agent", st.ID, "kind", st.Kind)
		case d.Outcome == notify.OutcomeSent:
			a.log.Info("agent notice sent", "sink", s.Name(), "agent", st.ID, "name", st.Seen.Name, "location", st.Seen.Location, "kind", st.Kind)
		}
	}
	return settled, errors.Join(errs...)
}

// agentNotification is what sink sinkID receives for st: a pure function
// of the step, so a redelivery carries the same body and key.
func agentNotification(st agentStep, sinkID string, after time.Duration) alert.EventNotification {
	s := st.Seen
	since := st.Since.UTC()
	kind, verb := "offline", ""
	n := alert.EventNotification{
		Kind:         st.Kind,
		EndpointName: "agent " + s.Name,
		EventID:      st.ID,
		Fingerprint:  strconv.FormatInt(since.Unix(), 10),
	}
	details := map[string]any{"agentId": st.ID, "agentName": s.Name, "location": s.Location, "region": schedule.Location(s.Location),
		"offlineSince": since.Format(time.RFC3339)}
	switch st.Kind {
	case KindAgentOffline:
		n.Severity, n.ObservedAt = "warning", since.Add(after)
		verb = fmt.Sprintf("offline since %s (no poll for %s): the windows of the endpoints probed from location %s are no_data until it is back",
			since.Format(time.RFC3339), after, s.Location)
	default:
		kind, n.Severity, n.ObservedAt = "online", "info", st.Back.UTC()
		details["backAt"] = n.ObservedAt.Format(time.RFC3339)
		verb = fmt.Sprintf("back online after %s (offline since %s)", gap(st.Back.Sub(since)), since.Format(time.RFC3339))
	}
	n.Key = "agent-" + st.ID + "-" + n.Fingerprint + "-" + kind + ":" + sinkID
	n.Message = alert.Truncate(strings.Join([]string{"agent", s.Name, "(location " + s.Location + ")", verb}, " "), 1000)
	n.Details, _ = json.Marshal(details)
	return n
}

// gap words a spell's length in whole seconds, minutes past an hour.
func gap(d time.Duration) string {
	if d >= time.Hour {
		d = d.Round(time.Minute)
	} else {
		d = d.Round(time.Second)
	}
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = s[:len(s)-2]
	}
	if strings.HasSuffix(s, "h0m") {
		s = s[:len(s)-2]
	}
	return s
}

// RunAgents sends the agent notices every interval (<= 0:
// DefaultAgentInterval) until ctx is done.
func (a *Alerter) RunAgents(ctx context.Context, interval time.Duration) error {
	if interval <= 0 {
		interval = DefaultAgentInterval
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		switch err := a.NotifyAgents(ctx); {
		case err == nil || ctx.Err() != nil:
		case errors.Is(err, store.ErrUnavailable):
			a.log.Debug("agent notices wait for the store", "err", err)
		case errors.Is(err, notify.ErrDelivery):
			// deliverAgent logged each failed sink.
		default:
			a.log.Warn("agent notices", "err", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// agentsOnline sets the online gauge of every agent with a record and
// drops the series of agents without one (revoked); series is the label
// pairs set last time, kept by the caller.
func (m *Metrics) agentsOnline(seen map[string]model.AgentSeen, series map[[2]string]bool, now time.Time, after time.Duration) {
	if m == nil || m.AgentOnline == nil {
		return
	}
	set := map[[2]string]bool{}
	for id, s := range seen {
		if s.LastSeen.IsZero() {
			continue
		}
		v := 0.0
		if s.Online(now, after) {
			v = 1
		}
		m.AgentOnline.WithLabelValues(id, s.Location).Set(v)
		set[[2]string{id, s.Location}] = true
	}
	for k := range series {
		if !set[k] {
			m.AgentOnline.DeleteLabelValues(k[0], k[1])
		}
		delete(series, k)
	}
	maps.Copy(series, set)
}
