package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	apiv1 "github.com/mcpmon/mcpmon/pkg/api/v1"
	"github.com/mcpmon/mcpmon/pkg/hostcheck"
	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/status"
)

// ownHostNames are the host names of hosts (--api-hosts values, with or
// without a port) in the form status pages route by (status.HostName).
func ownHostNames(hosts []string) map[string]bool {
	out := map[string]bool{}
	for _, h := range hosts {
		if h = status.HostName(strings.TrimSpace(h)); h != "" {
			out[h] = true
		}
	}
	return out
}

// ownHostTaken refuses a page's host that is one of the API's own names: a
// tenant's page would be served at / of the deployment's own domain, with
// text the tenant chose (a sign-in page, say).
func (s *server) ownHostTaken(p model.StatusPage) []apiv1.FieldError {
	if p.Host == "" || !s.ownHosts[status.HostName(p.Host)] {
		return nil
	}
	return []apiv1.FieldError{{Pointer: "#/host", Detail: "is this mcpmon's own host name (--api-hosts): a status page needs a host name of its own"}}
}

// TXTResolver is what proving a status page's host needs of DNS
// (hostcheck.Resolver). *net.Resolver satisfies it.
type TXTResolver = hostcheck.Resolver

// hostVerificationView is where p's host stands for its tenant: the state
// and, for a host that needs or had a proof, the TXT record that gives it.
func hostVerificationView(p model.StatusPage) *apiv1.HostVerificationView {
	state := p.HostState()
	if state == model.HostNone {
		return nil
	}
	v := &apiv1.HostVerificationView{State: string(state)}
	hv := p.HostVerification
	if hv == nil || hv.Host != p.Host {
		return v
	}
	v.RecordType, v.Record, v.Value = "TXT", model.ChallengeName(p.Host), hv.ChallengeValue()
	at := func(t time.Time) *time.Time {
		if t.IsZero() {
			return nil
		}
		return &t
	}
	if state == model.HostVerified {
		v.VerifiedAt = at(hv.VerifiedAt)
	}
	v.CheckedAt, v.FailingSince, v.Failure = at(hv.CheckedAt), at(hv.FailingSince), hv.Failure
	v.ReleasedAt, v.ReleasedBy = at(hv.ReleasedAt), hv.ReleasedBy
	return v
}

// verifyHost serves POST /v1/status-pages/{id}/verify-host: it looks the
// page's TXT record up and, when it carries the page's value, records the
// host as verified, so pkg/status serves the page on it. A host that
// needs no lookup (needsLookup) answers 200 as it stands; a record
// missing or wrong is 409 saying what was found and what to publish (a
// host still served stays served: its re-checks decide when it is
// released); a lookup that fails or outlasts the timeout is 503, the page
// unchanged.
//
// Nothing is locked across the lookup: the page is read again after it
// and written only if its host and proof are still those looked up, so a
// verification never lands on a host it did not prove (a change in
// between is a 409 to retry).
func (s *server) verifyHost(w http.ResponseWriter, r *http.Request) {
	id := chi.URLParam(r, "id")
	if prob := s.readNoInput(w, r); prob != nil {
		writeProblem(w, r, prob)
		return
	}
	p, prob := s.loadStatusPage(r, id)
	if prob != nil {
		writeProblem(w, r, prob)
		return
	}
	if p.HostState() == model.HostNone {
		writeProblem(w, r, problemf(http.StatusConflict, apiv1.TypeHostNotVerified, "status page %s has no host to verify; set one first", id))
		return
	}
	if !needsLookup(p) {
		writeJSON(w, http.StatusOK, statusPageView(p))
		return
	}
	proof := *p.HostVerification
	name, want := model.ChallengeName(p.Host), proof.ChallengeValue()
	publish := fmt.Sprintf("publish a TXT record at %s with the value %s, then retry (a new record can take a while to reach mcpmon's resolver)", name, want)

	records, err := hostcheck.LookupChallenge(r.Context(), s.hostDNS, p.Host, s.hostTimeout)
	if err != nil {
		// The resolver's error names its server address: the operator's
		// log gets it, the tenant a sentence.
		s.log.Warn("host verification lookup failed", "page", id, "name", name, "err", err)
		what := "failed"
		if errors.Is(err, context.DeadlineExceeded) || isTimeout(err) {
			what = fmt.Sprintf("timed out after %s", s.hostTimeout)
		}
		writeProblem(w, r, problemf(http.StatusServiceUnavailable, "", "the DNS lookup of TXT %s %s; the page is unchanged; retry later", name, what))
		return
	}
	if err := model.CheckChallenge(records, want); err != nil {
		what := "is not verified"
		if p.ServesHost(true) {
			what = "is still served, but its proof is missing"
		}
		writeProblem(w, r, problemf(http.StatusConflict, apiv1.TypeHostNotVerified, "host %s %s: %s: %v; %s", p.Host, what, name, err, publish))
		return
	}

	now, prob := s.loadStatusPage(r, id)
	if prob != nil {
		writeProblem(w, r, prob)
		return
	}
	if now.HostVerification == nil || *now.HostVerification != proof || now.Host != p.Host {
		writeProblem(w, r, problemf(http.StatusConflict, apiv1.TypeVersionConflict, "status page %s changed during the lookup; reload it and retry", id))
		return
	}
	proven := proof.Verified(s.clock.Now().UTC())
	now.HostVerification = &proven
	now.UpdatedAt = proven.VerifiedAt
	if prob := s.saveStatusPage(r, now, false); prob != nil {
		writeProblem(w, r, prob)
		return
	}
	writeJSON(w, http.StatusOK, statusPageView(now))
}

// needsLookup reports whether verify-host looks p's host up: a pending
// host, a grandfathered one a re-check has issued a token to, and a
// verified one whose last re-check found no proof (so its tenant, the
// record put back, need not wait for the next re-check). Any other host
// is answered as it stands.
func needsLookup(p model.StatusPage) bool {
	v := p.HostVerification
	switch p.HostState() {
	case model.HostPending:
		return true
	case model.HostGrandfathered:
		return v != nil
	case model.HostVerified:
		return v.Failure != ""
	}
	return false
}

func isTimeout(err error) bool {
	var t interface{ Timeout() bool }
	return errors.As(err, &t) && t.Timeout()
}
