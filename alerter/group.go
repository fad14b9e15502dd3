package alerter

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"sync"
	"time"

	"github.com/mcpmon/mcpmon/alerter/grouping"
	"github.com/mcpmon/mcpmon/alerter/notify"
	"github.com/mcpmon/mcpmon/pkg/alert"
	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/msg"
	"github.com/mcpmon/mcpmon/pkg/store"
)

// Grouped notifications: for a sink with a group setting
// (alert.GroupingOf), the drain does not send an incident's open at once;
// it joins the incident to its group's slot (a store object,
// store.KindAlertGroup) and holds the open for that sink. flushGroups
// (every Sweep) decides each slot with grouping.Slot.Due and does what it
// owes, in this order, each step safe to crash after:
//
//  1. write the slot with the group's new phase (its members fixed): a
//     crash leaves the group owing its notification, which the next
//     flush sends;
//  2. send the grouped notification through the notify pipeline with the
//     group's own ledger key (msg.GroupLedgerKey): claim → send → mark,
//     with the pipeline's one duplicate window;
//  3. settle each member: mark its own ledger key for the sink done and
//     record the delivery as grouped, so a drain, redelivery or sweep
//     that still finds the member's notification never sends it alone;
//  4. write the slot with the group sent.
//
// The drains of the members then find the group sent and settle their
// pending notifications for that sink without a send.
//
// A slot is read and written under a lock taken in the ledger
// (groupLockPrefix + the slot's ID, held for one read and one write; a
// crashed holder's lapses with the lease), since the object store has no
// compare-and-set and replicas join the same slot at once. Sends happen
// outside it. A drain that cannot get the lock holds the notification back
// for the next drain, as for a held ledger claim.

// A storm's members join one slot, each holding its lock for one read and
// one write: with hundreds joining at once over two replicas the queue for
// the lock is long, and a join that gives up waits for the next drain,
// which may come after the group was sent (the member then goes alone). So
// a join waits up to about 2 s (groupLockAttempts × groupLockBackoff).
const (
	groupLockPrefix   = "grouplock-"
	groupLockAttempts = 200
	groupLockBackoff  = 10 * time.Millisecond
)

// groupState is the alerter's in-process part of grouping: the lock
// that serialises one slot's users inside this process (the ledger lock
// lets one owner in twice) and when the next collecting group is due.
type groupState struct {
	locks [64]sync.Mutex
	mu    sync.Mutex
	due   time.Time
	// wake tells Run that due moved earlier.
	wake chan struct{}
}

// slotID is the object ID of a slot: a digest, since tenant and sink names
// and the group hash together may exceed what a key should hold.
func slotID(tenant, hash, sink string) string {
	h := sha256.Sum256([]byte(tenant + "\x00" + hash + "\x00" + sink))
	return hex.EncodeToString(h[:16])
}

// lockSlot takes the slot's lock, first in this process, then in the
// ledger. notify.ErrClaimHeld: another replica holds it.
func (a *Alerter) lockSlot(ctx context.Context, id string) (unlock func(), err error) {
	h := fnv.New32a()
	h.Write([]byte(id))
	mu := &a.groups.locks[h.Sum32()%uint32(len(a.groups.locks))]
	mu.Lock()
	for attempt := 1; ; attempt++ {
		st, err := a.st.Claim(ctx, groupLockPrefix+id, a.opts.Owner, a.opts.Lease)
		if err != nil {
			mu.Unlock()
			return nil, fmt.Errorf("alerter: lock group %s: %w", id, err)
		}
		if st == store.ClaimAcquired {
			break
		}
		// Another replica holds it for one read and one write: wait that
		// long a few times rather than leave a join to the next drain,
		// which may come after the group's wait.
		if attempt == groupLockAttempts || a.sleep(ctx, groupLockBackoff) != nil {
			mu.Unlock()
			return nil, fmt.Errorf("%w: group %s", notify.ErrClaimHeld, id)
		}
	}
	return func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), notify.WriteTimeout)
		if err := a.st.Release(rctx, groupLockPrefix+id, a.opts.Owner); err != nil {
			a.log.Debug("group lock not released; it lapses with its lease", "group", id, "err", err)
		}
		cancel()
		mu.Unlock()
	}, nil
}

func (a *Alerter) loadSlot(ctx context.Context, id string) (grouping.Slot, error) {
	doc, err := a.st.GetObject(ctx, store.KindAlertGroup, id)
	if errors.Is(err, model.ErrNotFound) {
		return grouping.Slot{}, nil
	}
	if err != nil {
		return grouping.Slot{}, fmt.Errorf("alerter: group %s: %w", id, err)
	}
	var s grouping.Slot
	if err := json.Unmarshal(doc, &s); err != nil {
		return grouping.Slot{}, fmt.Errorf("alerter: group %s: %w", id, err)
	}
	return s, nil
}

func (a *Alerter) saveSlot(ctx context.Context, id string, s grouping.Slot) error {
	if len(s.Groups) == 0 {
		if err := a.st.DeleteObject(ctx, store.KindAlertGroup, id); err != nil && !errors.Is(err, model.ErrNotFound) {
			return fmt.Errorf("alerter: delete group %s: %w", id, err)
		}
		return nil
	}
	doc, err := json.Marshal(s)
	if err != nil {
		return fmt.Errorf("alerter: encode group %s: %w", id, err)
	}
	if err := a.st.PutObject(ctx, store.KindAlertGroup, id, doc); err != nil {
		return fmt.Errorf("alerter: save group %s: %w", id, err)
	}
	return nil
}

func member(ep model.Endpoint, inc model.Incident) grouping.Member {
	return grouping.Member{
		EndpointID: inc.EndpointID, IncidentID: inc.ID, Name: ep.Name, URL: safeURL(ep.URL), Labels: ep.Labels,
		Class: inc.Class, Reason: inc.Reason, Severity: model.IncidentSeverity(inc.Kind),
		FirstFailure: inc.FirstFailure, OpenedAt: inc.OpenedAt,
	}
}

// groupFor decides what pending notification p of inc does at grouping
// sink s (grouping.Slot.ForPending), joining inc to its group when that is
// what is owed. It reads the slot without the lock first: only a join
// writes, and most notifications of a grouped incident find their group
// decided.
func (a *Alerter) groupFor(ctx context.Context, run *drainRun, p pending, inc model.Incident, s alert.Sink, g alert.Grouping, now time.Time) (grouping.Want, error) {
	m := member(run.ep, inc)
	by, hash, ok := grouping.Key(g.By, m)
	if !ok {
		return grouping.Alone, nil
	}
	tenant := model.TenantOf(run.ep.Tenant)
	id := slotID(tenant, hash, s.Name())
	slot, err := a.loadSlot(ctx, id)
	if err != nil {
		return grouping.Hold, err
	}
	want := slot.ForPending(inc.ID, p.Kind, p.CreatedAt, now, g.Wait)
	if want == grouping.Hold && p.Kind == string(alert.KindResolve) {
		return want, a.recoverMember(ctx, id, slot, inc.ID)
	}
	if want != grouping.Join {
		return want, nil
	}
	unlock, err := a.lockSlot(ctx, id)
	if err != nil {
		return grouping.Hold, err
	}
	defer unlock()
	if slot, err = a.loadSlot(ctx, id); err != nil {
		return grouping.Hold, err
	}
	want = slot.ForPending(inc.ID, p.Kind, p.CreatedAt, now, g.Wait)
	if want != grouping.Join {
		return want, nil
	}
	slot.Tenant, slot.Sink, slot.Hash, slot.By = tenant, s.Name(), hash, by
	slot = slot.Join(m, now, g.Wait)
	if err := a.saveSlot(ctx, id, slot); err != nil {
		return grouping.Hold, err
	}
	a.groupDue(slot.NextDue(g.Wait))
	a.log.Debug("incident joined its group", "incident", inc.ID, "sink", s.Name(), "group", id)
	return grouping.Hold, nil
}

// recoverMember marks a member whose resolve the drain holds as
// recovered in its group (grouping.Slot.Recover), so the group's resolve
// is owed as soon as its last member recovers rather than when a sweep
// finds every member's incident resolved; the last one wakes Run at once.
func (a *Alerter) recoverMember(ctx context.Context, id string, slot grouping.Slot, incidentID string) error {
	if _, changed, _ := slot.Recover(incidentID); !changed {
		return nil
	}
	complete := false
	err := a.withSlot(ctx, id, func(cur grouping.Slot) (grouping.Slot, error) {
		var next grouping.Slot
		next, _, complete = cur.Recover(incidentID)
		return next, nil
	})
	if complete {
		a.groupDue(a.clk.Now())
	}
	return err
}

// groupDue notes when a collecting group is due, for Run's next wake-up.
func (a *Alerter) groupDue(t time.Time) {
	if t.IsZero() {
		return
	}
	a.groups.mu.Lock()
	earlier := a.groups.due.IsZero() || t.Before(a.groups.due)
	if earlier {
		a.groups.due = t
	}
	a.groups.mu.Unlock()
	if earlier {
		select {
		case a.groups.wake <- struct{}{}:
		default: // Run has a wake-up pending already
		}
	}
}

// takeGroupDue returns and forgets the earliest noted due time.
func (a *Alerter) takeGroupDue() time.Time {
	a.groups.mu.Lock()
	defer a.groups.mu.Unlock()
	t := a.groups.due
	a.groups.due = time.Time{}
	return t
}

// flushGroups decides every stored slot and does what each owes.
func (a *Alerter) flushGroups(ctx context.Context) error {
	docs, err := a.st.ListObjects(ctx, store.KindAlertGroup)
	if err != nil {
		return fmt.Errorf("alerter: list groups: %w", err)
	}
	var errs []error
	for id := range docs {
		if err := a.flushSlot(ctx, id); err != nil {
			if errors.Is(err, notify.ErrCrash) {
				return err
			}
			if !errors.Is(err, notify.ErrClaimHeld) {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

func (a *Alerter) groupingSink(name string) (alert.Sink, alert.Grouping, bool) {
	for _, s := range a.opts.Sinks {
		if s.Name() == name {
			g, ok := alert.GroupingOf(s)
			return s, g, ok
		}
	}
	return nil, alert.Grouping{}, false
}

// flushSlot decides slot id under its lock and writes the result (the
// owed groups' members fixed), then sends what is owed without the lock,
// so joins to the slot's next group never wait for a sink: two replicas
// sending the same owed group are kept apart by its ledger key. Each
// outcome is written back under the lock.
func (a *Alerter) flushSlot(ctx context.Context, id string) error {
	slot, err := a.loadSlot(ctx, id)
	if err != nil {
		return err
	}
	now := a.clk.Now().UTC()
	s, g, ok := a.groupingSink(slot.Sink)
	if ok && !slot.Busy(now, g.Wait) {
		a.groupDue(slot.NextDue(g.Wait))
		return nil
	}
	var owed []grouping.Owed
	err = a.withSlot(ctx, id, func(slot grouping.Slot) (grouping.Slot, error) {
		if !ok {
			// The sink is gone from the configuration or groups no longer:
			// its members' notifications go as without grouping.
			a.log.Info("group of a sink that no longer groups dropped", "group", id, "sink", slot.Sink)
			return grouping.Slot{}, nil
		}
		recovered, err := a.recoveredMembers(ctx, slot)
		if err != nil {
			return slot, err
		}
		var next grouping.Slot
		next, owed = slot.Due(now, g.Wait, func(id string) bool { return recovered[id] })
		a.groupDue(next.NextDue(g.Wait))
		slot = next
		return next, nil
	})
	if err != nil {
		return err
	}
	var errs []error
	for _, o := range owed {
		gr, _ := slot.Group(o.Start)
		sent, retry, err := a.sendGroup(ctx, slot, gr, o, s)
		if errors.Is(err, notify.ErrCrash) {
			return err
		}
		if err != nil {
			errs = append(errs, err)
		}
		if sent {
			if err := a.hook("group-settled"); err != nil {
				return err
			}
		}
		werr := a.withSlot(ctx, id, func(cur grouping.Slot) (grouping.Slot, error) {
			if sent {
				return cur.Sent(o), nil
			}
			return cur.Failed(o, retry), nil
		})
		if werr != nil {
			errs = append(errs, werr)
		}
	}
	return errors.Join(errs...)
}

// withSlot applies f to slot id under its lock and saves what f returns.
func (a *Alerter) withSlot(ctx context.Context, id string, f func(grouping.Slot) (grouping.Slot, error)) error {
	unlock, err := a.lockSlot(ctx, id)
	if err != nil {
		return err
	}
	defer unlock()
	slot, err := a.loadSlot(ctx, id)
	if err != nil {
		return err
	}
	next, err := f(slot)
	if err != nil {
		return err
	}
	return a.saveSlot(ctx, id, next)
}

// recoveredMembers reads whether the members of the slot's open groups
// have recovered: resolved, or deleted with their endpoint.
func (a *Alerter) recoveredMembers(ctx context.Context, slot grouping.Slot) (map[string]bool, error) {
	out := map[string]bool{}
	for _, gr := range slot.Groups {
		if gr.Phase != grouping.Open {
			continue
		}
		for _, m := range gr.Members {
			inc, err := a.st.GetIncident(ctx, m.IncidentID)
			switch {
			case errors.Is(err, model.ErrNotFound):
				out[m.IncidentID] = true
			case err != nil:
				return nil, fmt.Errorf("alerter: incident %s: %w", m.IncidentID, err)
			default:
				out[m.IncidentID] = inc.State == model.IncidentResolved
			}
		}
	}
	return out, nil
}

// groupNotification builds what the sink receives for group gr's kind.
func groupNotification(slot grouping.Slot, gr grouping.Group, kind alert.Kind, sink string) alert.GroupNotification {
	gid := msg.GroupID(slot.Tenant, slot.Hash, gr.Start)
	n := alert.GroupNotification{
		Key: msg.GroupLedgerKey(gid, string(kind), sink), Kind: kind, Tenant: slot.Tenant, GroupID: gid,
		By: slot.By, StartedAt: gr.Start,
	}
	if kind == alert.KindResolve {
		t := gr.ResolvedAt
		n.ResolvedAt = &t
	}
	for _, m := range gr.Members {
		n.Members = append(n.Members, alert.GroupMember{
			EndpointID: m.EndpointID, EndpointName: m.Name, EndpointURL: m.URL, Labels: m.Labels, IncidentID: m.IncidentID,
			Class: m.Class, Reason: m.Reason, Severity: m.Severity, FirstFailure: m.FirstFailure, OpenedAt: m.OpenedAt,
		})
	}
	return n
}

// sendGroup delivers owed o of group gr through the notify pipeline and,
// once the ledger has it done (sent, found done, or given up), settles the
// members: sent is then true. A failure leaves o owed, with the sink's
// redelivery state retry, for the next flush.
func (a *Alerter) sendGroup(ctx context.Context, slot grouping.Slot, gr grouping.Group, o grouping.Owed, s alert.Sink) (sent bool, retry notify.RetryState, err error) {
	n := groupNotification(slot, gr, o.Kind, s.Name())
	if !a.redeliver.Due(gr.Retry, a.clk.Now()) {
		return false, gr.Retry, nil
	}
	d := &notify.Delivery{Notification: alert.Notification{Key: n.Key, Kind: o.Kind},
		Sink: groupCall{Sink: s, n: n}, Retry: gr.Retry, Origin: gr.Start}
	a.events.Deliver(ctx, d)
	switch {
	case errors.Is(d.Err, notify.ErrCrash):
		return false, gr.Retry, d.Err
	case d.Err != nil:
		retry = gr.Retry
		if d.Attempts > 0 {
			retry = d.Retry
		}
		if errors.Is(d.Err, notify.ErrClaimHeld) {
			return false, retry, nil // another replica is sending it
		}
		a.log.Warn("grouped notification not delivered; the next sweep retries it", "sink", s.Name(), "group", n.GroupID, "kind", o.Kind, "err", redact(d.Err))
		return false, retry, fmt.Errorf("alerter: %s of group %s: %w", o.Kind, n.GroupID, d.Err)
	}
	outcome, lastErr := model.DeliveryGrouped, ""
	if d.GaveUp {
		outcome, lastErr = model.DeliveryGaveUp, alert.Truncate("grouped notification given up: "+redact(d.LastErr), 512)
		a.log.Warn("grouped notification given up for this sink", "sink", s.Name(), "group", n.GroupID, "kind", o.Kind, "err", redact(d.LastErr))
	} else {
		a.log.Info("grouped notification delivered", "sink", s.Name(), "group", n.GroupID, "kind", o.Kind, "members", len(gr.Members), "outcome", d.Outcome)
	}
	for _, m := range gr.Members {
		if err := a.settleMember(ctx, m, string(o.Kind), s.Name()); err != nil {
			return false, gr.Retry, err
		}
		a.rec.Write(ctx, m.IncidentID, model.Delivery{Kind: string(o.Kind), Sink: s.Name(), Outcome: outcome,
			Attempts: d.Attempts, FirstAttemptAt: d.FirstAttemptAt, LastAttemptAt: d.LastAttemptAt, DeliveredAt: d.DeliveredAt, LastError: lastErr})
	}
	return true, notify.RetryState{}, nil
}

// settleMember marks m's own ledger key of kind for sink done without a
// send: the grouped notification carried it.
func (a *Alerter) settleMember(ctx context.Context, m grouping.Member, kind, sink string) error {
	key := msg.LedgerKey(m.EndpointID, m.IncidentID, kind, sink)
	st, err := a.st.Claim(ctx, key, a.opts.Owner, a.opts.Lease)
	switch {
	case err != nil:
		return fmt.Errorf("alerter: claim %s: %w", key, err)
	case st == store.ClaimHeld:
		// Only a drain that found the member outside its group claims
		// this key, and it sends the member alone: nothing to settle.
		return nil
	case st == store.ClaimDone:
		return nil
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), notify.WriteTimeout)
	defer cancel()
	if err := a.st.Complete(cctx, key, a.opts.Owner); err != nil {
		return fmt.Errorf("alerter: mark %s done (grouped): %w", key, err)
	}
	return nil
}

// groupCall is a grouping sink as the notify pipeline calls it: the
// pipeline's Notify delivers the grouped notification n.
type groupCall struct {
	alert.Sink
	n alert.GroupNotification
}

func (c groupCall) Notify(ctx context.Context, _ alert.Notification) error {
	return alert.ForwardGroup(ctx, c.Sink, c.n)
}
