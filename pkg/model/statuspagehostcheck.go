package model

import (
	"errors"
	"time"
)

// A host's proof is not proof for ever: the domain can change hands, or
// its owner can withdraw the record. So a served host is looked up again
// every HostRecheck.Interval (pkg/hostcheck runs the rounds), and one
// whose record has been missing on every look since FailingSince, for
// HostRecheck.Grace, goes back to pending: no longer served, and no
// longer holding the name against other pages. The rules are here, as
// pure functions of the page, the time and what the lookup found.

// Re-check defaults and bounds.
const (
	// DefaultHostRecheckInterval is how often a served host is looked up
	// again.
	DefaultHostRecheckInterval = 24 * time.Hour
	// DefaultHostRecheckGrace is how long a host's proof may be missing
	// before it is released: several looks apart, so one DNS blip, or a
	// record briefly missing while a zone is edited, does nothing.
	DefaultHostRecheckGrace = 72 * time.Hour
	// HostRecheckRetry is how soon a look that found no proof, or failed,
	// is repeated (when shorter than the interval): a record put back is
	// seen within it, and the release comes close to the grace's end.
	HostRecheckRetry = time.Hour
	// FirstRecheckGrace is the least grace of a host no look has found
	// the record of since hosts were re-checked (HostVerification.FoundAt
	// zero): a grandfathered host, whose tenant never had a record to
	// publish, and one verified before re-checks existed, whose tenant
	// was told the record could go once verified. Either needs time to
	// learn that it must be published now.
	FirstRecheckGrace = 14 * 24 * time.Hour
)

// Who sends a served host back to pending (HostVerification.ReleasedBy).
const (
	HostReleasedByRecheck  = "recheck"  // its re-checks found no proof for the grace
	HostReleasedByOperator = "operator" // the deployment's operator released it
)

// HostRecheck is the deployment's re-check policy.
type HostRecheck struct {
	Interval time.Duration // between looks at a host whose proof was found
	Grace    time.Duration // how long the proof may be missing before release
}

// HostCheckOutcome is what one re-check of a host did (a metric label).
type HostCheckOutcome string

// The re-check outcomes.
const (
	HostCheckProven     HostCheckOutcome = "proven"      // the record was found
	HostCheckUnproven   HostCheckOutcome = "unproven"    // not found, within the grace
	HostCheckReleased   HostCheckOutcome = "released"    // not found for the grace: back to pending
	HostCheckLookupFail HostCheckOutcome = "lookup_fail" // the lookup failed: nothing learnt
)

// HostCheckOutcomes lists every outcome, for metrics created up front.
func HostCheckOutcomes() []HostCheckOutcome {
	return []HostCheckOutcome{HostCheckProven, HostCheckUnproven, HostCheckReleased, HostCheckLookupFail}
}

// HostCheckDue returns when p's host is next looked up again, and false
// when it is not re-checked at all: only a served host is (verified or
// grandfathered). A grandfathered host never checked is due at once (the
// zero time); a verified one never checked, Interval after it was
// verified; after a look, Interval after it, or HostRecheckRetry after it
// when it found no proof (sooner, if the interval is shorter).
func (p StatusPage) HostCheckDue(pol HostRecheck) (time.Time, bool) {
	switch p.HostState() {
	case HostVerified, HostGrandfathered:
	default:
		return time.Time{}, false
	}
	v := p.HostVerification
	switch {
	case v == nil:
		return time.Time{}, true
	case v.CheckedAt.IsZero() && v.VerifiedAt.IsZero():
		return time.Time{}, true
	case v.CheckedAt.IsZero():
		return v.VerifiedAt.Add(pol.Interval), true
	case v.Failure != "":
		return v.CheckedAt.Add(min(pol.Interval, HostRecheckRetry)), true
	}
	return v.CheckedAt.Add(pol.Interval), true
}

// WithRecheckToken returns p ready to be looked up again: a grandfathered
// host without a token is issued token (kept grandfathered, so still
// served); any other page is returned as it is.
func (p StatusPage) WithRecheckToken(token string) StatusPage {
	if p.HostState() == HostGrandfathered && p.HostVerification == nil {
		p.HostVerification = &HostVerification{Host: p.Host, Token: token, Grandfathered: true}
	}
	return p
}

// lookupFailed is what a failed lookup tells the page's tenant: the
// resolver's own error names servers, which are the operator's business.
const lookupFailed = "the DNS lookup failed; it is retried"

// RecheckHost decides what a re-check at now that found proof (nil: the
// record is there; a *ChallengeError: it is not; any other error: the
// lookup failed) does to p, a page HostCheckDue re-checks, made ready by
// WithRecheckToken. Found, the host is verified (a grandfathered one
// becomes verified) and any failure is forgotten. Not found, the host is
// failing from the first such look on; once it has failed for pol.Grace
// (FirstRecheckGrace at least while no look has found it), it is
// released: pending again, with the same token, so publishing the record
// and verifying proves it again. A failed lookup says nothing of the
// record: it changes only when the host is looked at next, so a resolver
// out of order releases nobody.
func (p StatusPage) RecheckHost(now time.Time, proof error, pol HostRecheck) (StatusPage, HostCheckOutcome) {
	if p.HostVerification == nil {
		return p, HostCheckLookupFail // not made ready: nothing was looked up
	}
	v := *p.HostVerification
	p.HostVerification = &v
	v.CheckedAt = now
	var missing *ChallengeError
	switch {
	case proof == nil:
		if v.VerifiedAt.IsZero() {
			v.VerifiedAt = now
		}
		v.FoundAt = now
		v.Grandfathered, v.FailingSince, v.Failure = false, time.Time{}, ""
		return p, HostCheckProven
	case !errors.As(proof, &missing):
		v.Failure = lookupFailed
		return p, HostCheckLookupFail
	}
	if v.FailingSince.IsZero() {
		v.FailingSince = now
	}
	v.Failure = missing.Error()
	grace := pol.Grace
	if v.FoundAt.IsZero() {
		grace = max(grace, FirstRecheckGrace)
	}
	if now.Sub(v.FailingSince) < grace {
		return p, HostCheckUnproven
	}
	return p.releaseHost(now, HostReleasedByRecheck), HostCheckReleased
}

// ReleaseHost returns p with its host sent back to pending by the
// operator at now, and whether that changed anything: a verified or
// grandfathered host is released (a grandfathered one without a token is
// issued token, so its tenant has a record to publish); a pending host,
// or no host, is left as it is.
func (p StatusPage) ReleaseHost(now time.Time, token string) (StatusPage, bool) {
	switch p.HostState() {
	case HostVerified, HostGrandfathered:
	default:
		return p, false
	}
	return p.WithRecheckToken(token).releaseHost(now, HostReleasedByOperator), true
}

// releaseHost makes p's host, one with a token, pending: not verified,
// not grandfathered, and says when and by whom.
func (p StatusPage) releaseHost(now time.Time, by string) StatusPage {
	v := *p.HostVerification
	v.VerifiedAt, v.Grandfathered = time.Time{}, false
	v.ReleasedAt, v.ReleasedBy = now, by
	p.HostVerification = &v
	return p
}

// Verified returns v proven at now: verified, and with no failure or
// release left from before.
func (v HostVerification) Verified(now time.Time) HostVerification {
	v.VerifiedAt, v.CheckedAt, v.FoundAt = now, now, now
	v.Grandfathered, v.FailingSince, v.Failure = false, time.Time{}, ""
	v.ReleasedAt, v.ReleasedBy = time.Time{}, ""
	return v
}
