package prober

// oauthpin.go holds an endpoint's OAuth client secret to one token
// endpoint, trusting the first one it is sent to. The first token fetch of
// a client pins the authorization server it used — the discovered issuer
// and token endpoint, or the configured token URL — and a later discovery
// that names another issuer or token endpoint is not followed: no token
// request is made, the probe is ClassAuthServerChanged, and its result
// carries an auth_server_changed event whose fingerprint names the pinned
// and the named server, so the aggregator records one event for as long
// as that pair lasts.
//
// The pin is kept in the store (Options.Catalogs, kind
// store.KindAuthServer) under the endpoint's own ID, never a region's:
// every region and replica sends the secret to the same token endpoint,
// and the pin survives restarts; DeleteEndpoint removes it with the
// endpoint. Without a store nothing is pinned and discovery is followed.
//
// A pin belongs to the client configuration it was made under (pinClient:
// the endpoint's URL without its query, the token URL, the client ID,
// scopes and audience; never the secret). When the owner changes any of
// them the pin no longer applies and the next fetch pins again: setting
// oauth.tokenUrl to the new token endpoint is how a change is accepted.
// A configured token URL is pinned too, so that going back to discovery
// afterwards pins afresh rather than reviving the old pin.
//
// decidePin is the rule. token (oauth.go) reads the pin before it sends
// the secret and returns a new one for Memory, which the caller stores
// after the result is published; a crash in between costs one more
// first use of the same server.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/msg"
	"github.com/mcpmon/mcpmon/pkg/store"
)

// AuthServerKind is the store.Objects kind (in Options.Catalogs) of the
// pinned authorization servers.
const AuthServerKind = store.KindAuthServer

// EventAuthServerChanged is the result event of a discovery that named
// another authorization server than the pinned one (the store's
// model.EventAuthServerChanged, recorded as it is).
const EventAuthServerChanged = model.EventAuthServerChanged

// authPin is the stored pin of one endpoint.
type authPin struct {
	// Client is pinClient of the configuration the pin was made under.
	Client   string     `json:"client"`
	Server   authServer `json:"server"`
	PinnedAt time.Time  `json:"pinnedAt"`
}

// pinClient identifies what a pin was made for: the endpoint's resource
// URL and its OAuth client without the secret.
func pinClient(ep model.Endpoint) string {
	resource := ep.URL
	if u, err := url.Parse(ep.URL); err == nil {
		resource = resourceURL(u)
	}
	o := ep.OAuth
	h := sha256.Sum256([]byte(strings.Join([]string{resource, o.TokenURL, o.ClientID, strings.Join(o.Scopes, " "), o.Audience}, "\x00")))
	return hex.EncodeToString(h[:])
}

// pinDecision is what decidePin allows.
type pinDecision struct {
	// TokenURL is where the client secret may go; "" when Changed.
	TokenURL string
	// Pin is the pin to store; nil: the stored one stands.
	Pin *authPin
	// Changed: found is another server than the pinned one.
	Changed bool
}

// decidePin holds found, the server a token fetch is about to use, to
// stored, the endpoint's pin (nil: none), for client (pinClient). No pin,
// or one made for another client, pins found; a pin of found stands; a pin
// of another server refuses found.
func decidePin(stored *authPin, client string, found authServer, now time.Time) pinDecision {
	switch {
	case stored == nil || stored.Client != client:
		return pinDecision{TokenURL: found.TokenEndpoint, Pin: &authPin{Client: client, Server: found, PinnedAt: now.UTC()}}
	case stored.Server == found:
		return pinDecision{TokenURL: stored.Server.TokenEndpoint}
	default:
		return pinDecision{Changed: true}
	}
}

// loadPin reads endpointID's pin: nil without a store or a pin. A
// document that does not decode is no pin (the store wrote what the
// prober gave it); a store that cannot be read is an error, since the
// secret must not go out unchecked.
func (p *Prober) loadPin(ctx context.Context, endpointID string) (*authPin, error) {
	if p.opts.Catalogs == nil {
		return nil, nil
	}
	b, err := p.opts.Catalogs.GetObject(ctx, AuthServerKind, endpointID)
	if errors.Is(err, model.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var pin authPin
	if json.Unmarshal(b, &pin) != nil || pin.Client == "" {
		p.log.Warn("the pinned OAuth authorization server does not decode; pinning again", "endpoint", endpointID)
		return nil, nil
	}
	return &pin, nil
}

// authChange is a discovery that named another server than the pin.
type authChange struct {
	pinned, named authServer
}

func (c *authChange) failure() *probeError {
	return failf(ClassAuthServerChanged, 0, "the OAuth authorization server changed: discovery names %s (token endpoint %s), not the pinned %s (token endpoint %s); not followed, the client secret was not sent. To accept the change, set oauth.tokenUrl or change the OAuth client",
		fromTarget(named(c.named.Issuer)), fromTarget(c.named.TokenEndpoint), fromTarget(named(c.pinned.Issuer)), fromTarget(c.pinned.TokenEndpoint))
}

// event is the result event of c. Its fingerprint covers both servers,
// so every probe that sees the same change maps to one durable event.
func (c *authChange) event(s scrubber) msg.Event {
	fp := sha256.Sum256([]byte(strings.Join([]string{c.pinned.Issuer, c.pinned.TokenEndpoint, c.named.Issuer, c.named.TokenEndpoint}, "\x00")))
	side := func(a authServer) map[string]string {
		return map[string]string{"issuer": clean(s.scrub(a.Issuer)), "tokenEndpoint": clean(s.scrub(a.TokenEndpoint))}
	}
	return msg.Event{
		Kind: EventAuthServerChanged, Severity: "critical",
		Message: fmt.Sprintf("OAuth authorization server changed: the endpoint's metadata names token endpoint %s, not the pinned %s; not followed (the client secret was not sent)",
			clean(s.scrub(c.named.TokenEndpoint)), clean(s.scrub(c.pinned.TokenEndpoint))),
		Details:     map[string]any{"pinned": side(c.pinned), "named": side(c.named)},
		Fingerprint: hex.EncodeToString(fp[:]),
	}
}
