package api

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/go-chi/chi/v5/middleware"

	"github.com/mcpmon/mcpmon/pkg/auth"
	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/store"
)

// Refused requests in the audit log. A request refused at the front door
// (401: no key or a bad one; 403: a key without the scope; 429: an address
// over its failed-authentication budget) leaves an entry, but at most one
// per client address and tenant per refusalAuditEvery: the first refusal
// writes one, the ones after it are counted, and the next entry says how
// many there were. A flood of bad keys thus costs the audit log one entry
// a minute per address, and a refusal is never lost from the count, only
// reported late (with the address's next refusal).
//
// A 401 belongs to no tenant (the key named none): it goes to the
// operator's, DefaultTenant. A 403 goes to the key's tenant, with the key
// as actor. Entries name the reason and the method, never the presented
// key or the path (both are the client's text).

// refusalAuditEvery is how often one client address may add an entry.
const refusalAuditEvery = time.Minute

// maxRefusalClients bounds the addresses tracked; past it, new addresses
// share one entry (refusalOverflow) until old ones age out.
const maxRefusalClients = 4096

// refusalOverflow stands for every address beyond maxRefusalClients.
const refusalOverflow = "other addresses"

// Audit vocabulary of a refusal.
const (
	ActionRefuse      = "refuse"
	refusalObjectKind = "request"
	auditActorUnknown = "auth:unknown"
	refusalNoKey      = "no key"
	refusalUnknownKey = "unknown key"
	refusalExpiredKey = "expired key"
	refusalRevokedKey = "revoked key"
	refusalScope      = "insufficient scope"
	refusalThrottled  = "too many failed authentications"
)

// refusalWindow is what the throttle remembers of one address and tenant.
type refusalWindow struct {
	last       time.Time // when the last entry was written
	suppressed int       // refusals since then without an entry
}

// noteRefusal is the throttle's rule: given an address's window (seen:
// whether there is one) and a refusal at now, the next window and whether
// to write an entry now, with how many refusals before this one it reports.
func noteRefusal(w refusalWindow, seen bool, now time.Time) (next refusalWindow, emit bool, earlier int) {
	if seen && now.Sub(w.last) < refusalAuditEvery {
		w.suppressed++
		return w, false, 0
	}
	return refusalWindow{last: now}, true, w.suppressed
}

// refusalLog keeps the windows, bounded by maxRefusalClients.
type refusalLog struct {
	mu      sync.Mutex
	windows map[string]refusalWindow // tenant + "\x00" + address
}

// note applies noteRefusal to the address's window. When the map is full
// it first forgets windows that no longer suppress anything (older than
// refusalAuditEvery with nothing counted), then folds a new address into
// refusalOverflow.
func (l *refusalLog) note(tenant, client string, now time.Time) (addr string, emit bool, earlier int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.windows == nil {
		l.windows = map[string]refusalWindow{}
	}
	addr = client
	k := tenant + "\x00" + addr
	w, seen := l.windows[k]
	if !seen && len(l.windows) >= maxRefusalClients {
		for key, old := range l.windows {
			if old.suppressed == 0 && now.Sub(old.last) >= refusalAuditEvery {
				delete(l.windows, key)
			}
		}
		if len(l.windows) >= maxRefusalClients {
			addr = refusalOverflow
			k = tenant + "\x00" + addr
			w, seen = l.windows[k]
		}
	}
	w, emit, earlier = noteRefusal(w, seen, now)
	l.windows[k] = w
	return addr, emit, earlier
}

// refused records a refused request in the audit log, throttled as above,
// and logs it at debug (the reason is for the operator, not the client).
func (s *server) refused(r *http.Request, client string, status int, reason string, p auth.Principal) {
	s.log.Debug("request refused", "status", status, "reason", reason, "client", client,
		"key", p.KeyID, "request_id", middleware.GetReqID(r.Context()))
	if s.audit == nil {
		return
	}
	now := s.clock.Now().UTC()
	tenant := auth.DefaultTenant
	actor := store.AuditActor{KeyID: auditActorUnknown}
	if p.KeyID != "" {
		tenant, actor = model.TenantOf(p.Tenant), store.AuditActor{KeyID: p.KeyID, Name: p.Name}
	}
	addr, emit, earlier := s.refusals.note(tenant, client, now)
	if !emit {
		return
	}
	summary := fmt.Sprintf("%s (%s)", reason, r.Method)
	if earlier > 0 {
		summary += fmt.Sprintf("; %d more refused from this address since the last entry", earlier)
	}
	e := store.AuditEntry{
		Time: now, Tenant: tenant, Actor: actor, Action: ActionRefuse, ObjectKind: refusalObjectKind,
		ObjectID: addr, RequestID: middleware.GetReqID(r.Context()), Status: status, Summary: summary,
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), auditAppendTimeout)
	defer cancel()
	if err := s.audit.AppendAudit(ctx, e); err != nil {
		s.log.Warn("audit entry of a refused request not recorded", "status", status, "client", addr, "err", err)
		if s.metrics != nil {
			s.metrics.AuditAppendFailures.Inc()
		}
	}
}
