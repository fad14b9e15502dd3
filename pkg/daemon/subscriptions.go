package daemon

import (
	"crypto/x509"
	"fmt"
	"net/http"
	"os"

	"github.com/mcpmon/mcpmon/alerter/sinks"
	"github.com/mcpmon/mcpmon/alerter/sinks/email"
	"github.com/mcpmon/mcpmon/pkg/subscribe"
)

// subscriptions builds the status page subscription service once per
// process (the API serves its routes, the alerter sends its notices); nil
// without --subscribe-smtp-addr. The sealing keyring seals the addresses
// and the link keys at rest, and seeds the link keys (subscribe.LinkKeys).
func (d *Daemon) subscriptions() (*subscribe.Service, error) {
	o := d.opts
	if o.SubscribeSMTPAddr == "" || d.subs != nil {
		return d.subs, nil
	}
	var roots *x509.CertPool
	if o.SubscribeSMTPCAFile != "" {
		pem, err := os.ReadFile(o.SubscribeSMTPCAFile)
		if err != nil {
			return nil, usageError{fmt.Errorf("--subscribe-smtp-ca-file: %w", err)}
		}
		roots = x509.NewCertPool()
		if !roots.AppendCertsFromPEM(pem) {
			return nil, usageError{fmt.Errorf("--subscribe-smtp-ca-file %s: no PEM certificate", o.SubscribeSMTPCAFile)}
		}
	}
	mailer, err := email.New(email.Options{
		Name: "subscribers", Addr: o.SubscribeSMTPAddr, Username: o.SubscribeSMTPUsername, Password: o.SubscribeSMTPPassword.Reveal(),
		TLS: o.SubscribeSMTPTLS, RootCAs: roots, From: o.SubscribeSMTPFrom,
		// Send names each subscriber; the sink's own To is never used.
		To: []string{o.SubscribeSMTPFrom}, Clock: d.clk, Logger: d.log,
	})
	if err != nil {
		return nil, usageError{fmt.Errorf("--subscribe-smtp-*: %w", err)}
	}
	d.subs, err = subscribe.New(subscribe.Options{
		Store: d.st, Mailer: mailer, BaseURL: o.SubscribeBaseURL,
		Keys: d.kr.Derive(subscribe.KeyLabel), Sealer: d.kr, Owner: o.ReplicaID,
		MaxPerPage: o.MaxSubscribersPerPage, Clock: d.clk, Logger: d.log,
	})
	if err != nil {
		return nil, usageError{err}
	}
	return d.subs, nil
}

// webhookSubscriptions is the webhook subscribers' notifier: every POST
// through the SSRF guard unless private targets are allowed, the URLs and
// secrets opened with the sealing keyring.
func (d *Daemon) webhookSubscriptions() *subscribe.Webhooks {
	var client *http.Client
	if !d.opts.AllowPrivateTargets {
		client = sinks.GuardedClient()
	}
	return subscribe.NewWebhooks(subscribe.WebhookOptions{Sealer: d.kr, Client: client, Clock: d.clk, Logger: d.log})
}
