package model_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mcpmon/mcpmon/pkg/model"
)

var verifiedAt = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

// TestHostStateAndServing: a host with no record is grandfathered, one
// with a record for another host or not yet found is pending, and only
// verified and grandfathered hosts are served while proof is required.
func TestHostStateAndServing(t *testing.T) {
	const host = "status.example.com"
	for _, c := range []struct {
		name        string
		page        model.StatusPage
		state       model.HostState
		proofServes bool // served with proof required
	}{
		{"no host", model.StatusPage{}, model.HostNone, false},
		{"stored before verification", model.StatusPage{Host: host}, model.HostGrandfathered, true},
		{"pending", model.StatusPage{Host: host, HostVerification: &model.HostVerification{Host: host, Token: "t"}}, model.HostPending, false},
		{"verified", model.StatusPage{Host: host, HostVerification: &model.HostVerification{Host: host, Token: "t", VerifiedAt: verifiedAt}}, model.HostVerified, true},
		{"verified for another host", model.StatusPage{Host: host, HostVerification: &model.HostVerification{Host: "old.example.com", Token: "t", VerifiedAt: verifiedAt}}, model.HostPending, false},
		{"grandfathered, token issued by a re-check", model.StatusPage{Host: host, HostVerification: &model.HostVerification{Host: host, Token: "t", Grandfathered: true}}, model.HostGrandfathered, true},
		{"grandfathered for another host", model.StatusPage{Host: host, HostVerification: &model.HostVerification{Host: "old.example.com", Token: "t", Grandfathered: true}}, model.HostPending, false},
		{"verified without a token", model.StatusPage{Host: host, HostVerification: &model.HostVerification{Host: host, VerifiedAt: verifiedAt}}, model.HostPending, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := c.page.HostState(); got != c.state {
				t.Errorf("state %q, want %q", got, c.state)
			}
			if got := c.page.ServesHost(true); got != c.proofServes {
				t.Errorf("served with proof required: %v, want %v", got, c.proofServes)
			}
			if got := c.page.ServesHost(false); got != (c.page.Host != "") {
				t.Errorf("served without proof required: %v, want %v", got, c.page.Host != "")
			}
		})
	}
}

// TestWithHostProof: a host set or changed starts pending with the new
// token; an unchanged host keeps its proof or its grandfathering; no host
// keeps no record.
func TestWithHostProof(t *testing.T) {
	proven := &model.HostVerification{Host: "a.example.com", Token: "old", VerifiedAt: verifiedAt}
	for _, c := range []struct {
		name      string
		old, page model.StatusPage
		want      *model.HostVerification
	}{
		{"new page with a host", model.StatusPage{}, model.StatusPage{Host: "a.example.com"}, &model.HostVerification{Host: "a.example.com", Token: "new"}},
		{"new page without one", model.StatusPage{}, model.StatusPage{}, nil},
		{"host kept, proven", model.StatusPage{Host: "a.example.com", HostVerification: proven}, model.StatusPage{Host: "a.example.com"}, proven},
		{"host kept, grandfathered", model.StatusPage{Host: "a.example.com"}, model.StatusPage{Host: "a.example.com"}, nil},
		{"host changed from a proven one", model.StatusPage{Host: "a.example.com", HostVerification: proven}, model.StatusPage{Host: "b.example.com"}, &model.HostVerification{Host: "b.example.com", Token: "new"}},
		{"host changed from a grandfathered one", model.StatusPage{Host: "a.example.com"}, model.StatusPage{Host: "b.example.com"}, &model.HostVerification{Host: "b.example.com", Token: "new"}},
		{"host removed", model.StatusPage{Host: "a.example.com", HostVerification: proven}, model.StatusPage{}, nil},
		{"a body's own record is not trusted", model.StatusPage{}, model.StatusPage{Host: "a.example.com", HostVerification: proven}, &model.HostVerification{Host: "a.example.com", Token: "new"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := c.page.WithHostProof(c.old, "new").HostVerification
			if (got == nil) != (c.want == nil) || got != nil && *got != *c.want {
				t.Fatalf("proof %+v, want %+v", got, c.want)
			}
			if got != nil && got == c.old.HostVerification {
				t.Error("the proof is shared with the old page, not copied")
			}
		})
	}
}

// TestCheckChallenge: the page's value among the records proves the host;
// none, a wrong one, too many or too large a set does not, and the error
// names the records found, bounded.
func TestCheckChallenge(t *testing.T) {
	const want = "mcpmon-verify=abc"
	for _, c := range []struct {
		name    string
		records []string
		reason  string // "" proves
		says    string
	}{
		{"the value", []string{"v=spf1 -all", want}, "", ""},
		{"the value with spaces", []string{" " + want + " "}, "", ""},
		{"no record", nil, model.ChallengeMissing, "no TXT record"},
		{"another page's token", []string{"mcpmon-verify=xyz"}, model.ChallengeWrong, `"mcpmon-verify=xyz"`},
		{"only a prefix", []string{"mcpmon-verify=ab"}, model.ChallengeWrong, `"mcpmon-verify=ab"`},
		{"too many", make([]string, model.MaxChallengeRecords+1), model.ChallengeTooMany, "more than 16"},
		{"too large", []string{strings.Repeat("x", model.MaxChallengeBytes), want}, model.ChallengeTooLarge, "more than 4096 bytes"},
		{"long record cut", []string{strings.Repeat("é", 100)}, model.ChallengeWrong, "…"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := model.CheckChallenge(c.records, want)
			var ce *model.ChallengeError
			switch {
			case c.reason == "" && err != nil:
				t.Fatalf("%v, want proven", err)
			case c.reason == "":
				return
			case !errors.As(err, &ce) || ce.Reason != c.reason:
				t.Fatalf("%v, want reason %q", err, c.reason)
			}
			if !strings.Contains(err.Error(), c.says) || len(err.Error()) > 500 {
				t.Errorf("error %q, want it to say %q, short", err, c.says)
			}
		})
	}
}

func TestChallengeRecord(t *testing.T) {
	v := model.HostVerification{Host: "status.example.com", Token: "abc"}
	if got := model.ChallengeName(v.Host); got != "_mcpmon-challenge.status.example.com" {
		t.Errorf("name %q", got)
	}
	if got := v.ChallengeValue(); got != "mcpmon-verify=abc" {
		t.Errorf("value %q", got)
	}
}
