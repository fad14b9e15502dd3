package email

import (
	"context"
	"fmt"
	"strings"

	"github.com/mcpmon/mcpmon/pkg/alert"
)

var _ alert.DigestNotifier = (*Sink)(nil)

// NotifyDigest sends the mail for digest n in one SMTP session.
func (s *Sink) NotifyDigest(ctx context.Context, n alert.DigestNotification) error {
	if err := s.deliver(ctx, s.DigestMessage(n)); err != nil {
		return err
	}
	s.logger.DebugContext(ctx, "email digest sent", "scope", n.Scope, "period_start", n.PeriodStart, "events", n.Total, "recipients", len(s.to))
	return nil
}

// DigestSubject is the one-line subject of the mail for n.
func DigestSubject(n alert.DigestNotification) string {
	s := fmt.Sprintf("[mcpmon] DIGEST (%s): %d change", n.Every, n.Total)
	if n.Total != 1 {
		s += "s"
	}
	return alert.Truncate(oneLine(s+" since "+ts(n.PeriodStart)), 200)
}

// DigestBody is the plain-text body: the period, then one line per
// event, oldest first, and how many were left out.
func DigestBody(n alert.DigestNotification) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Changes from %s to %s (%s):\n\n", ts(n.PeriodStart), ts(n.PeriodEnd), n.Scope)
	for _, e := range n.Events {
		name := e.EndpointName
		if name == "" {
			name = e.EndpointID
		}
		fmt.Fprintf(&b, "%s  %s  %s (%s): %s\n", ts(e.ObservedAt), oneLine(name), e.Kind, e.Severity, oneLine(e.Message))
	}
	if left := n.Total - len(n.Events); left > 0 {
		fmt.Fprintf(&b, "\n… and %d more not listed.\n", left)
	}
	fmt.Fprintf(&b, "\n-- \nmcpmon · digest %s\n", n.Key)
	return b.String()
}

// DigestMessage renders the complete RFC 5322 message for n (CRLF line
// endings), X-Mcpmon-Event: digest.
func (s *Sink) DigestMessage(n alert.DigestNotification) []byte {
	h, _ := s.headers(DigestSubject(n), n.Key, n.Scope)
	delete(h, "X-Mcpmon-Endpoint")
	h["X-Mcpmon-Event"] = "digest"
	return render(h, DigestBody(n))
}
