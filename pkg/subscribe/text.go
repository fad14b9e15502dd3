package subscribe

import (
	"fmt"
	"strings"
	"time"

	"github.com/mcpmon/mcpmon/pkg/alert"
	"github.com/mcpmon/mcpmon/pkg/model"
)

// confirmText is the subject and body of a confirmation mail.
func confirmText(p model.StatusPage, confirm string, by time.Time) (string, string) {
	subject := alert.Truncate(oneLine("Confirm your subscription to "+p.Title), 200)
	body := fmt.Sprintf(`Someone (we hope you) asked to be told by e-mail of incidents on the status page %q.

To confirm, open this link and press Confirm before %s:

%s

If you did not ask for this, ignore this mail: you will get nothing else, and the address is forgotten when the link expires.
`, oneLine(p.Title), by.UTC().Format(time.RFC1123), confirm)
	return subject, body
}

// noticeText is the subject and body of the mail telling a subscriber of
// one incident event.
func noticeText(n model.SubscriberNotice, page, unsubscribe string) (string, string) {
	name := oneLine(n.Endpoint.Name)
	var subject, what string
	switch n.Event.Kind {
	case model.IncidentEventResolved:
		subject = "Resolved: " + name
		what = fmt.Sprintf("The incident on %s is resolved (it began %s).", name, ts(n.Incident.Began()))
	case model.IncidentEventUpdate:
		u := n.Event.Update
		subject = fmt.Sprintf("Update (%s): %s", u.Status, name)
		what = fmt.Sprintf("Update on the incident on %s, %s:\n\n%s", name, u.Status, u.Message)
	default:
		subject = "Incident: " + name
		what = fmt.Sprintf("%s is failing since %s.", name, ts(n.Incident.Began()))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n\nStatus page: %s\nAt: %s\n\n-- \n", what, page, ts(n.Event.At))
	fmt.Fprintf(&b, "You get this because you subscribed to %q. Unsubscribe: %s\n", oneLine(n.Page.Title), unsubscribe)
	return alert.Truncate(oneLine("["+n.Page.Title+"] "+subject), 200), b.String()
}

func ts(t time.Time) string { return t.UTC().Format(time.RFC1123) }

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
