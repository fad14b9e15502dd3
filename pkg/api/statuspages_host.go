package api

import (
	"context"
	"crypto/rand"
	"encoding/base32"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	apiv1 "github.com/mcpmon/mcpmon/pkg/api/v1"
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

// TXTResolver is what proving a status page's host needs of DNS: the TXT
// records at a name. *net.Resolver satisfies it.
type TXTResolver interface {
	LookupTXT(ctx context.Context, name string) ([]string, error)
}

// DefaultHostLookupTimeout bounds the TXT lookup of POST
// /v1/status-pages/{id}/verify-host.
const DefaultHostLookupTimeout = 5 * time.Second

// newHostToken is the token a page's new or changed host is proven with.
// It is random and kept on the page (model.HostVerification) rather than
// derived with an HMAC from a deployment key: no other tenant can guess or
// compute it, it needs no key every API replica must share and keep, and
// it survives a key rotation, so a record once published keeps proving its
// page. 128 random bits, lowercase so it reads the same in any DNS tool.
func newHostToken() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b[:]))
}

// hostVerificationView is where p's host stands for its tenant: the state
// and, for a host that needs or had a proof, the TXT record that gives it.
func hostVerificationView(p model.StatusPage) *apiv1.HostVerificationView {
	state := p.HostState()
	if state == model.HostNone {
		return nil
	}
	v := &apiv1.HostVerificationView{State: string(state)}
	if hv := p.HostVerification; hv != nil && hv.Host == p.Host {
		v.RecordType, v.Record, v.Value = "TXT", model.ChallengeName(p.Host), hv.ChallengeValue()
		if state == model.HostVerified {
			at := hv.VerifiedAt
			v.VerifiedAt = &at
		}
	}
	return v
}

// verifyHost serves POST /v1/status-pages/{id}/verify-host: it looks the
// page's TXT record up and, when it carries the page's value, records the
// host as verified, so pkg/status serves the page on it. A verified or
// grandfathered host answers 200 without a lookup; a record missing or
// wrong is 409 saying what was found and what to publish; a lookup that
// fails or outlasts the timeout is 503, the page unchanged.
//
// Nothing is locked across the lookup: the page is read again after it
// and written only if its host and token are still those looked up, so a
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
	switch p.HostState() {
	case model.HostNone:
		writeProblem(w, r, problemf(http.StatusConflict, apiv1.TypeHostNotVerified, "status page %s has no host to verify; set one first", id))
		return
	case model.HostVerified, model.HostGrandfathered:
		writeJSON(w, http.StatusOK, statusPageView(p))
		return
	}
	proof := *p.HostVerification
	name, want := model.ChallengeName(p.Host), proof.ChallengeValue()
	publish := fmt.Sprintf("publish a TXT record at %s with the value %s, then retry (a new record can take a while to reach mcpmon's resolver)", name, want)

	records, err := s.lookupChallenge(r.Context(), name)
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
		writeProblem(w, r, problemf(http.StatusConflict, apiv1.TypeHostNotVerified, "host %s is not verified: %s: %v; %s", p.Host, name, err, publish))
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
	proof.VerifiedAt = s.clock.Now().UTC()
	now.HostVerification = &proof
	now.UpdatedAt = proof.VerifiedAt
	if prob := s.saveStatusPage(r, now, false); prob != nil {
		writeProblem(w, r, prob)
		return
	}
	writeJSON(w, http.StatusOK, statusPageView(now))
}

// lookupChallenge reads the TXT records at name within the host lookup
// timeout. A name without TXT records is no records, not an error. The
// resolver bounds what it reads (a DNS message is at most 64 KiB);
// model.CheckChallenge bounds what is interpreted of it.
func (s *server) lookupChallenge(ctx context.Context, name string) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, s.hostTimeout)
	defer cancel()
	// Rooted, so the resolver's search domains add no queries.
	records, err := s.hostDNS.LookupTXT(ctx, name+".")
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) && dnsErr.IsNotFound {
		return nil, nil
	}
	return records, err
}

func isTimeout(err error) bool {
	var t interface{ Timeout() bool }
	return errors.As(err, &t) && t.Timeout()
}
