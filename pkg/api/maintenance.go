package api

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	apiv1 "github.com/mcpmon/mcpmon/pkg/api/v1"
	"github.com/mcpmon/mcpmon/pkg/auth"
	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/store"
)

func maintenanceView(m model.Maintenance) apiv1.MaintenanceView {
	v := apiv1.MaintenanceView{
		ID: m.ID, Tenant: model.TenantOf(m.Tenant), Name: m.Name, EndpointIDs: m.EndpointIDs, Selector: m.Selector,
		Start: m.Start, End: m.End, Cron: m.Cron, CreatedAt: m.CreatedAt,
	}
	if m.Duration > 0 {
		v.Duration = m.Duration.String()
	}
	return v
}

// toMaintenance validates in: the caps first (model.Maintenance.Bounds,
// lengths only), then model.Maintenance.Validate, the same check the
// alerter relies on.
func toMaintenance(in apiv1.MaintenanceInput) (model.Maintenance, *apiv1.Problem) {
	m := model.Maintenance{
		Name: strings.TrimSpace(in.Name), EndpointIDs: in.EndpointIDs, Selector: in.Selector,
		Start: in.Start.UTC(), End: in.End.UTC(), Cron: strings.TrimSpace(in.Cron),
	}
	if in.Start.IsZero() {
		m.Start = time.Time{}
	}
	if in.End.IsZero() {
		m.End = time.Time{}
	}
	if ptr, detail := m.Bounds(); ptr != "" {
		return m, invalid(apiv1.FieldError{Pointer: ptr, Detail: detail})
	}
	if in.Duration != "" {
		d, err := time.ParseDuration(in.Duration)
		if err != nil || d <= 0 {
			return m, invalid(apiv1.FieldError{Pointer: "#/duration", Detail: "must be a positive Go duration such as \"2h\""})
		}
		m.Duration = d
	}
	if detail := textProblem(m.Name); detail != "" {
		return m, invalid(apiv1.FieldError{Pointer: "#/name", Detail: detail})
	}
	for i, id := range m.EndpointIDs {
		if strings.TrimSpace(id) == "" {
			return m, invalid(apiv1.FieldError{Pointer: "#/endpointIds/" + strconv.Itoa(i), Detail: "must not be empty"})
		}
	}
	if err := m.Validate(); err != nil {
		return m, invalid(windowFieldError(m, err))
	}
	return m, nil
}

// windowFieldError turns model.Maintenance.Validate's error into a field
// problem: Validate keeps the rules (the alerter relies on them) and says
// which one is broken, for a window whose ID a create has not assigned
// yet; this names the field the rule is about, from the same state, and
// drops the "invalid maintenance window \"\"" that names nothing. A
// start or end sent as 0001-01-01T00:00:00Z decodes to the zero time,
// which is what unset means, so the detail says so.
func windowFieldError(m model.Maintenance, err error) apiv1.FieldError {
	detail := strings.TrimPrefix(err.Error(), fmt.Sprintf("%v %q: ", model.ErrInvalidMaintenance, m.ID))
	oneOff, recurring := !m.Start.IsZero() || !m.End.IsZero(), m.Cron != "" || m.Duration != 0
	const zero = " (0001-01-01T00:00:00Z is the zero time, which counts as unset)"
	switch {
	case len(m.EndpointIDs) == 0 && len(m.Selector) == 0:
		return apiv1.FieldError{Pointer: "#/endpointIds", Detail: detail}
	case oneOff && recurring:
		if m.Cron != "" {
			return apiv1.FieldError{Pointer: "#/cron", Detail: detail}
		}
		return apiv1.FieldError{Pointer: "#/duration", Detail: detail}
	case oneOff && m.Start.IsZero():
		return apiv1.FieldError{Pointer: "#/start", Detail: detail + "; start is unset" + zero}
	case oneOff && m.End.IsZero():
		return apiv1.FieldError{Pointer: "#/end", Detail: detail + "; end is unset" + zero}
	case oneOff:
		return apiv1.FieldError{Pointer: "#/end", Detail: detail}
	case recurring && m.Duration <= 0 && m.Cron != "":
		return apiv1.FieldError{Pointer: "#/duration", Detail: detail}
	case recurring:
		return apiv1.FieldError{Pointer: "#/cron", Detail: detail}
	}
	return apiv1.FieldError{Pointer: "#/start", Detail: detail}
}

// listMaintenance serves one page of the tenant's windows in ID order,
// from the store's per-tenant index: the request reads and decodes the
// tenant's windows (at most --max-maintenance-per-tenant, each within the
// caps), never another tenant's.
func (s *server) listMaintenance(w http.ResponseWriter, r *http.Request) {
	limit, cur, p := pageParams(r, cursorMaintenance)
	if p != nil {
		writeProblem(w, r, p)
		return
	}
	docs, err := s.store.ListObjectsOf(r.Context(), store.KindMaintenance, auth.TenantFrom(r.Context()))
	if err != nil {
		writeProblem(w, r, s.storeProblem(r, err, "maintenance windows"))
		return
	}
	ids := make([]string, 0, len(docs))
	for id := range docs {
		if cur == nil || id > cur.ID {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	out := make([]apiv1.MaintenanceView, 0, min(limit, len(ids)))
	next := ""
	for _, id := range ids {
		if len(out) == limit {
			next = encodeCursor(cursor{Kind: cursorMaintenance, ID: out[limit-1].ID})
			break
		}
		m, err := model.DecodeMaintenance(docs[id])
		if err != nil {
			s.log.Error("skipping undecodable maintenance window", "id", id, "err", err)
			continue
		}
		out = append(out, maintenanceView(m))
	}
	writeJSON(w, http.StatusOK, struct {
		Maintenance []apiv1.MaintenanceView `json:"maintenance"`
		NextCursor  string                  `json:"nextCursor,omitempty"`
	}{out, next})
}

func (s *server) getMaintenance(w http.ResponseWriter, r *http.Request) {
	id := chi.URLParam(r, "id")
	m, p := s.loadMaintenance(r, id)
	if p != nil {
		writeProblem(w, r, p)
		return
	}
	writeJSON(w, http.StatusOK, maintenanceView(m))
}

// loadMaintenance reads window id if it is the request's tenant's; another
// tenant's is the same 404 as a missing one, decided from the store's
// tenant index before the document is read.
func (s *server) loadMaintenance(r *http.Request, id string) (model.Maintenance, *apiv1.Problem) {
	doc, err := s.store.GetObjectOf(r.Context(), store.KindMaintenance, auth.TenantFrom(r.Context()), id)
	if err != nil {
		return model.Maintenance{}, s.storeProblem(r, err, "maintenance window "+id)
	}
	m, err := model.DecodeMaintenance(doc)
	if err != nil {
		s.log.Error("undecodable maintenance window", "id", id, "err", err)
		return model.Maintenance{}, problemf(http.StatusInternalServerError, "", "maintenance window %s is unreadable", id)
	}
	return m, nil
}

func (s *server) createMaintenance(w http.ResponseWriter, r *http.Request) {
	m, p := s.readMaintenance(w, r)
	if p != nil {
		writeProblem(w, r, p)
		return
	}
	m.ID = s.newID()
	m.Tenant = auth.TenantFrom(r.Context())
	m.CreatedAt = s.clock.Now().UTC()
	if p := s.saveMaintenance(r, m, true); p != nil {
		writeProblem(w, r, p)
		return
	}
	w.Header().Set("Location", "/v1/maintenance/"+m.ID)
	writeJSON(w, http.StatusCreated, maintenanceView(m))
}

// putMaintenance replaces an existing window (IDs are assigned by POST).
func (s *server) putMaintenance(w http.ResponseWriter, r *http.Request) {
	id := chi.URLParam(r, "id")
	m, p := s.readMaintenance(w, r)
	if p != nil {
		writeProblem(w, r, p)
		return
	}
	old, p := s.loadMaintenance(r, id)
	if p != nil {
		writeProblem(w, r, p)
		return
	}
	m.ID, m.Tenant, m.CreatedAt = id, old.Tenant, old.CreatedAt
	if p := s.saveMaintenance(r, m, false); p != nil {
		writeProblem(w, r, p)
		return
	}
	writeJSON(w, http.StatusOK, maintenanceView(m))
}

// readMaintenance reads a window's body, at most model.MaxWindowBytes of
// it (413 beyond), before anything decodes it.
func (s *server) readMaintenance(w http.ResponseWriter, r *http.Request) (model.Maintenance, *apiv1.Problem) {
	r.Body = http.MaxBytesReader(w, r.Body, model.MaxWindowBytes)
	body, p := s.readBody(w, r, false)
	if p != nil {
		return model.Maintenance{}, p
	}
	var in apiv1.MaintenanceInput
	if p := decodeStrict(body, &in); p != nil {
		return model.Maintenance{}, p
	}
	return toMaintenance(in)
}

// saveMaintenance stores m; a new window only while its tenant holds fewer
// than the quota, counted by the store in the write's own transaction.
func (s *server) saveMaintenance(r *http.Request, m model.Maintenance, create bool) *apiv1.Problem {
	doc, err := json.Marshal(m)
	if err != nil {
		s.log.Error("encode maintenance window", "id", m.ID, "err", err)
		return problemf(http.StatusInternalServerError, "", "encoding maintenance window failed")
	}
	if len(doc) > model.MaxWindowBytes {
		return problemf(http.StatusRequestEntityTooLarge, "", "a maintenance window may be at most %d bytes stored", model.MaxWindowBytes)
	}
	limit := 0
	if create {
		limit = s.quotas.MaxMaintenance
	}
	err = s.store.PutObjectWithin(r.Context(), store.KindMaintenance, m.ID, doc, limit)
	if isQuota(err) {
		return quotaProblem("maintenance windows", "--max-maintenance-per-tenant", s.quotas.MaxMaintenance)
	}
	if err != nil {
		return s.storeProblem(r, err, "maintenance window "+m.ID)
	}
	return nil
}

func (s *server) deleteMaintenance(w http.ResponseWriter, r *http.Request) {
	id := chi.URLParam(r, "id")
	if _, p := s.loadMaintenance(r, id); p != nil {
		writeProblem(w, r, p)
		return
	}
	if err := s.store.DeleteObject(r.Context(), store.KindMaintenance, id); err != nil {
		writeProblem(w, r, s.storeProblem(r, err, "maintenance window "+id))
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
