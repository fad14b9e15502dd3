package api

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"

	apiv1 "github.com/mcpmon/mcpmon/pkg/api/v1"
	"github.com/mcpmon/mcpmon/pkg/auth"
	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/store"
)

// statusPageHostRoutes serves /v1/status-page-hosts: the deployment
// operator's hold over custom hosts, across tenants. A host is a name on
// the public internet, not a tenant's object, so taking one back (a
// domain's owner complains before the re-checks' grace has run out, or a
// page abuses a name) is the operator's: an admin key of the default
// tenant, as for the dead-letter queues (dlq.go); every other key gets
// the 404 of an unknown path.
func (s *server) statusPageHostRoutes(r chi.Router) {
	r.Use(s.requireScope(auth.ScopeAdmin), s.operatorOnly)
	r.Post("/release", s.releaseHost)
}

// auditActorOperator is the actor a page's tenant reads in its own audit
// log for a release the operator made: the operator's key is the
// operator's tenant's business.
const auditActorOperator = "operator"

// releaseHost serves POST /v1/status-page-hosts/release {"host": H}: every
// page, of any tenant, that holds H verified or grandfathered goes back
// to pending (model.StatusPage.ReleaseHost), so H is served by none and
// held against no new claim; a page that proves H again by DNS gets it
// back. 404 when no page names H; 200 with the pages released, none when
// every page naming H was pending already (so a retry is harmless).
//
// Each page is written on its own: a failure part-way leaves the pages
// before it released and answers the error, and a retry releases the
// rest. Besides the operator's audit entry (the middleware's), each
// page's tenant gets one in its own log, after its page is written.
func (s *server) releaseHost(w http.ResponseWriter, r *http.Request) {
	body, prob := s.readBody(w, r, false)
	if prob != nil {
		writeProblem(w, r, prob)
		return
	}
	var in apiv1.HostReleaseInput
	if prob := decodeStrict(body, &in); prob != nil {
		writeProblem(w, r, prob)
		return
	}
	host := strings.TrimSpace(in.Host)
	switch {
	case host == "":
		writeProblem(w, r, invalid(apiv1.FieldError{Pointer: "#/host", Detail: "is required"}))
		return
	case model.HostProblem(host) != "":
		writeProblem(w, r, invalid(apiv1.FieldError{Pointer: "#/host", Detail: model.HostProblem(host)}))
		return
	}
	pages, prob := s.allStatusPages(r)
	if prob != nil {
		writeProblem(w, r, prob)
		return
	}
	pages = slices.DeleteFunc(pages, func(p model.StatusPage) bool { return p.Host != host })
	if len(pages) == 0 {
		writeProblem(w, r, problemf(http.StatusNotFound, "", "no status page has the host %s", host))
		return
	}
	slices.SortFunc(pages, func(a, b model.StatusPage) int { return strings.Compare(a.ID, b.ID) })
	out := apiv1.HostReleaseView{Host: host, Released: []apiv1.ReleasedPage{}}
	now := s.clock.Now().UTC()
	for _, p := range pages {
		released, changed := p.ReleaseHost(now, model.NewHostToken())
		if !changed {
			continue
		}
		released.UpdatedAt = now
		doc, err := json.Marshal(released)
		if err != nil {
			writeProblem(w, r, problemf(http.StatusInternalServerError, "", "encoding status page %s failed", p.ID))
			return
		}
		if err := s.store.PutObject(r.Context(), store.KindStatusPage, p.ID, doc); err != nil {
			writeProblem(w, r, s.storeProblem(r, err, "status page "+p.ID))
			return
		}
		s.log.Warn("status page host released by the operator", "host", host, "page", p.ID, "tenant", model.TenantOf(p.Tenant))
		s.auditTenant(r, store.AuditEntry{Tenant: model.TenantOf(p.Tenant), Action: ActionReleaseHost, ObjectKind: "status-page", ObjectID: p.ID,
			Summary: "host released by the deployment's operator"})
		out.Released = append(out.Released, apiv1.ReleasedPage{ID: p.ID, Tenant: model.TenantOf(p.Tenant), Slug: p.Slug})
	}
	writeJSON(w, http.StatusOK, out)
}

// auditTenant appends e, a change the operator made to a tenant's object,
// to that tenant's audit log, best effort as the middleware's entries are.
func (s *server) auditTenant(r *http.Request, e store.AuditEntry) {
	if s.audit == nil {
		return
	}
	e.Time = s.clock.Now().UTC()
	e.Actor = store.AuditActor{KeyID: auditActorOperator}
	e.RequestID = middleware.GetReqID(r.Context())
	e.Status = http.StatusOK
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), auditAppendTimeout)
	defer cancel()
	if err := s.audit.AppendAudit(ctx, e); err != nil {
		s.log.Warn("audit entry not recorded", "action", e.Action, "kind", e.ObjectKind, "object", e.ObjectID, "tenant", e.Tenant, "err", err)
		if s.metrics != nil {
			s.metrics.AuditAppendFailures.Inc()
		}
	}
}
