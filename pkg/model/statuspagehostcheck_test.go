package model_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mcpmon/mcpmon/pkg/model"
)

var policy = model.HostRecheck{Interval: 24 * time.Hour, Grace: 72 * time.Hour}

const recheckHost = "status.bigco.test"

// verifiedPage is a page with v, found by its verification unless v says
// when else.
func verifiedPage(v model.HostVerification) model.StatusPage {
	v.Host, v.Token = recheckHost, "tok"
	if v.FoundAt.IsZero() {
		v.FoundAt = v.VerifiedAt
	}
	return model.StatusPage{ID: "p", Host: recheckHost, HostVerification: &v}
}

// verifiedBeforeRechecks is a page verified before hosts were re-checked:
// no look has found its record since.
func verifiedBeforeRechecks(v model.HostVerification) model.StatusPage {
	p := verifiedPage(v)
	p.HostVerification.FoundAt = time.Time{}
	return p
}

var (
	errMissing = &model.ChallengeError{Reason: model.ChallengeMissing}
	errLookup  = errors.New("read udp 127.0.0.1:53: i/o timeout")
)

// TestRecheckHost: a look that finds the record keeps (or makes) the host
// verified and forgets a failure; looks that miss it release the host only
// once it has been missing for the grace — FirstRecheckGrace at least for
// one no look has found since re-checks exist (grandfathered, or verified
// before); a failed lookup neither starts nor ends a
// failure and releases nobody.
func TestRecheckHost(t *testing.T) {
	t0 := verifiedAt
	h := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Hour) }
	for _, c := range []struct {
		name    string
		page    model.StatusPage
		now     time.Time
		proof   error
		outcome model.HostCheckOutcome
		state   model.HostState
		// failingSince and released are the HostVerification's after.
		failingSince time.Time
		releasedBy   string
	}{
		{"found", verifiedPage(model.HostVerification{VerifiedAt: t0}), h(24), nil,
			model.HostCheckProven, model.HostVerified, time.Time{}, ""},
		{"found after misses forgets them", verifiedPage(model.HostVerification{VerifiedAt: t0, FailingSince: h(24), Failure: "no TXT record found"}), h(48), nil,
			model.HostCheckProven, model.HostVerified, time.Time{}, ""},
		{"first miss starts the failure", verifiedPage(model.HostVerification{VerifiedAt: t0}), h(24), errMissing,
			model.HostCheckUnproven, model.HostVerified, h(24), ""},
		{"a wrong record is a miss", verifiedPage(model.HostVerification{VerifiedAt: t0}), h(24), &model.ChallengeError{Reason: model.ChallengeWrong, Found: []string{"x"}},
			model.HostCheckUnproven, model.HostVerified, h(24), ""},
		{"misses within the grace keep serving", verifiedPage(model.HostVerification{VerifiedAt: t0, FailingSince: h(24)}), h(24 + 71), errMissing,
			model.HostCheckUnproven, model.HostVerified, h(24), ""},
		{"misses for the grace release", verifiedPage(model.HostVerification{VerifiedAt: t0, FailingSince: h(24)}), h(24 + 72), errMissing,
			model.HostCheckReleased, model.HostPending, h(24), model.HostReleasedByRecheck},
		{"verified before re-checks, missing: the first-recheck grace", verifiedBeforeRechecks(model.HostVerification{VerifiedAt: t0, CheckedAt: h(24), FailingSince: h(24)}), h(24 + 72), errMissing,
			model.HostCheckUnproven, model.HostVerified, h(24), ""},
		{"verified before re-checks, missing past the first-recheck grace", verifiedBeforeRechecks(model.HostVerification{VerifiedAt: t0, CheckedAt: h(24), FailingSince: h(24)}), h(24).Add(model.FirstRecheckGrace), errMissing,
			model.HostCheckReleased, model.HostPending, h(24), model.HostReleasedByRecheck},
		{"a failed lookup starts no failure", verifiedPage(model.HostVerification{VerifiedAt: t0}), h(24), errLookup,
			model.HostCheckLookupFail, model.HostVerified, time.Time{}, ""},
		{"a failed lookup past the grace releases nobody", verifiedPage(model.HostVerification{VerifiedAt: t0, FailingSince: h(24)}), h(24 + 100), errLookup,
			model.HostCheckLookupFail, model.HostVerified, h(24), ""},
		{"grandfathered, found, becomes verified", model.StatusPage{Host: recheckHost}.WithRecheckToken("tok"), h(1), nil,
			model.HostCheckProven, model.HostVerified, time.Time{}, ""},
		{"grandfathered, first miss", model.StatusPage{Host: recheckHost}.WithRecheckToken("tok"), h(1), errMissing,
			model.HostCheckUnproven, model.HostGrandfathered, h(1), ""},
		{"grandfathered keeps its longer grace", grandfathered(h(0)), h(72), errMissing,
			model.HostCheckUnproven, model.HostGrandfathered, h(0), ""},
		{"grandfathered, released after its grace", grandfathered(h(0)), h(0).Add(model.FirstRecheckGrace), errMissing,
			model.HostCheckReleased, model.HostPending, h(0), model.HostReleasedByRecheck},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := *c.page.HostVerification
			got, outcome := c.page.RecheckHost(c.now, c.proof, policy)
			if outcome != c.outcome {
				t.Errorf("outcome %q, want %q", outcome, c.outcome)
			}
			if s := got.HostState(); s != c.state {
				t.Errorf("state %q, want %q", s, c.state)
			}
			v := got.HostVerification
			if !v.FailingSince.Equal(c.failingSince) {
				t.Errorf("failing since %v, want %v", v.FailingSince, c.failingSince)
			}
			if v.ReleasedBy != c.releasedBy || (c.releasedBy != "") != v.ReleasedAt.Equal(c.now) {
				t.Errorf("released by %q at %v, want %q", v.ReleasedBy, v.ReleasedAt, c.releasedBy)
			}
			if !v.CheckedAt.Equal(c.now) {
				t.Errorf("checked at %v, want %v", v.CheckedAt, c.now)
			}
			if (c.outcome == model.HostCheckProven) != (v.Failure == "") {
				t.Errorf("failure %q after %q", v.Failure, c.outcome)
			}
			if v.Token != "tok" || v.Host != recheckHost {
				t.Errorf("token %q for %q: the proof's token and host must survive a re-check", v.Token, v.Host)
			}
			if *c.page.HostVerification != before {
				t.Error("the page given was changed, not copied")
			}
			if c.outcome == model.HostCheckLookupFail && strings.Contains(v.Failure, "127.0.0.1") {
				t.Errorf("failure %q names the resolver's address", v.Failure)
			}
		})
	}
}

func grandfathered(since time.Time) model.StatusPage {
	p := model.StatusPage{Host: recheckHost}.WithRecheckToken("tok")
	p.HostVerification.CheckedAt, p.HostVerification.FailingSince, p.HostVerification.Failure = since, since, "no TXT record found"
	return p
}

// TestHostCheckDue: only served hosts are re-checked; a grandfathered one
// at once, a verified one an interval after its proof or its last look,
// and one whose last look found nothing again within HostRecheckRetry.
func TestHostCheckDue(t *testing.T) {
	t0 := verifiedAt
	for _, c := range []struct {
		name string
		page model.StatusPage
		due  time.Time
		ok   bool
	}{
		{"no host", model.StatusPage{}, time.Time{}, false},
		{"pending", model.StatusPage{Host: recheckHost, HostVerification: &model.HostVerification{Host: recheckHost, Token: "t"}}, time.Time{}, false},
		{"released", verifiedPage(model.HostVerification{ReleasedAt: t0, ReleasedBy: model.HostReleasedByRecheck}), time.Time{}, false},
		{"grandfathered, never checked", model.StatusPage{Host: recheckHost}, time.Time{}, true},
		{"grandfathered, token issued, failing", grandfathered(t0), t0.Add(model.HostRecheckRetry), true},
		{"verified, never checked", verifiedPage(model.HostVerification{VerifiedAt: t0}), t0.Add(24 * time.Hour), true},
		{"verified, checked", verifiedPage(model.HostVerification{VerifiedAt: t0, CheckedAt: t0.Add(5 * time.Hour)}), t0.Add(29 * time.Hour), true},
		{"verified, last look failed", verifiedPage(model.HostVerification{VerifiedAt: t0, CheckedAt: t0.Add(5 * time.Hour), Failure: "x"}), t0.Add(6 * time.Hour), true},
	} {
		t.Run(c.name, func(t *testing.T) {
			due, ok := c.page.HostCheckDue(policy)
			if ok != c.ok || !due.Equal(c.due) {
				t.Errorf("due %v, %v; want %v, %v", due, ok, c.due, c.ok)
			}
		})
	}
}

// TestReleaseHost: the operator sends a served host back to pending (a
// grandfathered one with a token to publish); a pending host is left.
func TestReleaseHost(t *testing.T) {
	now := verifiedAt.Add(time.Hour)
	for _, c := range []struct {
		name    string
		page    model.StatusPage
		changed bool
	}{
		{"verified", verifiedPage(model.HostVerification{VerifiedAt: verifiedAt}), true},
		{"grandfathered", model.StatusPage{Host: recheckHost}, true},
		{"pending", model.StatusPage{Host: recheckHost, HostVerification: &model.HostVerification{Host: recheckHost, Token: "t"}}, false},
		{"no host", model.StatusPage{}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, changed := c.page.ReleaseHost(now, "tok")
			if changed != c.changed {
				t.Fatalf("changed %v, want %v", changed, c.changed)
			}
			if !changed {
				return
			}
			v := got.HostVerification
			if got.HostState() != model.HostPending || got.ServesHost(true) || v.Token == "" ||
				v.ReleasedBy != model.HostReleasedByOperator || !v.ReleasedAt.Equal(now) {
				t.Errorf("released page %+v, state %q", v, got.HostState())
			}
		})
	}
}

// TestVerifiedForgetsThePast: a host proven again by verify-host carries
// no failure or release from before.
func TestVerifiedForgetsThePast(t *testing.T) {
	now := verifiedAt.Add(100 * time.Hour)
	v := model.HostVerification{Host: recheckHost, Token: "t", FailingSince: verifiedAt, Failure: "x", ReleasedAt: verifiedAt, ReleasedBy: "recheck", Grandfathered: true}
	got := v.Verified(now)
	want := model.HostVerification{Host: recheckHost, Token: "t", VerifiedAt: now, CheckedAt: now, FoundAt: now}
	if got != want {
		t.Errorf("%+v, want %+v", got, want)
	}
}
