package subscribe

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"

	"github.com/mcpmon/mcpmon/alerter/sinks/webhook"
	"github.com/mcpmon/mcpmon/pkg/alert"
	"github.com/mcpmon/mcpmon/pkg/clock"
	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/status"
)

// Webhook subscribers are made by the page's tenant through the API
// (pkg/api/subscribers.go), which seals their URL and secret with
// SealWebhook; Webhooks opens them and POSTs each notice through a webhook
// sink built for that subscriber alone.

// Notifier sends one notice to one subscriber (alerter.SubscriberNotifier).
type Notifier interface {
	NotifySubscriber(ctx context.Context, n model.SubscriberNotice) error
}

// Router hands each notice to the notifier of its subscriber's kind. A
// kind without one is a permanent failure: the notice is given up, not
// retried every sweep.
type Router struct {
	Mail    Notifier // nil: e-mail subscriptions are off
	Webhook Notifier
}

// NotifySubscriber implements alerter.SubscriberNotifier.
func (r Router) NotifySubscriber(ctx context.Context, n model.SubscriberNotice) error {
	to := r.Mail
	if n.Subscriber.KindOrEmail() == model.SubscriberWebhook {
		to = r.Webhook
	}
	if to == nil {
		return fmt.Errorf("%w: no notifier for %s subscribers", alert.ErrPermanent, n.Subscriber.KindOrEmail())
	}
	return to.NotifySubscriber(ctx, n)
}

// SealWebhook returns sub with url and secret sealed under sealer (nil:
// kept as they are) and the URL's scheme and host as Masked.
func SealWebhook(sealer Sealer, sub model.Subscriber, url, secret string) model.Subscriber {
	sub.Kind, sub.Masked = model.SubscriberWebhook, model.SecretURL(url).Origin()
	sub.URL, sub.Secret = url, secret
	if sealer != nil {
		sub.URL = sealer.Seal([]byte(url), model.SubscriberAAD(sub.ID, "url"))
		if secret != "" {
			sub.Secret = sealer.Seal([]byte(secret), model.SubscriberAAD(sub.ID, "secret"))
		}
	}
	return sub
}

// openField returns a subscriber's field, unsealed if it was sealed.
func openField(sealer Sealer, id, field, v string) (string, error) {
	if !strings.HasPrefix(v, "sealed:") {
		return v, nil
	}
	if sealer == nil {
		return "", errors.New(field + " is sealed and no key is configured")
	}
	b, err := sealer.Open(v, model.SubscriberAAD(id, field))
	return string(b), err
}

// WebhookOptions configure Webhooks.
type WebhookOptions struct {
	// Sealer opens the sealed URLs and secrets.
	Sealer Sealer
	// Client sends every delivery; it is the SSRF-guarded client
	// (sinks.GuardedClient) unless private targets are allowed. Nil: a
	// new unguarded client (tests).
	Client *http.Client
	Clock  clock.Clock
	Logger *slog.Logger
}

// Webhooks POSTs notices to webhook subscribers.
type Webhooks struct {
	o    WebhookOptions
	warn *warnOnce
}

// NewWebhooks returns a Webhooks.
func NewWebhooks(o WebhookOptions) *Webhooks {
	if o.Clock == nil {
		o.Clock = clock.Real{}
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return &Webhooks{o: o, warn: newWarnOnce(o.Logger.With("component", "subscribe"))}
}

// NotifySubscriber POSTs n's SubscriberPayload to its subscriber's URL,
// signed with its secret, under the webhook sink's error contract.
func (w *Webhooks) NotifySubscriber(ctx context.Context, n model.SubscriberNotice) error {
	sub := n.Subscriber
	url, err := openField(w.o.Sealer, sub.ID, "url", sub.URL)
	if err != nil {
		w.warn.unopened(sub, err)
		return fmt.Errorf("%w: subscriber %s: %w", alert.ErrPermanent, sub.ID, err)
	}
	secret, err := openField(w.o.Sealer, sub.ID, "secret", sub.Secret)
	if err != nil {
		w.warn.unopened(sub, err)
		return fmt.Errorf("%w: subscriber %s: %w", alert.ErrPermanent, sub.ID, err)
	}
	// The sink's name is in its errors and logs: the same for every
	// subscriber, so neither names one.
	s, err := webhook.New(webhook.Options{Name: "subscribers", URL: url, Secret: secret, Client: w.o.Client, Clock: w.o.Clock, Logger: w.o.Logger})
	if err != nil {
		return fmt.Errorf("%w: subscriber %s: %w", alert.ErrPermanent, sub.ID, err)
	}
	return s.NotifySubscriber(ctx, SubscriberPayload(n))
}

// SubscriberPayload is what a webhook subscriber is told of n: only what
// the page shows publicly.
func SubscriberPayload(n model.SubscriberNotice) webhook.SubscriberPayload {
	p := webhook.SubscriberPayload{
		Key: n.Key, Page: n.Page.Slug, Event: n.Event.Name, Kind: n.Event.Kind,
		Incident: status.PublicKey(n.Incident.ID), At: n.Event.At.UTC(),
		Endpoint: webhook.SubscriberEndpoint{Name: n.Endpoint.Name, Slug: n.Endpoint.Slug},
		OpenedAt: n.Incident.OpenedAt.UTC(),
	}
	// Each event's body is the same on every redelivery: a later
	// resolution does not change the opening's.
	if n.Event.Kind == model.IncidentEventResolved && n.Incident.ResolvedAt != nil {
		at := n.Incident.ResolvedAt.UTC()
		p.ResolvedAt = &at
	}
	if u := n.Event.Update; u != nil {
		seq, _ := strconv.Atoi(strings.TrimPrefix(n.Event.Name, model.IncidentEventUpdate+"-"))
		p.Update = &webhook.Update{Seq: seq, At: u.At.UTC(), Status: string(u.Status), Message: u.Message}
	}
	return p
}
