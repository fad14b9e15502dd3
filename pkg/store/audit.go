// The audit log's record and the rules both backends apply to it: what an
// entry must carry, how its ID is formed, and which entries a filter
// selects once the retention has been applied.

package store

import (
	"errors"
	"fmt"
	"time"
)

// DefaultAuditTTL keeps audit entries for 90 days: long enough to answer
// "who changed this last quarter", short enough that a busy tenant's log
// stays small.
const DefaultAuditTTL = 90 * 24 * time.Hour

// MaxAuditList bounds one ListAudit answer whatever the filter's Limit.
const MaxAuditList = 1000

// AuditActor is who made a change: the API key's ID and name, or
// AuditActorNone when the API runs without keys.
type AuditActor struct {
	KeyID string `json:"keyId"`
	Name  string `json:"name,omitempty"`
}

// AuditActorNone is the actor's KeyID when authentication is off.
const AuditActorNone = "auth:none"

// AuditEntry is one state change made over the API. It names what changed
// (kind, ID and the field names of the request), never values: header
// values, sink configurations, URLs and keys are secrets and stay out.
type AuditEntry struct {
	// ID is assigned by AppendAudit: unique within the tenant and ordered
	// like (Time, append order).
	ID     string     `json:"id"`
	Time   time.Time  `json:"time"`
	Tenant string     `json:"tenant"`
	Actor  AuditActor `json:"actor"`
	// Action: create, update, delete, acknowledge, silence, create-key,
	// revoke-key (the API's vocabulary; the store keeps any string).
	Action     string `json:"action"`
	ObjectKind string `json:"objectKind"`
	ObjectID   string `json:"objectId,omitempty"`
	RequestID  string `json:"requestId,omitempty"`
	Status     int    `json:"status"`
	// Summary says what changed by field name only ("fields: name, schedule").
	Summary string `json:"summary,omitempty"`
}

// AuditFilter selects one tenant's entries: Since inclusive, Until
// exclusive (zero: unbounded), at most Limit (<= 0 or above MaxAuditList:
// MaxAuditList), newest first.
type AuditFilter struct {
	Tenant string
	Since  time.Time
	Until  time.Time
	Limit  int
}

// ValidAuditEntry checks what AppendAudit needs: a tenant, a time and an
// action.
func ValidAuditEntry(e AuditEntry) error {
	switch {
	case e.Tenant == "":
		return errors.New("append audit entry: tenant is required")
	case e.Time.IsZero():
		return errors.New("append audit entry: time is required")
	case e.Action == "":
		return errors.New("append audit entry: action is required")
	}
	return nil
}

// AuditID forms an entry's ID from its time and a per-tenant sequence
// number: 32 hex digits whose byte order is (time, sequence) order, so IDs
// sort like the log.
func AuditID(t time.Time, seq uint64) string {
	return fmt.Sprintf("%016x%016x", uint64(t.UnixNano())^(1<<63), seq)
}

// AuditWindow returns the half-open time range [from, until) a filter
// reads once the retention is applied at now: entries older than
// now-ttl are gone even if the backend has not yet deleted them. until is
// zero when unbounded.
func AuditWindow(f AuditFilter, now time.Time, ttl time.Duration) (from, until time.Time) {
	from = now.Add(-ttl)
	if f.Since.After(from) {
		from = f.Since
	}
	return from, f.Until
}

// AuditLimit returns how many entries a filter may return.
func AuditLimit(f AuditFilter) int {
	if f.Limit <= 0 || f.Limit > MaxAuditList {
		return MaxAuditList
	}
	return f.Limit
}
