package cli

import (
	"strings"
	"testing"
	"time"

	apiv1 "github.com/mcpmon/mcpmon/pkg/api/v1"
)

// TestPrintHostRecordSaysWhatToDo: get tells the tenant to publish the
// record while the host needs it (pending, grandfathered with a record
// issued, served but missing) and why a released host is pending; a
// verified host found by its re-checks needs nothing.
func TestPrintHostRecordSaysWhatToDo(t *testing.T) {
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	rec := func(v apiv1.HostVerificationView) apiv1.StatusPageView {
		v.RecordType, v.Record, v.Value = "TXT", "_mcpmon-challenge.s.example", "mcpmon-verify=tok"
		return apiv1.StatusPageView{Slug: "acme", HostVerification: &v}
	}
	for _, c := range []struct {
		name string
		page apiv1.StatusPageView
		want []string
	}{
		{"verified", rec(apiv1.HostVerificationView{State: "verified"}), nil},
		{"grandfathered, no record yet", apiv1.StatusPageView{HostVerification: &apiv1.HostVerificationView{State: "grandfathered"}}, nil},
		{"pending", rec(apiv1.HostVerificationView{State: "pending"}), []string{"publish _mcpmon-challenge.s.example TXT"}},
		{"grandfathered with a record", rec(apiv1.HostVerificationView{State: "grandfathered", FailingSince: &at, Failure: "no TXT record found"}),
			[]string{"missing since 2026-03-01T12:00:00Z: no TXT record found", "publish"}},
		{"verified, missing", rec(apiv1.HostVerificationView{State: "verified", FailingSince: &at, Failure: "found TXT \"x\x1b[2J\""}),
			[]string{"missing since", "publish", "x [2J"}},
		{"released", rec(apiv1.HostVerificationView{State: "pending", ReleasedAt: &at, ReleasedBy: "operator"}),
			[]string{"released at 2026-03-01T12:00:00Z by operator", "publish"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var b strings.Builder
			printHostRecord(&b, c.page)
			out := b.String()
			if len(c.want) == 0 && out != "" {
				t.Errorf("printed %q, want nothing", out)
			}
			for _, w := range c.want {
				if !strings.Contains(out, w) {
					t.Errorf("printed %q, want %q in it", out, w)
				}
			}
		})
	}
}
