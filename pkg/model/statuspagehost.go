package model

import (
	"crypto/rand"
	"encoding/base32"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// A status page's custom host is a public name on someone's domain: a page
// served there shows its tenant's title, logo and text under that domain.
// So a host is served only once the page's tenant has shown it controls
// the name, by publishing a TXT record at ChallengeName(host) whose value
// is the page's ChallengeValue; the API looks the record up (POST
// /v1/status-pages/{id}/verify-host) and records the proof here, and
// pkg/status serves a host only when ServesHost says so.

// Host verification constants: where the proof is published, in what
// form, and how much of a TXT answer is read before it is interpreted.
const (
	// ChallengeLabel is prepended to a host to name its TXT record.
	ChallengeLabel = "_mcpmon-challenge"
	// ChallengePrefix starts the TXT value; the page's token follows.
	ChallengePrefix = "mcpmon-verify="
	// MaxChallengeRecords and MaxChallengeBytes bound the TXT records at
	// ChallengeName that are read, in number and in bytes together: the
	// name is the tenant's own, for this purpose only, so a few short
	// records are all it holds.
	MaxChallengeRecords = 16
	MaxChallengeBytes   = 4096
)

// HostVerification is the proof, kept on the page, that the page's tenant
// controls Host. Token is issued when the host is set or changed; it is
// random per page and host (the API's), so another tenant's page, even
// one claiming the same host, has a different one, and what the host's
// owner publishes verifies only the owner's page.
type HostVerification struct {
	// Host is the host Token was issued for: a page whose Host differs has
	// no proof of its host.
	Host  string `json:"host"`
	Token string `json:"token"`
	// VerifiedAt is when the record was found; zero while pending.
	VerifiedAt time.Time `json:"verifiedAt,omitzero"`
	// Grandfathered marks a host stored before hosts were verified that
	// has since been issued Token by a re-check (RecheckHost): it is
	// served as HostGrandfathered until the record is found (verified) or
	// its grace runs out (pending).
	Grandfathered bool `json:"grandfathered,omitempty"`
	// CheckedAt is when the host was last looked up again (RecheckHost);
	// zero before its first re-check.
	CheckedAt time.Time `json:"checkedAt,omitzero"`
	// FoundAt is when a look (verify-host or a re-check) last found the
	// record; zero for a host verified before hosts were re-checked, or
	// grandfathered, until a re-check finds it (see FirstRecheckGrace).
	FoundAt time.Time `json:"foundAt,omitzero"`
	// FailingSince is the first of the consecutive re-checks that found
	// no proof; zero while the proof is found.
	FailingSince time.Time `json:"failingSince,omitzero"`
	// Failure says, for the page's tenant, why the last re-check found no
	// proof ("" when it found it).
	Failure string `json:"failure,omitempty"`
	// ReleasedAt and ReleasedBy say when and by whom (HostReleasedBy*) a
	// host once served was sent back to pending; zero and "" otherwise.
	ReleasedAt time.Time `json:"releasedAt,omitzero"`
	ReleasedBy string    `json:"releasedBy,omitempty"`
}

// HostState is where a page's custom host stands.
type HostState string

// The host states. HostGrandfathered is a host stored before hosts were
// verified (a page with a Host and no HostVerification, or one a re-check
// has issued a token to and not yet found): its tenant did nothing wrong,
// so it is served as a verified one until the host is changed or its
// re-checks find no proof for FirstRecheckGrace (RecheckHost).
const (
	HostNone          HostState = ""
	HostPending       HostState = "pending"
	HostVerified      HostState = "verified"
	HostGrandfathered HostState = "grandfathered"
)

// HostState returns where p's host stands.
func (p StatusPage) HostState() HostState {
	v := p.HostVerification
	switch {
	case p.Host == "":
		return HostNone
	case v == nil:
		return HostGrandfathered
	case v.Host != p.Host || v.Token == "":
		return HostPending
	case !v.VerifiedAt.IsZero():
		return HostVerified
	case v.Grandfathered:
		return HostGrandfathered
	}
	return HostPending
}

// ServesHost reports whether p may be served at / of its Host and hold
// the host against other pages: requireProof (the deployment's
// --status-page-host-verification) admits only a verified or
// grandfathered host; without it, any host.
func (p StatusPage) ServesHost(requireProof bool) bool {
	switch p.HostState() {
	case HostNone:
		return false
	case HostVerified, HostGrandfathered:
		return true
	}
	return !requireProof
}

// WithHostProof returns p with the proof its Host carries over from old,
// the page it replaces (the zero page for a new one): an unchanged host
// keeps old's proof, or its lack of one (grandfathered); a new or changed
// host starts pending with token; no host needs none. A host changed is
// never served on the strength of the old one's proof.
func (p StatusPage) WithHostProof(old StatusPage, token string) StatusPage {
	switch {
	case p.Host == "":
		p.HostVerification = nil
	case p.Host == old.Host:
		p.HostVerification = old.HostVerification.clone()
	default:
		p.HostVerification = &HostVerification{Host: p.Host, Token: token}
	}
	return p
}

// NewHostToken is the token a page's new or changed host is proven with.
// It is random and kept on the page (HostVerification) rather than
// derived with an HMAC from a deployment key: no other tenant can guess or
// compute it, it needs no key every replica must share and keep, and it
// survives a key rotation, so a record once published keeps proving its
// page. 128 random bits, lowercase so it reads the same in any DNS tool.
func NewHostToken() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b[:]))
}

func (v *HostVerification) clone() *HostVerification {
	if v == nil {
		return nil
	}
	c := *v
	return &c
}

// ChallengeName is the DNS name whose TXT record proves control of host.
func ChallengeName(host string) string { return ChallengeLabel + "." + host }

// ChallengeValue is the TXT value that proves control of the host v was
// issued for.
func (v HostVerification) ChallengeValue() string { return ChallengePrefix + v.Token }

// ChallengeError is why TXT records do not prove a host: Found are the
// records read (each cut to a readable length), Reason one of the
// Challenge* reasons.
type ChallengeError struct {
	Reason string
	Found  []string
}

// Reasons a challenge fails.
const (
	ChallengeMissing  = "missing"   // no TXT record at the name
	ChallengeWrong    = "wrong"     // records, none with the page's value
	ChallengeTooMany  = "too_many"  // more than MaxChallengeRecords
	ChallengeTooLarge = "too_large" // more than MaxChallengeBytes together
)

// maxFoundShown and maxFoundBytes bound what ChallengeError repeats of
// the records read.
const (
	maxFoundShown = 4
	maxFoundBytes = 80
)

func (e *ChallengeError) Error() string {
	switch e.Reason {
	case ChallengeMissing:
		return "no TXT record found"
	case ChallengeTooMany:
		return fmt.Sprintf("more than %d TXT records found", MaxChallengeRecords)
	case ChallengeTooLarge:
		return fmt.Sprintf("TXT records of more than %d bytes together found", MaxChallengeBytes)
	}
	quoted := make([]string, len(e.Found))
	for i, f := range e.Found {
		quoted[i] = fmt.Sprintf("%q", f)
	}
	return "found TXT " + strings.Join(quoted, ", ") + " but not the expected value"
}

// CheckChallenge decides whether records, the TXT records read at the
// host's ChallengeName, prove it: one of them is want (spaces around it
// ignored). It checks their number and total size before it reads any of
// them, and reports a failure as a *ChallengeError.
func CheckChallenge(records []string, want string) error {
	if len(records) == 0 {
		return &ChallengeError{Reason: ChallengeMissing}
	}
	if len(records) > MaxChallengeRecords {
		return &ChallengeError{Reason: ChallengeTooMany}
	}
	total := 0
	for _, r := range records {
		total += len(r)
	}
	if total > MaxChallengeBytes {
		return &ChallengeError{Reason: ChallengeTooLarge}
	}
	var found []string
	for _, r := range records {
		if strings.TrimSpace(r) == want {
			return nil
		}
		if len(found) < maxFoundShown {
			found = append(found, cut(r, maxFoundBytes))
		}
	}
	return &ChallengeError{Reason: ChallengeWrong, Found: found}
}

// cut is s at most n bytes long, whole runes, with "…" when it was cut.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
