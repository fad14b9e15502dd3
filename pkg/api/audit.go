package api

import (
	"cmp"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"path"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	apiv1 "github.com/mcpmon/mcpmon/pkg/api/v1"
	"github.com/mcpmon/mcpmon/pkg/auth"
	"github.com/mcpmon/mcpmon/pkg/store"
)

// The audit log: every state change that succeeded over /v1 leaves one
// entry — who (key ID and name, tenant), what (action, object kind and ID,
// the names of the fields sent), when, the request ID and the status —
// and an admin reads its tenant's with GET /v1/audit. Entries name fields,
// never values: header values, sinks, URLs and keys are secrets.

// AuditLog keeps the audit log. pkg/store/bolt and pkg/store/redis
// implement it (store.Audit).
type AuditLog interface {
	AppendAudit(ctx context.Context, e store.AuditEntry) error
	ListAudit(ctx context.Context, f store.AuditFilter) ([]store.AuditEntry, error)
}

// Metrics are the API's own metrics.
type Metrics struct {
	// AuditAppendFailures counts state changes that succeeded but left no
	// audit entry (the store refused the append).
	AuditAppendFailures prometheus.Counter
	// Agents are the per-agent series of the polls and results this
	// replica served (agentstatus.go).
	Agents *AgentMetrics
}

// NewMetrics registers the API's metrics on reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	return &Metrics{
		AuditAppendFailures: promauto.With(reg).NewCounter(prometheus.CounterOpts{
			Name: "mcpmon_audit_append_failures_total",
			Help: "State changes made over the API whose audit entry could not be stored.",
		}),
		Agents: newAgentMetrics(reg),
	}
}

// Audit actions.
const (
	ActionCreate      = "create"
	ActionUpdate      = "update"
	ActionDelete      = "delete"
	ActionAcknowledge = "acknowledge"
	ActionSilence     = "silence"     // a maintenance window created
	ActionPostUpdate  = "post-update" // an incident update posted
	ActionCreateKey   = "create-key"
	ActionRevokeKey   = "revoke-key"
	ActionProbe       = "probe"        // a probe asked for on demand
	ActionVerifyHost  = "verify-host"  // a status page's host proven
	ActionReleaseHost = "release-host" // a status page's host taken back by the operator
)

// auditRoute says what a state-changing route does, and which request
// body fields it may name in a summary (the route's input type).
type auditRoute struct {
	action, kind string
	fields       map[string]string // lower-case JSON name → JSON name
}

// auditRoutes maps "METHOD pattern" (chi's route pattern) to its audit
// meaning. A state-changing route missing here is still recorded, by
// auditOf's fallback.
var auditRoutes = map[string]auditRoute{
	"POST /v1/endpoints":                                      {ActionCreate, "endpoint", jsonFields(apiv1.EndpointInput{})},
	"PATCH /v1/endpoints/{id}":                                {ActionUpdate, "endpoint", jsonFields(apiv1.EndpointInput{})},
	"DELETE /v1/endpoints/{id}":                               {ActionDelete, "endpoint", nil},
	"POST /v1/endpoints/{id}/probe":                           {ActionProbe, "endpoint", nil},
	"POST /v1/incidents/{id}/ack":                             {ActionAcknowledge, "incident", jsonFields(apiv1.AckInput{})},
	"POST /v1/incidents/{id}/updates":                         {ActionPostUpdate, "incident", jsonFields(apiv1.UpdateInput{})},
	"POST /v1/maintenance":                                    {ActionSilence, "maintenance", jsonFields(apiv1.MaintenanceInput{})},
	"PUT /v1/maintenance/{id}":                                {ActionUpdate, "maintenance", jsonFields(apiv1.MaintenanceInput{})},
	"DELETE /v1/maintenance/{id}":                             {ActionDelete, "maintenance", nil},
	"POST /v1/status-pages":                                   {ActionCreate, "status-page", jsonFields(apiv1.StatusPageInput{})},
	"PUT /v1/status-pages/{id}":                               {ActionUpdate, "status-page", jsonFields(apiv1.StatusPageInput{})},
	"DELETE /v1/status-pages/{id}":                            {ActionDelete, "status-page", nil},
	"POST /v1/status-pages/{id}/verify-host":                  {ActionVerifyHost, "status-page", nil},
	"POST /v1/status-pages/{id}/subscribers":                  {ActionCreate, "status-subscriber", jsonFields(apiv1.WebhookSubscriberInput{})},
	"DELETE /v1/status-pages/{id}/subscribers/{subscriberId}": {ActionDelete, "status-subscriber", nil},
	"POST /v1/status-page-hosts/release":                      {ActionReleaseHost, "status-page-host", jsonFields(apiv1.HostReleaseInput{})},
	"POST /v1/keys":                                           {ActionCreateKey, "key", jsonFields(keyRequest{})},
	"DELETE /v1/keys/{id}":                                    {ActionRevokeKey, "key", nil},
}

// auditOf returns what a state-changing request on the route pattern does.
// A route without a row is named by its path: the first segment after /v1
// is the kind, a segment after {id} the action, else the method's verb;
// its summary names no field.
func auditOf(method, pattern string) auditRoute {
	if ar, ok := auditRoutes[method+" "+pattern]; ok {
		return ar
	}
	segs := strings.Split(strings.Trim(strings.TrimPrefix(pattern, "/v1"), "/"), "/")
	ar := auditRoute{kind: segs[0]}
	switch {
	case len(segs) > 2:
		ar.action = segs[len(segs)-1]
	case method == http.MethodPost:
		ar.action = ActionCreate
	case method == http.MethodDelete:
		ar.action = ActionDelete
	default:
		ar.action = ActionUpdate
	}
	return ar
}

// jsonFields lists the JSON member names of a struct type.
func jsonFields(v any) map[string]string {
	out := map[string]string{}
	t := reflect.TypeOf(v)
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" || !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out[strings.ToLower(name)] = name
	}
	return out
}

// auditSummary names the top-level members of a JSON request body that are
// fields of the route's input (encoding/json matches them without regard
// to case), and only counts the others: a member name that is not a field
// could be anything a client typed, a secret included. Values are never
// read.
func auditSummary(body []byte, fields map[string]string) string {
	var members map[string]json.RawMessage
	if len(body) == 0 || json.Unmarshal(body, &members) != nil || len(members) == 0 {
		return ""
	}
	seen := map[string]bool{}
	var names []string
	others := 0
	for m := range members {
		name, ok := fields[strings.ToLower(m)]
		switch {
		case !ok:
			others++
		case !seen[name]:
			seen[name] = true
			names = append(names, name)
		}
	}
	sort.Strings(names)
	var b strings.Builder
	if len(names) > 0 {
		b.WriteString("fields: " + strings.Join(names, ", "))
	}
	if others > 0 {
		if b.Len() > 0 {
			b.WriteString("; ")
		}
		b.WriteString(strconv.Itoa(others) + " other member(s)")
	}
	return b.String()
}

// capture keeps the first max bytes written to it and notes whether more
// came. It never fails, so a tee into it cannot break a request.
type capture struct {
	b        []byte
	max      int
	overflow bool
}

func (c *capture) Write(p []byte) (int, error) {
	if room := c.max - len(c.b); room < len(p) {
		c.overflow = true
		p = p[:max(room, 0)]
	}
	c.b = append(c.b, p...)
	return len(p), nil
}

// teeBody copies what the handler reads of a request body into a capture.
type teeBody struct {
	io.ReadCloser
	c *capture
}

func (t teeBody) Read(p []byte) (int, error) {
	n, err := t.ReadCloser.Read(p)
	_, _ = t.c.Write(p[:n])
	return n, err
}

const (
	// auditResponseCap bounds the copy of a response kept to read the
	// created object's ID from; a larger response falls back to Location
	// or the path.
	auditResponseCap = 64 << 10
	// auditAppendTimeout bounds the append after the change is made; the
	// response waits for it, so an entry exists when the client sees the
	// answer, and a stalled store delays the answer by at most this.
	auditAppendTimeout = 2 * time.Second
	maxAuditObjectID   = 200
)

// recordAudit is the middleware that appends an audit entry for every
// POST, PUT, PATCH and DELETE under /v1 that a handler answered with 2xx.
// It follows authenticate, so the key's principal is in the context. The
// append is best effort: the change is already made, so a failure is
// logged and counted, and the request still succeeds.
func (s *server) recordAudit(next http.Handler) http.Handler {
	if s.audit == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.Method {
		case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
		default:
			next.ServeHTTP(w, r)
			return
		}
		reqBody := &capture{max: int(s.maxBody)}
		if r.Body != nil && r.Body != http.NoBody {
			r.Body = teeBody{r.Body, reqBody}
		}
		resp := &capture{max: auditResponseCap}
		ww := middleware.NewWrapResponseWriter(w, r.ProtoMajor)
		ww.Tee(resp)
		next.ServeHTTP(ww, r)

		status := ww.Status()
		if status == 0 {
			status = http.StatusOK
		}
		rctx := chi.RouteContext(r.Context())
		if status < 200 || status > 299 || rctx == nil {
			return
		}
		ar := auditOf(r.Method, rctx.RoutePattern())
		e := store.AuditEntry{
			Time:       s.clock.Now().UTC(),
			Tenant:     auth.TenantFrom(r.Context()),
			Actor:      store.AuditActor{KeyID: store.AuditActorNone},
			Action:     ar.action,
			ObjectKind: ar.kind,
			ObjectID:   auditObjectID(resp, ww.Header(), rctx.URLParam("id")),
			RequestID:  middleware.GetReqID(r.Context()),
			Status:     status,
		}
		if p, ok := auth.FromContext(r.Context()); ok {
			e.Actor = store.AuditActor{KeyID: p.KeyID, Name: p.Name}
		}
		if !reqBody.overflow {
			e.Summary = auditSummary(reqBody.b, ar.fields)
		}
		// Detached: a client that hangs up after its change was made does
		// not take the change's entry with it.
		ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), auditAppendTimeout)
		defer cancel()
		if err := s.audit.AppendAudit(ctx, e); err != nil {
			s.log.Warn("audit entry not recorded", "action", e.Action, "kind", e.ObjectKind, "object", e.ObjectID,
				"tenant", e.Tenant, "request_id", e.RequestID, "err", err)
			if s.metrics != nil {
				s.metrics.AuditAppendFailures.Inc()
			}
		}
	})
}

// auditObjectID names the object a request changed: the "id" of a JSON
// response (a created object; a key revoked by name), or its "host" (a
// status page host released), else the Location
// of a create, else the route's {id}. Only the ID member of the response
// is decoded: a created key's secret is in the same body.
func auditObjectID(resp *capture, h http.Header, param string) string {
	id := ""
	if !resp.overflow && strings.HasPrefix(h.Get("Content-Type"), "application/json") {
		var v struct {
			ID   string `json:"id"`
			Host string `json:"host"` // a status page host released (statuspagehosts.go)
		}
		if json.Unmarshal(resp.b, &v) == nil {
			id = cmp.Or(v.ID, v.Host)
		}
	}
	if loc := h.Get("Location"); id == "" && loc != "" {
		id = path.Base(loc)
	}
	if id == "" {
		id = param
	}
	if len(id) > maxAuditObjectID {
		id = id[:maxAuditObjectID]
	}
	return id
}

// auditLogRoutes serves GET /v1/audit (admin): the caller's tenant's entries,
// newest first, ?since= and ?until= (RFC 3339; since inclusive, until
// exclusive) and ?limit= (default 100, at most 1000).
func (s *server) auditLogRoutes(r chi.Router) {
	r.Use(s.requireScope(auth.ScopeAdmin))
	r.Get("/", s.listAudit)
}

func (s *server) listAudit(w http.ResponseWriter, r *http.Request) {
	if s.audit == nil {
		writeProblem(w, r, problemf(http.StatusNotFound, "", "this server keeps no audit log"))
		return
	}
	limit, cur, p := pageParams(r, cursorAudit)
	if p != nil {
		writeProblem(w, r, p)
		return
	}
	f := store.AuditFilter{Tenant: auth.TenantFrom(r.Context()), Limit: limit}
	var errs []apiv1.FieldError
	for _, q := range []struct {
		name string
		dst  *time.Time
	}{{"since", &f.Since}, {"until", &f.Until}} {
		raw := r.URL.Query().Get(q.name)
		if raw == "" {
			continue
		}
		t, err := time.Parse(time.RFC3339Nano, raw)
		if err != nil {
			errs = append(errs, apiv1.FieldError{Pointer: "?" + q.name, Detail: `must be an RFC 3339 time such as "2026-03-01T12:00:00Z"`})
			continue
		}
		if detail := timeInRange(t); detail != "" {
			errs = append(errs, apiv1.FieldError{Pointer: "?" + q.name, Detail: detail})
			continue
		}
		*q.dst = t
	}
	if len(errs) == 0 && !f.Since.IsZero() && !f.Until.IsZero() && !f.Since.Before(f.Until) {
		errs = append(errs, apiv1.FieldError{Pointer: "?until", Detail: "must be after since"})
	}
	if len(errs) > 0 {
		writeProblem(w, r, invalid(errs...))
		return
	}
	entries, more, err := s.auditPage(r, f, cur)
	if err != nil {
		writeProblem(w, r, s.storeProblem(r, err, "audit log"))
		return
	}
	next := ""
	if more && len(entries) > 0 {
		last := entries[len(entries)-1]
		next = encodeCursor(cursor{Kind: cursorAudit, At: last.Time, ID: last.ID})
	}
	var out []apiv1.AuditEntryView // nil stays nil: the body encodes what the store returned
	if entries != nil {
		out = make([]apiv1.AuditEntryView, 0, len(entries))
	}
	for _, e := range entries {
		out = append(out, auditEntryView(e))
	}
	writeJSON(w, http.StatusOK, struct {
		Entries    []apiv1.AuditEntryView `json:"entries"`
		NextCursor string                 `json:"nextCursor,omitempty"`
	}{out, next})
}

func auditEntryView(e store.AuditEntry) apiv1.AuditEntryView {
	return apiv1.AuditEntryView{
		ID: e.ID, Time: e.Time, Tenant: e.Tenant, Actor: apiv1.AuditActorView{KeyID: e.Actor.KeyID, Name: e.Actor.Name},
		Action: e.Action, ObjectKind: e.ObjectKind, ObjectID: e.ObjectID, RequestID: e.RequestID, Status: e.Status, Summary: e.Summary,
	}
}

// auditPage reads up to f.Limit entries after the cursor (IDs sort like
// the log, newest last, so "after" in the newest-first walk is a lower
// ID) and whether more remain. The store filters by time: the read ends
// just past the cursor's time (whole microseconds, the coarsest clock a
// backend keeps), and entries at or above the cursor's ID — ties of the
// cursor's time — are dropped here, reading a few more when ties filled
// the batch.
func (s *server) auditPage(r *http.Request, f store.AuditFilter, cur *cursor) ([]store.AuditEntry, bool, error) {
	limit := f.Limit
	if cur != nil {
		if until := cur.At.Truncate(time.Microsecond).Add(time.Microsecond); f.Until.IsZero() || until.Before(f.Until) {
			f.Until = until
		}
	}
	for extra := 0; ; extra = max(8, extra*4) {
		f.Limit = min(limit+1+extra, store.MaxAuditList)
		batch, err := s.audit.ListAudit(r.Context(), f)
		if err != nil {
			return nil, false, err
		}
		kept := batch[:0]
		for _, e := range batch {
			if cur == nil || e.ID < cur.ID {
				kept = append(kept, e)
			}
		}
		full := len(batch) == f.Limit // the store may hold more
		switch {
		case len(kept) > limit:
			return kept[:limit], true, nil
		case !full:
			return kept, false, nil
		case f.Limit == store.MaxAuditList:
			// At the store's cap more may remain: say so (the next page
			// may then be empty).
			return kept, true, nil
		}
	}
}
