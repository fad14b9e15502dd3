// The rules every backend applies the same way, written once so bolt and
// redis cannot drift apart: how an endpoint's version and timestamps move,
// which incidents a filter selects and which stay in the open-incident
// index, the order of a window's results, and how delivery records are
// checked, named, merged and sorted. What stays in the backends is how they
// store and index; what a stored value becomes is decided here.

package store

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/msg"
)

// ---- Endpoints

// FirstEndpointVersion returns e as CreateEndpoint stores it: Version 1,
// CreatedAt defaulted to now, UpdatedAt equal to CreatedAt.
func FirstEndpointVersion(e model.Endpoint, now time.Time) (model.Endpoint, error) {
	if e.ID == "" {
		return model.Endpoint{}, errors.New("create endpoint: ID is required")
	}
	if e.CreatedAt.IsZero() {
		e.CreatedAt = now.UTC()
	}
	e.Tenant = model.TenantOf(e.Tenant)
	e.UpdatedAt = e.CreatedAt
	e.Version = 1
	return e, nil
}

// NextEndpointVersion returns e as UpdateEndpoint stores it over cur, the
// stored endpoint: ErrConflict unless e carries cur's Version; otherwise
// cur's CreatedAt and Tenant (a tenant is fixed at creation: the per-tenant
// index is keyed by it), UpdatedAt now and the next Version. The backend still
// compare-and-sets the write, since cur may change before it lands.
func NextEndpointVersion(cur, e model.Endpoint, now time.Time) (model.Endpoint, error) {
	if cur.Version != e.Version {
		return model.Endpoint{}, fmt.Errorf("update endpoint %s: have version %d, stored %d: %w", e.ID, e.Version, cur.Version, ErrConflict)
	}
	e.CreatedAt = cur.CreatedAt
	e.Tenant = cur.Tenant
	e.UpdatedAt = now.UTC()
	e.Version = cur.Version + 1
	return e, nil
}

// ---- Results

// SortResults puts a window's results in the order WindowResults returns
// them: by Region, then ProbeRunID.
func SortResults(rs []msg.ProbeResult) {
	slices.SortFunc(rs, func(a, b msg.ProbeResult) int {
		return cmp.Or(strings.Compare(a.Region, b.Region), strings.Compare(a.ProbeRunID, b.ProbeRunID))
	})
}

// ---- Incidents

// Match reports whether f selects inc: every non-zero field must agree.
// The backends walk an index (the endpoint's own when f names one) and keep
// what Match accepts.
func (f IncidentFilter) Match(inc model.Incident) bool {
	return (f.Tenant == "" || model.TenantOf(inc.Tenant) == model.TenantOf(f.Tenant)) &&
		(f.EndpointID == "" || inc.EndpointID == f.EndpointID) &&
		(f.State == "" || inc.State == f.State) &&
		(f.After == nil || f.After.Before(inc))
}

// Before reports whether k comes before inc in ListIncidents order (newest
// OpenedWindow first, ties by ID descending).
func (k IncidentKey) Before(inc model.Incident) bool {
	if c := inc.OpenedWindow.Compare(k.OpenedWindow); c != 0 {
		return c < 0
	}
	return inc.ID < k.ID
}

// Full reports whether n matches are as many as f asks for (never, without
// a Limit).
func (f IncidentFilter) Full(n int) bool { return f.Limit > 0 && n >= f.Limit }

// ---- Deliveries

// MergeDelivery folds next, the outcome of one more dispatch of a
// notification, into cur, its stored record: attempts add up, the first
// attempt and delivery times keep the earliest, the last attempt the latest,
// and the last non-empty error wins. Outcome is next's, except that
// delivered is final: a replica that finds the ledger done (skipped), or
// one whose record arrives late, must not hide a delivery.
func MergeDelivery(cur, next model.Delivery) model.Delivery {
	out := next
	out.Attempts = cur.Attempts + next.Attempts
	out.FirstAttemptAt = earliest(cur.FirstAttemptAt, next.FirstAttemptAt)
	out.DeliveredAt = earliest(cur.DeliveredAt, next.DeliveredAt)
	if cur.LastAttemptAt.After(next.LastAttemptAt) {
		out.LastAttemptAt = cur.LastAttemptAt
	}
	if out.LastError == "" {
		out.LastError = cur.LastError
	}
	if cur.Outcome == model.DeliveryDelivered {
		out.Outcome = model.DeliveryDelivered
	}
	return out
}

func earliest(a, b time.Time) time.Time {
	if a.IsZero() || (!b.IsZero() && b.Before(a)) {
		return b
	}
	return a
}

// SortDeliveries orders records by kind, then sink. Kinds compare as
// open < reminder-1 < reminder-2 < … < reminder-10 < resolve: a numeric
// suffix compares as a number, so the order is the incident's history.
func SortDeliveries(ds []model.Delivery) {
	slices.SortFunc(ds, func(a, b model.Delivery) int {
		ak, an := kindOrder(a.Kind)
		bk, bn := kindOrder(b.Kind)
		return cmp.Or(strings.Compare(ak, bk), cmp.Compare(an, bn), strings.Compare(a.Kind, b.Kind), strings.Compare(a.Sink, b.Sink))
	})
}

func kindOrder(kind string) (string, int) {
	if base, num, ok := strings.Cut(kind, "-"); ok {
		if n, err := strconv.Atoi(num); err == nil {
			return base, n
		}
	}
	return kind, -1
}

// DeliveryField is the name of a record within its incident: kind:sink.
// Kinds never contain ':', so it is unambiguous.
func DeliveryField(d model.Delivery) string { return d.Kind + ":" + d.Sink }

// ValidDelivery checks what every backend's RecordDelivery requires.
func ValidDelivery(incidentID string, d model.Delivery) error {
	switch {
	case incidentID == "" || d.Kind == "" || d.Sink == "":
		return errors.New("record delivery: incident ID, kind and sink are required")
	case strings.Contains(d.Kind, ":"):
		return errors.New("record delivery: kind must not contain ':'")
	}
	return nil
}

// ---- Tenant-owned objects

// TenantKinds returns the Objects kinds whose documents belong to a tenant
// and are indexed by it: maintenance windows.
func TenantKinds() [1]string { return [1]string{model.MaintenanceKind} }

// IsTenantKind reports whether kind is one of TenantKinds.
func IsTenantKind(kind string) bool {
	kinds := TenantKinds()
	return slices.Contains(kinds[:], kind)
}

// ObjectTenant returns the tenant a document of a TenantKinds kind belongs
// to: TenantOf its top-level "tenant" field.
func ObjectTenant(doc []byte) (string, error) {
	var d struct {
		Tenant string `json:"tenant"`
	}
	if err := json.Unmarshal(doc, &d); err != nil {
		return "", fmt.Errorf("read the tenant of a document: %w", err)
	}
	return model.TenantOf(d.Tenant), nil
}

// ErrNotTenantKind is returned by the tenant-scoped Objects methods for a
// kind that is not one of TenantKinds.
var ErrNotTenantKind = errors.New("object kind is not indexed by tenant")
