// Package email is the SMTP alert sink. The alerter hands it an
// alert.Notification; it opens one SMTP session per notification to the
// configured relay (implicit TLS, or STARTTLS when the server offers it,
// optionally required), authenticates when credentials are set, and sends
// one plain-text message with proper headers.
//
// The Message-ID is derived from the notification key, so a message resent
// after a crash (SMTP has no idempotency key) carries the same Message-ID and
// mail clients and archives recognise the repeat; References/In-Reply-To
// point at a per-incident ID so the open, reminders and resolve thread
// together. The password never appears in errors or logs.
package email

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"mime"
	"mime/quotedprintable"
	"net"
	"net/mail"
	"net/smtp"
	"net/textproto"
	"slices"
	"strings"
	"time"

	"github.com/mcpmon/mcpmon/alerter/sinks/post"
	"github.com/mcpmon/mcpmon/pkg/alert"
	"github.com/mcpmon/mcpmon/pkg/clock"
	"github.com/mcpmon/mcpmon/pkg/model"
)

// TLS modes.
const (
	TLSOpportunistic = "starttls"         // STARTTLS when offered (default)
	TLSRequire       = "require-starttls" // fail unless STARTTLS succeeds
	TLSImplicit      = "tls"              // TLS from the first byte (port 465)
	TLSNone          = "none"             // never (trusted local relays only)
)

// TLSModes lists the accepted TLS settings.
var TLSModes = []string{TLSOpportunistic, TLSRequire, TLSImplicit, TLSNone}

// DefaultTimeout bounds one whole SMTP session.
const DefaultTimeout = 30 * time.Second

// Options configure a Sink.
type Options struct {
	Name     string
	Addr     string // host:port of the SMTP server
	Username string // optional; AUTH PLAIN, only over TLS or to localhost
	Password string // secret
	TLS      string // one of TLSModes; default TLSOpportunistic
	// RootCAs verifies the server certificate; nil uses the system roots.
	RootCAs *x509.CertPool
	// ServerName is checked against the certificate; default Addr's host.
	ServerName string
	From       string   // RFC 5322 address, e.g. "mcpmon <alerts@example.com>"
	To         []string // one or more recipients
	Helo       string   // default "localhost"
	Timeout    time.Duration
	Clock      clock.Clock
	Logger     *slog.Logger
	// DialContext opens the connection to Addr; nil uses a net.Dialer. Set
	// it to restrict where the sink may connect (an SSRF guard for relays
	// that API callers configure).
	DialContext func(ctx context.Context, network, addr string) (net.Conn, error)
}

// ErrConfig reports an unusable sink configuration.
var ErrConfig = errors.New("invalid email sink configuration")

// Sink sends notifications as email.
type Sink struct {
	o      Options
	host   string
	from   *mail.Address
	to     []*mail.Address
	logger *slog.Logger
}

var _ alert.Sink = (*Sink)(nil)

// New validates o and returns an email sink. It does not connect.
func New(o Options) (*Sink, error) {
	if o.Name == "" {
		return nil, fmt.Errorf("%w: name is required", ErrConfig)
	}
	host, _, err := net.SplitHostPort(o.Addr)
	if err != nil || host == "" {
		return nil, fmt.Errorf("%w: sink %q: smtpAddr %q: want host:port, e.g. smtp.example.com:587", ErrConfig, o.Name, o.Addr)
	}
	if o.TLS == "" {
		o.TLS = TLSOpportunistic
	}
	if !slices.Contains(TLSModes, o.TLS) {
		return nil, fmt.Errorf("%w: sink %q: smtpTLS %q: want one of %s", ErrConfig, o.Name, o.TLS, strings.Join(TLSModes, ", "))
	}
	if o.Password != "" && o.Username == "" {
		return nil, fmt.Errorf("%w: sink %q: smtpPassword is set without smtpUsername", ErrConfig, o.Name)
	}
	from, err := mail.ParseAddress(o.From)
	if err != nil {
		return nil, fmt.Errorf("%w: sink %q: from %q: %w", ErrConfig, o.Name, o.From, err)
	}
	if len(o.To) == 0 {
		return nil, fmt.Errorf("%w: sink %q: to needs at least one recipient", ErrConfig, o.Name)
	}
	var to []*mail.Address
	for _, r := range o.To {
		a, err := mail.ParseAddress(r)
		if err != nil {
			return nil, fmt.Errorf("%w: sink %q: to %q: %w", ErrConfig, o.Name, r, err)
		}
		to = append(to, a)
	}
	if o.ServerName == "" {
		o.ServerName = host
	}
	if o.Helo == "" {
		o.Helo = "localhost"
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.Clock == nil {
		o.Clock = clock.Real{}
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return &Sink{o: o, host: host, from: from, to: to, logger: o.Logger.With("sink", o.Name, "sink_type", "email")}, nil
}

// Name returns the sink name.
func (s *Sink) Name() string { return s.o.Name }

// Notify sends the message for n in one SMTP session.
func (s *Sink) Notify(ctx context.Context, n alert.Notification) error {
	if err := s.deliver(ctx, s.Message(n)); err != nil {
		return err
	}
	s.logger.DebugContext(ctx, "email alert sent", "incident", n.IncidentID, "kind", n.Kind, "recipients", len(s.to))
	return nil
}

// deliver sends msg in one SMTP session within the sink's timeout and
// returns the sink error contract's error: the one delivery path of
// incidents, change events, digests and groups.
func (s *Sink) deliver(ctx context.Context, msg []byte) error {
	return s.deliverTo(ctx, s.to, msg, nil)
}

// deliverTo is deliver to other recipients; scrub, if set, takes what must
// not be told (a subscriber's address) out of the error first.
func (s *Sink) deliverTo(ctx context.Context, to []*mail.Address, msg []byte, scrub func(error) error) error {
	ctx, cancel := context.WithTimeout(ctx, s.o.Timeout)
	defer cancel()
	if err := s.send(ctx, to, msg); err != nil {
		// Cancellation closes the connection under net/smtp, which then
		// reports "use of closed network connection": name the real cause.
		if cerr := ctx.Err(); cerr != nil && !errors.Is(err, cerr) {
			err = fmt.Errorf("%w: %w", cerr, err)
		}
		if scrub != nil {
			err = scrub(err)
		}
		return s.classify(err)
	}
	return nil
}

func (s *Sink) tlsConfig() *tls.Config {
	return &tls.Config{ServerName: s.o.ServerName, RootCAs: s.o.RootCAs, MinVersion: tls.VersionTLS12}
}

func (s *Sink) send(ctx context.Context, to []*mail.Address, msg []byte) (err error) {
	dial := s.o.DialContext
	if dial == nil {
		dial = (&net.Dialer{}).DialContext
	}
	conn, err := dial(ctx, "tcp", s.o.Addr)
	if err != nil {
		return err
	}
	// Below TLS, so the bound covers the handshake's records too.
	conn = &cappedConn{Conn: conn, left: maxRelayBytes}
	// net/smtp has no context: the deadline bounds every read and write,
	// and cancellation closes the connection under it.
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	stop := context.AfterFunc(ctx, func() { _ = conn.Close() })
	defer stop()
	if s.o.TLS == TLSImplicit {
		tc := tls.Client(conn, s.tlsConfig())
		if err := tc.HandshakeContext(ctx); err != nil {
			_ = conn.Close()
			return &tlsError{err}
		}
		conn = tc
	}
	c, err := smtp.NewClient(conn, s.host)
	if err != nil {
		_ = conn.Close()
		return err
	}
	defer func() { _ = c.Close() }()
	if err := c.Hello(s.o.Helo); err != nil {
		return err
	}
	if s.o.TLS == TLSOpportunistic || s.o.TLS == TLSRequire {
		if ok, _ := c.Extension("STARTTLS"); ok {
			if err := c.StartTLS(s.tlsConfig()); err != nil {
				return &tlsError{err}
			}
		} else if s.o.TLS == TLSRequire {
			return fmt.Errorf("%w: server does not offer STARTTLS but smtpTLS is %q", alert.ErrPermanent, TLSRequire)
		}
	}
	if s.o.Username != "" {
		if ok, _ := c.Extension("AUTH"); !ok {
			return fmt.Errorf("%w: credentials are configured but the server offers no AUTH (is STARTTLS disabled?)", alert.ErrPermanent)
		}
		// PlainAuth refuses to send credentials over plain text to anything
		// but localhost.
		if err := c.Auth(smtp.PlainAuth("", s.o.Username, s.o.Password, s.host)); err != nil {
			return err
		}
	}
	if err := c.Mail(s.from.Address); err != nil {
		return err
	}
	for _, r := range to {
		if err := c.Rcpt(r.Address); err != nil {
			return err
		}
	}
	w, err := c.Data()
	if err != nil {
		return err
	}
	if _, err := w.Write(msg); err != nil {
		return err
	}
	if err := w.Close(); err != nil {
		return err
	}
	// The message is accepted once DATA completes; a failing QUIT must not
	// turn a delivered alert into a retry (and a duplicate).
	_ = c.Quit()
	return nil
}

// maxRelayBytes bounds what one SMTP session reads from the relay: its
// replies (a few lines each) and, under TLS, the handshake's records with
// the certificate chain. net/smtp reads a reply line, and the lines of a
// multi-line reply, without limit, and a relay may be an API caller's
// (a per-endpoint sink): one answering an endless line would otherwise fill
// the alerter's memory until the sink's timeout.
const maxRelayBytes = 256 << 10

var errRelayFlood = fmt.Errorf("the relay sent more than %d KiB in one session", maxRelayBytes>>10)

// cappedConn fails reads once left bytes have been read.
type cappedConn struct {
	net.Conn
	left int64
}

func (c *cappedConn) Read(p []byte) (int, error) {
	if c.left <= 0 {
		return 0, errRelayFlood
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.Conn.Read(p)
	c.left -= int64(n)
	return n, err
}

// Mail is one message to one recipient other than the sink's own To: a
// status page subscriber's (pkg/subscribe). Key names the message as a
// notification key does (its Message-ID derives from it); Headers are
// added to the common ones (List-Unsubscribe, say) and may not replace
// them.
type Mail struct {
	To      string
	Subject string
	Body    string
	Key     string
	Headers map[string]string
}

// Send delivers m in one SMTP session, with the sink's relay, sender and
// error contract. The recipient is never named in an error.
func (s *Sink) Send(ctx context.Context, m Mail) error {
	to, err := mail.ParseAddress(m.To)
	if err != nil {
		return fmt.Errorf("sink %q: %w: recipient is not an address", s.o.Name, alert.ErrPermanent)
	}
	h, _ := s.headers(m.Subject, m.Key, "")
	delete(h, "X-Mcpmon-Endpoint")
	h["To"] = to.String()
	for k, v := range m.Headers {
		if _, taken := h[k]; !taken {
			h[k] = oneLine(v)
		}
	}
	return s.deliverTo(ctx, []*mail.Address{to}, render(h, m.Body), func(err error) error { return scrubAddress(err, to.Address) })
}

// scrubAddress keeps a recipient's address out of an SMTP error's text (a
// relay may quote it back in a 550).
func scrubAddress(err error, addr string) error {
	if !strings.Contains(err.Error(), addr) {
		return err
	}
	return &sendError{msg: strings.ReplaceAll(err.Error(), addr, "<recipient>"), cause: err}
}

type tlsError struct{ err error }

func (e *tlsError) Error() string { return "TLS: " + e.err.Error() }
func (e *tlsError) Unwrap() error { return e.err }

// classify maps SMTP failures to the alert.Sink contract: 5xx replies and
// certificate problems are permanent (retrying cannot fix them), 4xx replies
// and network errors are retryable.
func (s *Sink) classify(err error) error {
	msg := model.Scrub(post.ScrubNetwork(err.Error(), err), s.o.Password)
	var tp *textproto.Error
	var certErr *tls.CertificateVerificationError
	var unknownAuth x509.UnknownAuthorityError
	var hostErr x509.HostnameError
	switch {
	case errors.Is(err, alert.ErrPermanent):
		// Scrubbed text, but still ErrPermanent (and the cause) for errors.Is.
		return &sendError{msg: fmt.Sprintf("sink %q: SMTP %s: %s", s.o.Name, s.o.Addr, msg), cause: err}
	case errors.As(err, &tp) && tp.Code >= 500:
		return fmt.Errorf("sink %q: %w: SMTP %s rejected the message: %s", s.o.Name, alert.ErrPermanent, s.o.Addr, msg)
	case errors.As(err, &certErr), errors.As(err, &unknownAuth), errors.As(err, &hostErr):
		return fmt.Errorf("sink %q: %w: SMTP %s certificate not trusted (set smtpCAFile or fix the server certificate): %s", s.o.Name, alert.ErrPermanent, s.o.Addr, msg)
	case strings.Contains(msg, "unencrypted connection"):
		return fmt.Errorf("sink %q: %w: SMTP %s: refusing to send credentials without TLS", s.o.Name, alert.ErrPermanent, s.o.Addr)
	default:
		return &sendError{msg: fmt.Sprintf("sink %q: SMTP %s: %s; will retry", s.o.Name, s.o.Addr, msg), cause: err}
	}
}

type sendError struct {
	msg   string
	cause error
}

func (e *sendError) Error() string { return e.msg }
func (e *sendError) Unwrap() error { return e.cause }

// MessageID is the Message-ID (without angle brackets) of the mail for the
// notification key: stable, so a resend is recognisable as the same message.
func MessageID(key, domain string) string {
	sum := sha256.Sum256([]byte(key))
	return "mcpmon." + hex.EncodeToString(sum[:16]) + "@" + domain
}

// IncidentThreadID is the ID every mail of one incident refers to.
func IncidentThreadID(incidentID, domain string) string {
	sum := sha256.Sum256([]byte(incidentID))
	return "mcpmon.incident." + hex.EncodeToString(sum[:16]) + "@" + domain
}

// Subject is the subject line of the mail for n.
func Subject(n alert.Notification) string {
	name := n.EndpointName
	if name == "" {
		name = n.EndpointID
	}
	var s string
	switch n.Kind {
	case alert.KindResolve:
		s = "[mcpmon] RESOLVED: " + name
	case alert.KindReminder:
		s = fmt.Sprintf("[mcpmon] STILL DOWN (reminder %d): %s", n.Sequence, name)
	case alert.KindUpdate:
		s = "[mcpmon] UPDATE: " + name
		if n.Update != nil {
			s = "[mcpmon] UPDATE (" + n.Update.Status + "): " + name
		}
		return alert.Truncate(oneLine(s), 200)
	default:
		s = "[mcpmon] DOWN: " + name
	}
	if n.Kind != alert.KindResolve && n.Class != "" {
		s += " (" + n.Class + ")"
	}
	return alert.Truncate(oneLine(s), 200)
}

// Message renders the complete RFC 5322 message for n (CRLF line endings).
func (s *Sink) Message(n alert.Notification) []byte {
	h, domain := s.headers(Subject(n), n.Key, n.EndpointID)
	h["X-Mcpmon-Event"] = string(n.Kind)
	h["X-Mcpmon-Incident"] = oneLine(n.IncidentID)
	thread := "<" + IncidentThreadID(n.IncidentID, domain) + ">"
	h["References"] = thread
	if n.Kind != alert.KindOpen {
		h["In-Reply-To"] = thread
	}
	return render(h, Body(n))
}

// headers are the headers every mail carries (incident or change event),
// and the sender's domain the message IDs use.
func (s *Sink) headers(subject, key, endpointID string) (map[string]string, string) {
	domain := "mcpmon.invalid"
	if i := strings.LastIndexByte(s.from.Address, '@'); i >= 0 && i < len(s.from.Address)-1 {
		domain = s.from.Address[i+1:]
	}
	to := make([]string, len(s.to))
	for i, a := range s.to {
		to[i] = a.String()
	}
	return map[string]string{
		"From":                      s.from.String(),
		"To":                        strings.Join(to, ", "),
		"Subject":                   mime.QEncoding.Encode("utf-8", subject),
		"Date":                      s.o.Clock.Now().UTC().Format(time.RFC1123Z),
		"Message-ID":                "<" + MessageID(key, domain) + ">",
		"MIME-Version":              "1.0",
		"Content-Type":              "text/plain; charset=utf-8",
		"Content-Transfer-Encoding": "quoted-printable",
		"Auto-Submitted":            "auto-generated", // RFC 3834: no auto-replies
		"X-Mcpmon-Endpoint":         oneLine(endpointID),
		"X-Mcpmon-Key":              oneLine(key),
	}, domain
}

// foldAt is the line length RFC 5322 §2.1.1 asks headers to keep to.
const foldAt = 78

// fold folds a header line longer than foldAt at its spaces (CRLF before
// the space, RFC 5322 §2.2.3), so that a long subject, which
// mime.QEncoding splits into encoded-words of at most 75 characters
// separated by spaces, stays within the 998 characters a line may have:
// a strict relay refuses a longer one, and mcpmon takes the refusal as
// permanent. A run without spaces is left whole.
func fold(line string) string {
	if len(line) <= foldAt {
		return line
	}
	var b strings.Builder
	start := 0 // of the current output line in line
	last := -1 // the last space seen in it
	// Not at the space after "Name:": that leaves the name alone.
	for i := strings.IndexByte(line, ' ') + 1; i < len(line); i++ {
		if line[i] == ' ' && i > start {
			if i-start > foldAt && last > start {
				b.WriteString(line[start:last])
				b.WriteString("\r\n")
				start = last
			}
			last = i
		}
	}
	if len(line)-start > foldAt && last > start {
		b.WriteString(line[start:last])
		b.WriteString("\r\n")
		start = last
	}
	b.WriteString(line[start:])
	return b.String()
}

// render writes headers h (sorted) and the quoted-printable body with CRLF
// line endings.
func render(h map[string]string, body string) []byte {
	var buf bytes.Buffer
	for _, k := range slices.Sorted(maps.Keys(h)) {
		buf.WriteString(fold(k + ": " + h[k]))
		buf.WriteString("\r\n")
	}
	buf.WriteString("\r\n")
	qp := quotedprintable.NewWriter(&buf)
	_, _ = qp.Write([]byte(strings.ReplaceAll(body, "\n", "\r\n")))
	_ = qp.Close()
	return buf.Bytes()
}

// Body is the plain-text body of the mail for n.
func Body(n alert.Notification) string {
	name := n.EndpointName
	if name == "" {
		name = n.EndpointID
	}
	var b strings.Builder
	where := name
	if n.EndpointURL != "" {
		where += " (" + n.EndpointURL + ")"
	}
	switch n.Kind {
	case alert.KindResolve:
		fmt.Fprintf(&b, "MCP endpoint %s is UP again.\n\n", where)
	case alert.KindReminder:
		fmt.Fprintf(&b, "MCP endpoint %s is STILL DOWN (reminder %d).\n\n", where, n.Sequence)
	case alert.KindUpdate:
		fmt.Fprintf(&b, "Update on the incident of MCP endpoint %s:\n\n", where)
		if n.Update != nil {
			fmt.Fprintf(&b, "%s (%s)\n\n%s\n\n", strings.ToUpper(n.Update.Status), ts(n.Update.At), n.Update.Message)
		}
	default:
		fmt.Fprintf(&b, "MCP endpoint %s is DOWN.\n\n", where)
	}
	row := func(k, v string) {
		if v != "" {
			fmt.Fprintf(&b, "%-15s%s\n", k+":", v)
		}
	}
	reason := strings.TrimSpace(n.Class + ": " + n.Reason)
	row("Reason", strings.Trim(reason, ": "))
	row("Incident", n.IncidentID)
	row("State", n.State)
	row("First failure", ts(n.FirstFailure))
	row("Opened", ts(n.OpenedAt))
	if n.ResolvedAt != nil {
		row("Resolved", ts(*n.ResolvedAt))
		row("Duration", n.ResolvedAt.Sub(n.OpenedAt).Round(time.Second).String())
	}
	if len(n.Labels) > 0 {
		var ls []string
		for _, k := range slices.Sorted(maps.Keys(n.Labels)) {
			ls = append(ls, k+"="+n.Labels[k])
		}
		row("Labels", strings.Join(ls, ", "))
	}
	fmt.Fprintf(&b, "\n-- \nmcpmon · endpoint %s · notification %s\n", n.EndpointID, n.Key)
	return b.String()
}

func ts(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}

// oneLine keeps user-controlled text (endpoint names, IDs) from injecting
// header lines.
func oneLine(s string) string {
	return strings.Join(strings.FieldsFunc(s, func(r rune) bool { return r == '\r' || r == '\n' }), " ")
}
