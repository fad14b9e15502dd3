package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	apiv1 "github.com/mcpmon/mcpmon/pkg/api/v1"
	"github.com/mcpmon/mcpmon/pkg/auth"
	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/msg"
	"github.com/mcpmon/mcpmon/pkg/schedule"
	"github.com/mcpmon/mcpmon/pkg/store"
)

// patchMaxRetries bounds how often a PATCH that lost a compare-and-set
// race is merged again on the fresh version before answering 409.
const patchMaxRetries = 3

// reservedHeaders are set by the prober itself; letting an endpoint override
// them would break the protocol exchange or the HTTP framing, or (the W3C
// trace context) forge the probe's trace for the server's spans.
var reservedHeaders = map[string]bool{
	"Accept": true, "Connection": true, "Content-Length": true, "Content-Type": true, "Host": true,
	"Keep-Alive": true, "Last-Event-Id": true, "Mcp-Method": true, "Mcp-Protocol-Version": true,
	"Mcp-Session-Id": true, "Mcp-Name": true, "Proxy-Connection": true, "Te": true, "Trailer": true,
	"Transfer-Encoding": true, "Upgrade": true, "Traceparent": true, "Tracestate": true,
}

var labelKeyRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_./-]*$`)

func (s *server) endpointView(e model.Endpoint) apiv1.EndpointView {
	v := apiv1.EndpointView{
		ID: e.ID, Tenant: model.TenantOf(e.Tenant), Name: e.Name, URL: model.RedactURL(e.URL), Transport: e.Transport, ProtocolVersion: e.ProtocolVersion,
		Schedule: e.Schedule, Timeout: e.Timeout.String(), Labels: e.Labels, Paused: e.Paused,
		Public: e.Public, Slug: e.Slug, Regions: e.Regions, CreatedAt: e.CreatedAt, UpdatedAt: e.UpdatedAt, Version: e.Version,
	}
	v.PublicConformance = e.PublicConformance
	if v.Transport == "" {
		// A record written without one (by an older version, or straight
		// to the store) is probed as auto: say so, as the contract does.
		v.Transport = apiv1.DefaultTransport
	}
	if e.LatencyThreshold > 0 {
		v.LatencyThreshold = e.LatencyThreshold.String()
	}
	if len(e.Headers) > 0 {
		v.Headers = make(map[string]string, len(e.Headers))
		for k, val := range e.Headers {
			v.Headers[k] = model.RedactValue(val)
		}
	}
	v.Rules = rulesInput(e.Rules)
	if len(e.Sinks) > 0 {
		v.Sinks = s.redact(e.Sinks)
	}
	setState(&v, e, msg.Verdict{}, false)
	v.ToolCheck, v.OAuth = toolCheckView(e.ToolCheck), oauthView(e.OAuth)
	if e.CredentialWarning > 0 {
		v.CredentialWarning = e.CredentialWarning.String()
	}
	v.TraceContext = e.TraceContext
	return v
}

// setState fills v's State and StateWindow from the endpoint and its last
// verdict (found false when it has none yet).
func setState(v *apiv1.EndpointView, e model.Endpoint, last msg.Verdict, found bool) {
	switch {
	case e.Paused:
		v.State = apiv1.StatePaused
	case !found:
		v.State = apiv1.StatePending
	default:
		v.State = string(last.State)
	}
	if found {
		w := last.Window.UTC()
		v.StateWindow = &w
	}
}

func rulesInput(r *model.Rules) *apiv1.RulesInput {
	if r == nil {
		return nil
	}
	in := &apiv1.RulesInput{OpenAfter: r.OpenAfter, OpenWindow: r.OpenWindow, ResolveAfter: r.ResolveAfter, RegionQuorum: r.RegionQuorum}
	if r.RepeatInterval > 0 {
		in.RepeatInterval = r.RepeatInterval.String()
	}
	return in
}

// input is the stored endpoint as an apiv1.EndpointInput (with real header values:
// server-side only), the base a PATCH merges into.
func input(e model.Endpoint) apiv1.EndpointInput {
	in := apiv1.EndpointInput{
		Name: e.Name, URL: e.URL, Transport: e.Transport, ProtocolVersion: e.ProtocolVersion,
		Schedule: e.Schedule, Headers: e.Headers, Labels: e.Labels,
		Rules: rulesInput(e.Rules), Sinks: e.Sinks, Paused: e.Paused,
		Public: e.Public, Slug: e.Slug, Regions: e.Regions, TraceContext: e.TraceContext,
	}
	in.PublicConformance = e.PublicConformance
	if e.Timeout > 0 { // a record written without one gets the default
		in.Timeout = e.Timeout.String()
	}
	if e.LatencyThreshold > 0 {
		in.LatencyThreshold = e.LatencyThreshold.String()
	}
	deepCheckInput(e, &in)
	return in
}

func resultView(r msg.ProbeResult) *apiv1.ResultView {
	v := &apiv1.ResultView{
		ProbeRunID: r.ProbeRunID, Slot: r.Slot, Region: r.Region, StartedAt: r.StartedAt, FinishedAt: r.FinishedAt,
		Status: r.Status, Class: r.Class, Error: r.Error, HTTPStatus: r.HTTPStatus, Transport: r.Transport,
		ProtocolVersion: r.ProtocolVersion, ServerName: r.ServerName, ServerVersion: r.ServerVersion,
		CertExpiry: r.CertExpiry, ToolCount: r.ToolCount, CatalogFingerprint: r.CatalogFingerprint,
		CatalogTruncated: r.CatalogTruncated, Events: r.Events, Blind: r.Blind,
	}
	if r.Blind && !r.BlindSince.IsZero() {
		since := r.BlindSince
		v.BlindSince = &since
	}
	if len(r.Phases) > 0 {
		v.Phases = make(map[string]string, len(r.Phases))
		for k, secs := range r.Phases {
			v.Phases[k] = msg.PhaseDuration(secs).String()
		}
	}
	return v
}

func verdictView(v msg.Verdict) apiv1.VerdictView {
	return apiv1.VerdictView{
		Window: v.Window, WindowLength: (time.Duration(v.WindowSecs) * time.Second).String(), State: v.State,
		Class: v.Class, Reason: v.Reason, Results: v.Results, FailingRegions: v.FailingRegions, RegionStates: v.RegionStates,
		FirstProbeAt: v.FirstProbeAt, EmittedAt: v.EmittedAt,
	}
}

func validHeaderName(name string) bool {
	if name == "" {
		return false
	}
	for _, c := range []byte(name) {
		isAlnum := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
		if !isAlnum && !strings.ContainsRune("!#$%&'*+-.^_`|~", rune(c)) {
			return false
		}
	}
	return true
}

func pointerEscape(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// ---- handlers

func (s *server) createEndpoint(w http.ResponseWriter, r *http.Request) {
	body, p := s.readBody(w, r, false)
	if p != nil {
		writeProblem(w, r, p)
		return
	}
	var in apiv1.EndpointInput
	if p := decodeStrict(body, &in); p != nil {
		writeProblem(w, r, p)
		return
	}
	e, errs := s.toEndpoint(in, true)
	if len(errs) > 0 {
		writeProblem(w, r, invalid(errs...))
		return
	}
	e.ID = s.newID()
	e.Tenant = auth.TenantFrom(r.Context())
	if p := s.slugTaken(r, e); p != nil {
		writeProblem(w, r, p)
		return
	}
	created, err := s.store.CreateEndpointWithin(r.Context(), e, s.quotas.MaxEndpoints)
	if isQuota(err) {
		writeProblem(w, r, quotaProblem("endpoints", "--max-endpoints-per-tenant", s.quotas.MaxEndpoints))
		return
	}
	if err != nil {
		writeProblem(w, r, s.storeProblem(r, err, "endpoint "+e.ID))
		return
	}
	s.schedule(created)
	w.Header().Set("Location", "/v1/endpoints/"+created.ID)
	w.Header().Set("ETag", etag(created.Version))
	writeJSON(w, http.StatusCreated, s.endpointView(created))
}

// endpointStates are the values of ?state= on GET /v1/endpoints.
var endpointStates = []string{
	string(msg.StateUp), string(msg.StateDegraded), string(msg.StateDown), string(msg.StateRegional),
	string(msg.StateNoData), apiv1.StatePaused, apiv1.StatePending,
}

// listEndpoints serves one page of the tenant's endpoints in ID order:
// ListEndpointsPage reads limit of them from the tenant's index, and the
// selector and state filters keep what matches, so the response (and
// what the request holds) is bounded by the page, not by the tenant.
func (s *server) listEndpoints(w http.ResponseWriter, r *http.Request) {
	limit, cur, p := pageParams(r, cursorEndpoints)
	if p != nil {
		writeProblem(w, r, p)
		return
	}
	sel, p := parseSelector(r)
	if p != nil {
		writeProblem(w, r, p)
		return
	}
	states, p := stateParam(r, endpointStates)
	if p != nil {
		writeProblem(w, r, p)
		return
	}
	after := ""
	if cur != nil {
		after = cur.ID
	}
	page, err := s.store.ListEndpointsPage(r.Context(), auth.TenantFrom(r.Context()), after, limit)
	if err != nil {
		writeProblem(w, r, s.storeProblem(r, err, "endpoints"))
		return
	}
	out := apiv1.EndpointList{Endpoints: make([]apiv1.EndpointView, 0, len(page.Endpoints))}
	for _, e := range page.Endpoints {
		if !sel.matches(e.Labels) {
			continue
		}
		v := s.endpointView(e)
		last, err := s.store.LastVerdict(r.Context(), e.ID)
		if err != nil && !errors.Is(err, model.ErrNotFound) {
			writeProblem(w, r, s.storeProblem(r, err, "last verdict of endpoint "+e.ID))
			return
		}
		setState(&v, e, last, err == nil)
		if states != nil && !states[v.State] {
			continue
		}
		out.Endpoints = append(out.Endpoints, v)
	}
	if page.Next != "" {
		out.NextCursor = encodeCursor(cursor{Kind: cursorEndpoints, ID: page.Next})
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *server) getEndpoint(w http.ResponseWriter, r *http.Request) {
	id := chi.URLParam(r, "id")
	e, p := s.endpointOf(r, id)
	if p != nil {
		writeProblem(w, r, p)
		return
	}
	v := s.endpointView(e)
	if res, err := s.store.LatestResult(r.Context(), id); err == nil {
		v.LatestResult = resultView(res)
	} else if !errors.Is(err, model.ErrNotFound) {
		writeProblem(w, r, s.storeProblem(r, err, "latest result of endpoint "+id))
		return
	}
	vd, err := s.store.LastVerdict(r.Context(), id)
	switch {
	case err == nil:
		vv := verdictView(vd)
		v.LastVerdict = &vv
	case !errors.Is(err, model.ErrNotFound):
		writeProblem(w, r, s.storeProblem(r, err, "last verdict of endpoint "+id))
		return
	}
	setState(&v, e, vd, err == nil)
	// The ETag names the configuration version (not the probe data), for
	// If-Match on PATCH.
	w.Header().Set("ETag", etag(e.Version))
	writeJSON(w, http.StatusOK, v)
}

// patchEndpoint applies an RFC 7386 JSON merge patch to the endpoint's input
// form, validates the result like a create, and compare-and-sets it on the
// stored version, retrying a lost race a few times before answering 409.
func (s *server) patchEndpoint(w http.ResponseWriter, r *http.Request) {
	id := chi.URLParam(r, "id")
	body, p := s.readBody(w, r, false)
	if p != nil {
		writeProblem(w, r, p)
		return
	}
	patch, p := decodePatch(body)
	if p != nil {
		writeProblem(w, r, p)
		return
	}
	ifMatch := r.Header.Get("If-Match")
	for attempt := 1; ; attempt++ {
		cur, p := s.endpointOf(r, id)
		if p != nil {
			writeProblem(w, r, p)
			return
		}
		if ifMatch != "" && !etagMatches(ifMatch, cur.Version) {
			writeProblem(w, r, problemf(http.StatusPreconditionFailed, apiv1.TypeVersionConflict,
				"endpoint %s is at version %d, not the one in If-Match; GET it again and reapply the change", id, cur.Version))
			return
		}
		base := input(cur)
		merged, err := mergeInto(base, patch)
		if err != nil {
			writeProblem(w, r, problemf(http.StatusInternalServerError, "", "applying the patch failed"))
			s.log.Error("merge patch", "endpoint", id, "err", err)
			return
		}
		// The merged document is the server's own encoding, checked all
		// the same: the stored half was accepted under other caps.
		checked, p := checkJSON(merged, bodyLimits)
		if p != nil {
			writeProblem(w, r, p)
			return
		}
		var in apiv1.EndpointInput
		if p := decodeStrict(checked, &in); p != nil {
			writeProblem(w, r, p)
			return
		}
		// "<redacted>" sent back keeps a stored secret, and a new origin
		// drops the stored headers (carrySecrets says why).
		warnings := carrySecrets(&in, cur, patch)
		deepWarnings, deepErrs := carryDeepSecrets(&in, cur, patch)
		warnings = append(warnings, deepWarnings...)
		// The target policy is checked again when the URL moves, and when
		// an endpoint probed by agents alone is handed to central probers.
		next, errs := s.toEndpoint(in, strings.TrimSpace(in.URL) != cur.URL || (schedule.Central(in.Regions) && !schedule.Central(cur.Regions)))
		errs = append(deepErrs, errs...)
		if len(errs) > 0 {
			writeProblem(w, r, invalid(errs...))
			return
		}
		next.ID, next.CreatedAt, next.Version = cur.ID, cur.CreatedAt, cur.Version
		if p := s.slugTaken(r, next); p != nil {
			writeProblem(w, r, p)
			return
		}
		updated, err := s.store.UpdateEndpoint(r.Context(), next)
		if errors.Is(err, store.ErrConflict) && attempt < patchMaxRetries {
			continue // with If-Match, the next round answers 412
		}
		if err != nil {
			writeProblem(w, r, s.storeProblem(r, err, "endpoint "+id))
			return
		}
		s.schedule(updated)
		w.Header().Set("ETag", etag(updated.Version))
		v := s.endpointView(updated)
		v.Warnings = warnings
		writeJSON(w, http.StatusOK, v)
		return
	}
}

func etag(version int64) string { return `"` + strconv.FormatInt(version, 10) + `"` }

// etagMatches implements If-Match for a strong ETag: "*" or a list of tags.
func etagMatches(header string, version int64) bool {
	want := etag(version)
	for _, tag := range strings.Split(header, ",") {
		tag = strings.TrimSpace(tag)
		if tag == "*" || tag == want {
			return true
		}
	}
	return false
}

func lookupHeader(h map[string]string, name string) (string, bool) {
	if v, ok := h[name]; ok {
		return v, true
	}
	v, ok := h[http.CanonicalHeaderKey(name)]
	return v, ok
}

// decodePatch reads a merge patch: one JSON object (checkJSON has refused
// duplicate keys and deep nesting). Header names in it are canonicalized
// like stored ones, so {"headers": {"authorization": null}} removes the
// stored "Authorization".
func decodePatch(body checkedJSON) (map[string]any, *apiv1.Problem) {
	var patch map[string]any
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if err := dec.Decode(&patch); err != nil {
		return nil, jsonProblem(err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, invalid(apiv1.FieldError{Pointer: "#", Detail: "unexpected data after the JSON value"})
	}
	if patch == nil {
		return nil, invalid(apiv1.FieldError{Pointer: "#", Detail: "a merge patch must be a JSON object"})
	}
	if hs, ok := patch["headers"].(map[string]any); ok {
		canon := make(map[string]any, len(hs))
		for k, v := range hs {
			if validHeaderName(k) {
				k = http.CanonicalHeaderKey(k)
			}
			canon[k] = v
		}
		patch["headers"] = canon
	}
	return patch, nil
}

// mergeInto applies an RFC 7386 merge patch to base's JSON form.
func mergeInto(base any, patch map[string]any) ([]byte, error) {
	raw, err := json.Marshal(base)
	if err != nil {
		return nil, err
	}
	var doc any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil {
		return nil, err
	}
	return json.Marshal(mergePatch(doc, patch))
}

func mergePatch(target, patch any) any {
	pm, ok := patch.(map[string]any)
	if !ok {
		return patch
	}
	tm, ok := target.(map[string]any)
	if !ok {
		tm = map[string]any{}
	}
	for k, v := range pm {
		if v == nil {
			delete(tm, k)
		} else {
			tm[k] = mergePatch(tm[k], v)
		}
	}
	return tm
}

func (s *server) deleteEndpoint(w http.ResponseWriter, r *http.Request) {
	id := chi.URLParam(r, "id")
	// The tenant is fixed at creation, so the check cannot go stale
	// before the delete.
	if _, p := s.endpointOf(r, id); p != nil {
		writeProblem(w, r, p)
		return
	}
	if err := s.store.DeleteEndpoint(r.Context(), id); err != nil {
		writeProblem(w, r, s.storeProblem(r, err, "endpoint "+id))
		return
	}
	if s.sched != nil {
		s.sched.Remove(id)
	}
	w.WriteHeader(http.StatusNoContent)
}

// listVerdicts serves one page of an endpoint's verdicts, newest first;
// the cursor is the window of the page's last verdict.
func (s *server) listVerdicts(w http.ResponseWriter, r *http.Request) {
	id := chi.URLParam(r, "id")
	limit, cur, p := pageParams(r, cursorVerdicts)
	if p != nil {
		writeProblem(w, r, p)
		return
	}
	if _, p := s.endpointOf(r, id); p != nil {
		writeProblem(w, r, p)
		return
	}
	var before time.Time
	if cur != nil {
		before = cur.At
	}
	vs, err := s.store.ListVerdictsBefore(r.Context(), id, before, limit+1)
	if err != nil {
		writeProblem(w, r, s.storeProblem(r, err, "verdicts of endpoint "+id))
		return
	}
	vs, next := cutPage(vs, limit, func(v store.VerdictRecord) cursor { return cursor{Kind: cursorVerdicts, At: v.Window} })
	out := make([]apiv1.VerdictView, 0, len(vs))
	for _, v := range vs {
		out = append(out, verdictView(v))
	}
	writeJSON(w, http.StatusOK, struct {
		Verdicts   []apiv1.VerdictView `json:"verdicts"`
		NextCursor string              `json:"nextCursor,omitempty"`
	}{out, next})
}

// schedule tells the scheduler about a stored endpoint. The store is the
// source of truth: a failure here is logged, and the periodic Sync repairs it.
func (s *server) schedule(e model.Endpoint) {
	if s.sched == nil {
		return
	}
	if err := s.sched.Upsert(e); err != nil {
		s.log.Error("scheduling endpoint failed", "endpoint", e.ID, "err", err)
	}
}
