// Package subscribe owns public e-mail subscriptions to status pages: the
// double opt-in (subscribe, a signed confirmation link, confirm), the
// one-click unsubscribe, and the mails themselves.
//
// Data enters through Handler's three public routes under
// /status/{slug}/ (subscribe, confirm, unsubscribe; a subscribe is
// answered first and carried out by RunConfirmations) and through
// NotifySubscriber, which the alerter calls for each notice it owes
// (alerter/subscribers.go decides which, once, through the ledger).
// Subscribers are kept as store.KindSubscriber documents, their addresses
// sealed at rest when a Sealer is given; links are signed and IDs derived
// with the link keys kept in the store (LinkKeys), which a rotation of the
// sealing keyring re-seals with every subscriber (Reseal). Addresses leave
// only in mails to themselves: never in a response, log line or metric. docs/guides/subscriptions.md describes
// the flow and its privacy.
package subscribe

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mcpmon/mcpmon/alerter/sinks/email"
	"github.com/mcpmon/mcpmon/pkg/alert"
	"github.com/mcpmon/mcpmon/pkg/clock"
	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/store"
)

// Store is what subscriptions need from pkg/store.
type Store interface {
	KeyStore
	ListObjects(ctx context.Context, kind string) (map[string][]byte, error)
	PutObjectWithin(ctx context.Context, kind, id string, doc []byte, limit int) error
	CountObjectsOf(ctx context.Context, kind, tenant string) (int, error)
	DeleteObject(ctx context.Context, kind, id string) error
	SwapObject(ctx context.Context, kind, id string, old, doc []byte) error
}

// Mailer sends one mail (email.Sink.Send).
type Mailer interface {
	Send(ctx context.Context, m email.Mail) error
}

// Sealer seals addresses at rest (seal.Keyring).
type Sealer interface {
	Seal(plaintext, aad []byte) string
	Open(text string, aad []byte) ([]byte, error)
}

// Options configure a Service. Store, Mailer and BaseURL are required.
type Options struct {
	Store  Store
	Mailer Mailer
	// BaseURL is the absolute URL the links in mails start with (the
	// public side of this deployment, e.g. https://status.example.com).
	BaseURL string
	// Keys are the link keys the sealing keyring derives
	// (seal.Keyring.Derive with KeyLabel), current first: the first seeds
	// the stored list when it is made (LinkKeys), and every one is
	// accepted beside the stored ones. Nil: the list is seeded at random.
	Keys [][]byte
	// Sealer, when set, seals addresses and the link keys at rest.
	Sealer Sealer
	// Owner names this replica in the ledger claim that makes the stored
	// link keys (empty: a random name, unique to this Service).
	Owner string
	// MaxPerPage caps a page's subscribers, pending and confirmed (<= 0:
	// model.DefaultMaxSubscribersPerPage).
	MaxPerPage int
	Clock      clock.Clock
	Logger     *slog.Logger
}

// Service runs subscriptions for every page of the deployment.
type Service struct {
	o    Options
	base *url.URL
	clk  clock.Clock
	log  *slog.Logger
	mu   sync.Mutex
	sig  *signer
	lim  *limiter
	warn *warnOnce
	// confirms holds the subscribes queued for RunConfirmations.
	confirms chan confirmation
}

// confirmation is a subscribe of addr (normalised) to page, queued for
// RunConfirmations.
type confirmation struct {
	page model.StatusPage
	addr string
}

// confirmQueue bounds the subscribes waiting for RunConfirmations; past
// it a subscribe is refused with ErrBusy, for every address alike.
const confirmQueue = 1024

// New checks o and returns a Service. It does not touch the store.
func New(o Options) (*Service, error) {
	if o.Store == nil || o.Mailer == nil {
		return nil, errors.New("subscribe: Store and Mailer are required")
	}
	base, err := url.Parse(strings.TrimSuffix(o.BaseURL, "/"))
	if err != nil || (base.Scheme != "https" && base.Scheme != "http") || base.Host == "" {
		return nil, fmt.Errorf("subscribe: base URL %q: want an absolute http(s) URL", o.BaseURL)
	}
	if o.MaxPerPage <= 0 {
		o.MaxPerPage = model.DefaultMaxSubscribersPerPage
	}
	if o.Clock == nil {
		o.Clock = clock.Real{}
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Owner == "" {
		o.Owner = "subscribe-" + rand.Text()
	}
	s := &Service{o: o, base: base, clk: o.Clock, log: o.Logger.With("component", "subscribe"), lim: newLimiter(o.Clock),
		confirms: make(chan confirmation, confirmQueue)}
	s.warn = newWarnOnce(s.log)
	return s, nil
}

// signer returns the links' signer, reading the stored link keys on
// first use: they sign, and the keyring's derived keys are accepted too.
func (s *Service) signer(ctx context.Context) (*signer, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sig != nil {
		return s.sig, nil
	}
	var seed []byte
	if len(s.o.Keys) > 0 {
		seed = s.o.Keys[0]
	}
	keys, err := LinkKeys(ctx, s.o.Store, s.o.Sealer, s.o.Owner, seed)
	if err != nil {
		return nil, fmt.Errorf("subscribe: link keys: %w", err)
	}
	for _, k := range s.o.Keys {
		if !slices.ContainsFunc(keys, func(x []byte) bool { return bytes.Equal(x, k) }) {
			keys = append(keys, k)
		}
	}
	s.sig = &signer{keys: keys}
	return s.sig, nil
}

// Errors a subscribe answers with, besides the store's.
var (
	// ErrPageFull: the page has MaxPerPage subscribers. It is answered for
	// every address alike, known or not, so it tells nothing of any.
	ErrPageFull = errors.New("this page has reached its subscriber limit")
	// ErrNoPage: no status page has the slug.
	ErrNoPage = errors.New("no such status page")
)

// decision is what a subscribe does to a subscriber record.
type decision struct {
	write, mail bool
	next        model.Subscriber
}

// decide is the subscribe rule: a new (or expired) address becomes
// pending and is mailed a link; a pending one is mailed again at most
// once per model.ConfirmMailEvery; a confirmed one is left alone (and
// mailed nothing, so subscribing someone else's address cannot flood
// them).
func decide(found bool, cur model.Subscriber, id, page string, now time.Time) decision {
	switch {
	case !found || cur.Expired(now):
		return decision{write: true, mail: true, next: model.Subscriber{ID: id, Page: page, State: model.SubscriberPending,
			CreatedAt: now, MailedAt: now, ConfirmBy: now.Add(model.ConfirmTTL)}}
	case cur.State == model.SubscriberPending && now.Sub(cur.MailedAt) >= model.ConfirmMailEvery:
		cur.MailedAt, cur.ConfirmBy = now, now.Add(model.ConfirmTTL)
		return decision{write: true, mail: true, next: cur}
	}
	return decision{next: cur}
}

// Subscribe takes address for page p: it checks the address and the
// page's cap, and queues the rest for RunConfirmations, so whether the
// address was new, pending or confirmed, a nil error is the only answer
// and it takes as long. A subscribe that looked the address up, wrote
// its record and waited for the relay took a store write and an SMTP
// exchange longer for an address that is mailed than for one already
// pending or confirmed (about 25 ms against 2 ms with a relay on
// loopback), which told anyone who asked whether an address had
// subscribed.
func (s *Service) Subscribe(ctx context.Context, p model.StatusPage, address string) error {
	addr, err := model.NormalizeEmail(address)
	if err != nil {
		return err
	}
	// Counted here, and refused alike for every address, so a full page
	// does not tell known addresses from new ones.
	n, err := s.o.Store.CountObjectsOf(ctx, store.KindSubscriber, p.ID)
	if err != nil {
		return err
	}
	if n >= s.o.MaxPerPage {
		return ErrPageFull
	}
	select {
	case s.confirms <- confirmation{page: p, addr: addr}:
		return nil
	default:
		return ErrBusy
	}
}

// ErrBusy: the queue of subscribes waiting for RunConfirmations is full.
var ErrBusy = errors.New("too many subscriptions waiting; try again")

// RunConfirmations carries out the subscribes Subscribe queued, and sends
// their confirmation mails, until ctx ends. Run it where Handler is
// served.
func (s *Service) RunConfirmations(ctx context.Context) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case c := <-s.confirms:
			s.carryOut(ctx, c)
		}
	}
}

// drainConfirmations carries out the subscribes queued now (tests).
func (s *Service) drainConfirmations(ctx context.Context) {
	for {
		select {
		case c := <-s.confirms:
			s.carryOut(ctx, c)
		default:
			return
		}
	}
}

// carryOut does a queued subscribe; a failure is logged with the page
// (never the address).
func (s *Service) carryOut(ctx context.Context, c confirmation) {
	if err := s.subscribe(ctx, c.page, c.addr); err != nil {
		s.log.Warn("subscription not carried out", "page", c.page.ID, "err", err)
	}
}

// subscribe applies the subscribe rule (decide) to the normalised addr on
// page p and mails the confirmation it owes.
func (s *Service) subscribe(ctx context.Context, p model.StatusPage, addr string) error {
	sig, err := s.signer(ctx)
	if err != nil {
		return err
	}
	// The address may have been named under any link key: a record
	// found under an older one is the same subscriber.
	now := s.clk.Now()
	ids := sig.subscriberIDs(p.ID, addr)
	id, cur, found := ids[0], model.Subscriber{}, false
	for _, cand := range ids {
		c, ok, err := s.get(ctx, cand)
		if err != nil {
			return err
		}
		if ok && c.Page == p.ID && !c.Expired(now) {
			id, cur, found = cand, c, true
			break
		}
	}
	d := decide(found, cur, id, p.ID, now)
	if !d.write {
		return nil
	}
	// A mail is owed: within the address's own rate (limit.go), over every
	// page, or nothing at all.
	if !s.lim.allowMail(addr) {
		return nil
	}
	d.next.Address, d.next.Masked = sealAddress(s.o.Sealer, id, addr), model.MaskEmail(addr)
	// Written before the mail: a crash in between leaves a pending record
	// that nobody was mailed, which the next subscribe after
	// ConfirmMailEvery (or the expiry) mails again; the other order could
	// mail a link to a record that is not there.
	if err := s.put(ctx, d.next); err != nil {
		return err
	}
	if err := s.mailConfirm(ctx, sig, p, d.next, addr); err != nil {
		// Let the next subscribe mail at once.
		return errors.Join(fmt.Errorf("confirmation mail to subscriber %s: %w", d.next.ID, err), s.unmailed(ctx, d.next))
	}
	return nil
}

// unmailed marks sub, if it is still the pending record that was to be
// mailed, as never mailed, so the next subscribe of its address mails at
// once.
func (s *Service) unmailed(ctx context.Context, sub model.Subscriber) error {
	cur, doc, found, err := s.read(ctx, sub.ID)
	if err != nil || !found || cur.State != model.SubscriberPending || !cur.MailedAt.Equal(sub.MailedAt) {
		return err
	}
	cur.MailedAt = time.Time{}
	err = s.swap(ctx, doc, cur)
	if errors.Is(err, store.ErrConflict) || errors.Is(err, model.ErrNotFound) {
		return nil // confirmed, mailed again or deleted meanwhile: theirs stands
	}
	return err
}

// Confirm follows a confirmation link of page p. A link of a confirmed
// subscriber confirms again without change.
func (s *Service) Confirm(ctx context.Context, p model.StatusPage, tok string) error {
	sig, err := s.signer(ctx)
	if err != nil {
		return err
	}
	now := s.clk.Now()
	id, err := sig.check(tok, purposeConfirm, p.ID, now)
	if err != nil {
		return err
	}
	// A compare-and-set, so an unsubscribe (or the prune of an expired
	// link) landing between the read and the write is not undone by
	// writing the subscriber back confirmed; a change meanwhile is read
	// again.
	for attempt := 1; ; attempt++ {
		cur, doc, found, err := s.read(ctx, id)
		switch {
		case err != nil:
			return err
		case !found || cur.Page != p.ID || cur.Expired(now):
			return ErrBadToken
		case cur.State == model.SubscriberConfirmed:
			return nil
		}
		cur.State, cur.ConfirmedAt, cur.ConfirmBy = model.SubscriberConfirmed, now, time.Time{}
		err = s.swap(ctx, doc, cur)
		switch {
		case errors.Is(err, model.ErrNotFound):
			return ErrBadToken // deleted meanwhile
		case errors.Is(err, store.ErrConflict) && attempt < 3:
			continue
		}
		return err
	}
}

// Unsubscribe follows an unsubscribe link of page p: the subscriber is
// deleted. A link of a subscriber already gone succeeds.
func (s *Service) Unsubscribe(ctx context.Context, p model.StatusPage, tok string) error {
	sig, err := s.signer(ctx)
	if err != nil {
		return err
	}
	id, err := sig.check(tok, purposeUnsubscribe, p.ID, s.clk.Now())
	if err != nil {
		return err
	}
	cur, found, err := s.get(ctx, id)
	if err != nil || !found || cur.Page != p.ID {
		return err
	}
	if err := s.o.Store.DeleteObject(ctx, store.KindSubscriber, id); err != nil && !errors.Is(err, model.ErrNotFound) {
		return err
	}
	return nil
}

// NotifySubscriber mails n to its subscriber, with the unsubscribe link
// and the RFC 8058 one-click headers. It keeps the alert.Sink error
// contract (alerter/subscribers.go gives up on alert.ErrPermanent).
func (s *Service) NotifySubscriber(ctx context.Context, n model.SubscriberNotice) error {
	sig, err := s.signer(ctx)
	if err != nil {
		return err
	}
	addr, err := openAddress(s.o.Sealer, n.Subscriber)
	if err != nil {
		s.warn.unopened(n.Subscriber, err)
		return fmt.Errorf("%w: subscriber %s: %w", alert.ErrPermanent, n.Subscriber.ID, err)
	}
	unsub := s.link(n.Page.Slug, "unsubscribe", sig.token(purposeUnsubscribe, n.Page.ID, n.Subscriber.ID, time.Time{}))
	subject, body := noticeText(n, s.link(n.Page.Slug, "", ""), unsub)
	return s.o.Mailer.Send(ctx, email.Mail{To: addr, Subject: subject, Body: body, Key: n.Key, Headers: map[string]string{
		"List-Unsubscribe":      "<" + unsub + ">",
		"List-Unsubscribe-Post": "List-Unsubscribe=One-Click",
		"List-Id":               "<" + n.Page.ID + ".status." + s.base.Hostname() + ">",
	}})
}

func (s *Service) mailConfirm(ctx context.Context, sig *signer, p model.StatusPage, sub model.Subscriber, addr string) error {
	confirm := s.link(p.Slug, "confirm", sig.token(purposeConfirm, p.ID, sub.ID, sub.ConfirmBy))
	subject, body := confirmText(p, confirm, sub.ConfirmBy)
	return s.o.Mailer.Send(ctx, email.Mail{To: addr, Subject: subject, Body: body,
		Key: fmt.Sprintf("subconfirm-%s-%d", sub.ID, sub.MailedAt.Unix())})
}

// link is BaseURL/status/{slug}[/{action}?t={tok}].
func (s *Service) link(slug, action, tok string) string {
	u := *s.base
	u.Path = strings.TrimSuffix(u.Path, "/") + "/status/" + url.PathEscape(slug)
	if action != "" {
		u.Path += "/" + action
		u.RawQuery = url.Values{"t": {tok}}.Encode()
	}
	return u.String()
}

func aad(id string) []byte { return []byte(store.KindSubscriber + ":" + id + ":address") }

// sealAddress seals an e-mail subscriber's address under sealer (nil:
// kept as it is).
func sealAddress(sealer Sealer, id, addr string) string {
	if sealer == nil {
		return addr
	}
	return sealer.Seal([]byte(addr), aad(id))
}

// openAddress returns sub's address, unsealed if it was sealed.
func openAddress(sealer Sealer, sub model.Subscriber) (string, error) {
	if !strings.HasPrefix(sub.Address, "sealed:") {
		return sub.Address, nil
	}
	if sealer == nil {
		return "", errors.New("address is sealed and no key is configured")
	}
	b, err := sealer.Open(sub.Address, aad(sub.ID))
	return string(b), err
}

func (s *Service) get(ctx context.Context, id string) (model.Subscriber, bool, error) {
	sub, _, found, err := s.read(ctx, id)
	return sub, found, err
}

// read is get with the document as stored, for swap.
func (s *Service) read(ctx context.Context, id string) (model.Subscriber, []byte, bool, error) {
	doc, err := s.o.Store.GetObject(ctx, store.KindSubscriber, id)
	if errors.Is(err, model.ErrNotFound) {
		return model.Subscriber{}, nil, false, nil
	}
	if err != nil {
		return model.Subscriber{}, nil, false, err
	}
	sub, err := model.DecodeSubscriber(doc)
	return sub, doc, err == nil, err
}

// swap writes sub over old, only while the stored document is still old
// (store.SwapObject): store.ErrConflict if it changed, model.ErrNotFound
// if it was deleted.
func (s *Service) swap(ctx context.Context, old []byte, sub model.Subscriber) error {
	doc, err := json.Marshal(sub)
	if err != nil {
		return err
	}
	return s.o.Store.SwapObject(ctx, store.KindSubscriber, sub.ID, old, doc)
}

// put writes sub within the page's cap, counted in the write's own
// transaction (PutObjectWithin), so concurrent subscribes on any replica
// cannot pass it together.
func (s *Service) put(ctx context.Context, sub model.Subscriber) error {
	doc, err := json.Marshal(sub)
	if err != nil {
		return err
	}
	err = s.o.Store.PutObjectWithin(ctx, store.KindSubscriber, sub.ID, doc, s.o.MaxPerPage)
	if errors.Is(err, store.ErrQuota) {
		return ErrPageFull
	}
	return err
}
