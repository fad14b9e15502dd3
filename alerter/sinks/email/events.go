package email

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/mcpmon/mcpmon/pkg/alert"
)

var _ alert.EventNotifier = (*Sink)(nil)

// NotifyEvent sends the mail for change event n in one SMTP session.
func (s *Sink) NotifyEvent(ctx context.Context, n alert.EventNotification) error {
	msg := s.EventMessage(n)
	ctx, cancel := context.WithTimeout(ctx, s.o.Timeout)
	defer cancel()
	if err := s.send(ctx, s.to, msg); err != nil {
		if cerr := ctx.Err(); cerr != nil && !errors.Is(err, cerr) {
			err = fmt.Errorf("%w: %w", cerr, err)
		}
		return s.classify(err)
	}
	s.logger.DebugContext(ctx, "email change event sent", "endpoint", n.EndpointID, "kind", n.Kind, "recipients", len(s.to))
	return nil
}

// EventSubject is the one-line subject of the mail for n.
func EventSubject(n alert.EventNotification) string {
	name := n.EndpointName
	if name == "" {
		name = n.EndpointID
	}
	return alert.Truncate(oneLine("[mcpmon] CHANGE ("+n.Kind+"): "+name), 200)
}

// EventBody is the plain-text body: the message, before → after, and the
// catalog diff, indented, when there is one.
func EventBody(n alert.EventNotification) string {
	name := n.EndpointName
	if name == "" {
		name = n.EndpointID
	}
	where := name
	if n.EndpointURL != "" {
		where += " (" + n.EndpointURL + ")"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "MCP endpoint %s changed: %s\n\n%s\n\n", where, n.Kind, n.Message)
	row := func(k, v string) {
		if v != "" {
			fmt.Fprintf(&b, "%-15s%s\n", k+":", v)
		}
	}
	row("Kind", n.Kind)
	row("Severity", n.Severity)
	row("Before", n.Before)
	row("After", n.After)
	row("Observed", ts(n.ObservedAt))
	row("Fingerprint", n.Fingerprint)
	if len(n.Diff) > 0 {
		var pretty bytes.Buffer
		if json.Indent(&pretty, n.Diff, "    ", "  ") != nil {
			pretty.Reset()
			pretty.Write(n.Diff)
		}
		fmt.Fprintf(&b, "\nCatalog diff:\n    %s\n", pretty.String())
	}
	fmt.Fprintf(&b, "\n-- \nmcpmon · endpoint %s · notification %s\n", n.EndpointID, n.Key)
	return b.String()
}

// EventMessage renders the complete RFC 5322 message for n (CRLF line
// endings), with the headers of an incident mail and X-Mcpmon-Event set
// to the event kind.
func (s *Sink) EventMessage(n alert.EventNotification) []byte {
	h, _ := s.headers(EventSubject(n), n.Key, n.EndpointID)
	h["X-Mcpmon-Event"] = oneLine(n.Kind)
	return render(h, EventBody(n))
}
