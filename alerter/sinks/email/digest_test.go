package email

import (
	"strings"
	"testing"
	"time"

	"github.com/mcpmon/mcpmon/pkg/alert"
)

func TestUpdateAndDigestMails(t *testing.T) {
	u := alert.Notification{Kind: alert.KindUpdate, EndpointName: "docs", Class: "refused", IncidentID: "i1", Key: "k",
		Update: &alert.Update{Seq: 1, Status: "monitoring", Message: "Rolled back.", At: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}}
	if got := Subject(u); got != "[mcpmon] UPDATE (monitoring): docs" {
		t.Fatalf("update subject %q", got)
	}
	if body := Body(u); !strings.Contains(body, "MONITORING") || !strings.Contains(body, "Rolled back.") {
		t.Fatalf("update body %q", body)
	}
	start := time.Date(2026, 6, 10, 7, 0, 0, 0, time.UTC)
	d := alert.DigestNotification{Key: "digest-m-acme-2026-06-10T07:00:00Z", Every: alert.DigestWeekly, Scope: "acme", PeriodStart: start, PeriodEnd: start.Add(7 * 24 * time.Hour),
		Total: 3, Events: []alert.DigestEvent{{EndpointName: "docs", Kind: "catalog_info", Severity: "info", Message: "added search\r\nBcc: x@evil.example", ObservedAt: start}}}
	if got := DigestSubject(d); !strings.HasPrefix(got, "[mcpmon] DIGEST (weekly): 3 changes since ") {
		t.Fatalf("digest subject %q", got)
	}
	body := DigestBody(d)
	if !strings.Contains(body, "docs  catalog_info (info): added search Bcc") || !strings.Contains(body, "and 2 more not listed") {
		t.Fatalf("digest body %q", body)
	}
}
