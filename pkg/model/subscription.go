package model

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/mail"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// SubscriberHorizon is how old an incident event may be and still be sent
// to a page's subscribers: a replica that was down for days does not mail
// old news. The idempotency ledger must remember a sent notice longer
// (--ledger-ttl, 7 days by default, is refused below it when subscriptions
// are on), or a done key could lapse while its event is still sent.
const SubscriberHorizon = 48 * time.Hour

// SubscriberState is where a public subscriber is in the double opt-in.
type SubscriberState string

const (
	// SubscriberPending: the address was given, the confirmation link not
	// yet followed. A pending subscriber is sent nothing but that one mail,
	// and is dropped once ConfirmBy has passed.
	SubscriberPending SubscriberState = "pending"
	// SubscriberConfirmed: the link was followed; the subscriber is sent
	// the page's incident events from ConfirmedAt on.
	SubscriberConfirmed SubscriberState = "confirmed"
)

// SubscriberKind is how a subscriber is told: by mail (the public double
// opt-in) or by webhook (made by the page's tenant through the API).
type SubscriberKind string

const (
	// SubscriberEmail is a public e-mail subscriber; records without a
	// kind are e-mail subscribers.
	SubscriberEmail SubscriberKind = "email"
	// SubscriberWebhook is a URL the page's tenant registered: it is
	// confirmed at creation (the owner is the subscriber) and POSTed a
	// signed SubscriberPayload per incident event.
	SubscriberWebhook SubscriberKind = "webhook"
)

// Bounds of a subscription.
const (
	// MaxEmailAddress is RFC 5321's longest forward path.
	MaxEmailAddress = 254
	// ConfirmTTL is how long a confirmation link stays valid, and so how
	// long a pending subscriber is kept.
	ConfirmTTL = 24 * time.Hour
	// ConfirmMailEvery is the least time between two confirmation mails to
	// one address of one page, however often it is subscribed.
	ConfirmMailEvery = time.Hour
	// DefaultMaxSubscribersPerPage caps a page's subscribers (pending and
	// confirmed) unless the operator sets another cap.
	DefaultMaxSubscribersPerPage = 10000
	// MaxWebhookURL and MaxWebhookSecret bound a webhook subscriber.
	MaxWebhookURL    = 2048
	MaxWebhookSecret = 256
)

// Subscriber is one e-mail address subscribed to one status page. Nothing
// of it is public: the owner's API shows counts and MaskEmail only.
type Subscriber struct {
	// ID is derived from the page and the address under the deployment's
	// key (pkg/subscribe), so subscribing an address twice finds the same
	// record without an index of addresses, and the ID tells nothing.
	ID string `json:"id"`
	// Page is the ID of the status page subscribed to. It is stored as
	// the document's "tenant": the store's per-tenant index of the
	// subscriber kind is then an index per page, so a page's subscribers
	// are listed, counted and capped (PutObjectWithin) from it alone.
	Page  string          `json:"tenant"`
	State SubscriberState `json:"state"`
	// Kind is SubscriberEmail when empty (KindOrEmail).
	Kind SubscriberKind `json:"kind,omitempty"`
	// Address is the e-mail address, sealed at rest (pkg/seal text form)
	// when the deployment has a sealing key.
	Address string `json:"address"`
	// URL and Secret are a webhook subscriber's receiver and optional
	// signing key, sealed at rest like Address.
	URL    string `json:"url,omitempty"`
	Secret string `json:"secret,omitempty"`
	// Masked is MaskEmail of the address, or SecretURL.Origin of a
	// webhook's URL, kept beside the sealed one so the owner's API can
	// show it without the key. Shown is what the API shows of it.
	Masked    string    `json:"masked,omitempty"`
	CreatedAt time.Time `json:"createdAt"`
	// MailedAt is when the last confirmation mail went out.
	MailedAt time.Time `json:"mailedAt,omitzero"`
	// ConfirmBy is when a pending subscriber's link expires.
	ConfirmBy   time.Time `json:"confirmBy,omitzero"`
	ConfirmedAt time.Time `json:"confirmedAt,omitzero"`
}

// DecodeSubscriber reads a stored subscriber document.
func DecodeSubscriber(doc []byte) (Subscriber, error) {
	var s Subscriber
	if err := json.Unmarshal(doc, &s); err != nil {
		return Subscriber{}, fmt.Errorf("decode subscriber: %w", err)
	}
	return s, nil
}

// Shown is how the page's owner sees s's address: Masked cut to what it
// promises. A webhook's is its URL's scheme and host (a Masked with a
// path or query marker is cut to its origin); an e-mail mask that is not
// valid UTF-8 (a first character cut mid-rune) loses the broken bytes.
func (s Subscriber) Shown() string {
	switch {
	case s.Masked == "":
		return "***"
	case s.KindOrEmail() == SubscriberWebhook:
		return SecretURL(s.Masked).Origin()
	}
	return strings.ToValidUTF8(s.Masked, "")
}

// KindOrEmail is s's kind, SubscriberEmail for records without one.
func (s Subscriber) KindOrEmail() SubscriberKind {
	if s.Kind == "" {
		return SubscriberEmail
	}
	return s.Kind
}

// SubscriberAAD binds a sealed field of subscriber id to its record and
// field, so a sealed value moved to another record or field does not open.
func SubscriberAAD(id, field string) []byte {
	return []byte("status-subscriber:" + id + ":" + field)
}

// Webhook subscriber problems, each naming what is wrong.
var (
	ErrWebhookURL    = errors.New("want an absolute https URL without user info, at most 2048 bytes")
	ErrWebhookSecret = errors.New("want at most 256 printable characters")
)

// CheckWebhookURL checks a webhook subscriber's URL: absolute, https
// (http too when allowHTTP: private deployments and tests), a host, no
// user info, no control characters, bounded. Whether the host may be
// reached is the SSRF guard's decision, at registration and on every send.
func CheckWebhookURL(raw string, allowHTTP bool) error {
	if raw == "" || len(raw) > MaxWebhookURL || strings.ContainsFunc(raw, func(r rune) bool { return r <= 0x20 || r == 0x7f }) {
		return ErrWebhookURL
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.User != nil || u.Opaque != "" || !(u.Scheme == "https" || (allowHTTP && u.Scheme == "http")) {
		return ErrWebhookURL
	}
	return nil
}

// CheckWebhookSecret checks a webhook subscriber's signing secret
// (empty: deliveries are unsigned).
func CheckWebhookSecret(s string) error {
	if len(s) > MaxWebhookSecret || strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return ErrWebhookSecret
	}
	return nil
}

// Expired reports whether s is pending past its link's expiry at now.
func (s Subscriber) Expired(now time.Time) bool {
	return s.State == SubscriberPending && !s.ConfirmBy.IsZero() && !now.Before(s.ConfirmBy)
}

// Owes reports whether s is to be sent e: confirmed, and e happened at or
// after the confirmation (a subscriber hears of nothing from before).
func (s Subscriber) Owes(e IncidentEvent) bool {
	return s.State == SubscriberConfirmed && !e.At.Before(s.ConfirmedAt)
}

// ErrBadEmail: a subscription's address is not one plain e-mail address.
var ErrBadEmail = errors.New("not an e-mail address")

// NormalizeEmail checks that s is one bare e-mail address (no display
// name, no list, at most MaxEmailAddress bytes, no control characters)
// and returns it with the domain lower-cased, the form a subscriber's ID
// is derived from.
func NormalizeEmail(s string) (string, error) {
	s = strings.TrimSpace(s)
	if s == "" || len(s) > MaxEmailAddress || strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return "", ErrBadEmail
	}
	a, err := mail.ParseAddress(s)
	if err != nil || a.Name != "" || a.Address != s {
		return "", ErrBadEmail
	}
	at := strings.LastIndexByte(s, '@')
	if at <= 0 || at == len(s)-1 || !strings.Contains(s[at+1:], ".") {
		return "", ErrBadEmail
	}
	return s[:at] + "@" + strings.ToLower(s[at+1:]), nil
}

// MaskEmail renders an address for the page's owner: the first character
// (a whole rune, so an internationalised address stays valid UTF-8) of the
// local part and the domain ("j***@example.com").
func MaskEmail(a string) string {
	at := strings.LastIndexByte(a, '@')
	if at <= 0 {
		return "***"
	}
	_, n := utf8.DecodeRuneInString(a)
	return a[:n] + "***" + a[at:]
}

// Incident event kinds, as subscribers are told them.
const (
	IncidentEventOpened   = "opened"
	IncidentEventUpdate   = "update"
	IncidentEventResolved = "resolved"
)

// IncidentEvent is one thing that happened to an incident that a page's
// subscribers are told: its opening, each update, its resolution.
type IncidentEvent struct {
	// Name identifies the event within its incident: "opened",
	// "update-<n>" (n from 1, in the order updates were appended) or
	// "resolved". It is part of each subscriber's ledger key.
	Name string
	Kind string // IncidentEventOpened, IncidentEventUpdate or IncidentEventResolved
	At   time.Time
	// Update is the update an IncidentEventUpdate reports.
	Update *IncidentUpdate
}

// IncidentEvents lists inc's events in the order they happened.
func IncidentEvents(inc Incident) []IncidentEvent {
	evs := []IncidentEvent{{Name: IncidentEventOpened, Kind: IncidentEventOpened, At: inc.OpenedAt}}
	for i := range inc.Updates {
		evs = append(evs, IncidentEvent{Name: IncidentEventUpdate + "-" + strconv.Itoa(i+1), Kind: IncidentEventUpdate, At: inc.Updates[i].At, Update: &inc.Updates[i]})
	}
	if inc.ResolvedAt != nil {
		evs = append(evs, IncidentEvent{Name: IncidentEventResolved, Kind: IncidentEventResolved, At: *inc.ResolvedAt})
	}
	return evs
}

// SubscriberNotice is what one subscriber of a page is told of one
// incident event: the alerter decides it is owed, the subscriber side
// (pkg/subscribe) renders and sends it.
type SubscriberNotice struct {
	// Key is the notice's ledger key (SubscriberNoticeKey), also the
	// mail's Message-ID seed, so a resend is recognisably the same.
	Key        string
	Page       StatusPage
	Subscriber Subscriber
	Endpoint   Endpoint
	Incident   Incident
	Event      IncidentEvent
}

// SubscriberNoticeKey is the ledger key of telling subscriber sub of
// incident's event: one per subscriber per incident event, whichever
// replica, restart or sweep sends it.
func SubscriberNoticeKey(sub, incident, event string) string {
	return "sub-" + sub + "-" + incident + "-" + event
}
