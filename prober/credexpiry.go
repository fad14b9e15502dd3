package prober

// credexpiry.go owns the credential expiry watchdog: when the endpoint's
// configured Authorization header is "Bearer <JWT>", the token's exp claim
// is read (parsed, not verified: the prober has no key and needs none to
// know when the token stops working) and becomes the metric
// mcpmon_probe_credential_expiry_timestamp_seconds and, within the warning
// window (model.Endpoint.CredentialWarning, else Options.CredentialWarning,
// default 72h) or once expired, a model.EventCredentialExpiry event. The
// token itself is never logged, returned or put in the event; the event's
// fingerprint is a hash of exp, iss and sub, stable for one token and new
// for its replacement.
//
// OAuth client-credentials tokens are left out on purpose: the prober
// refreshes them itself (oauth.go), so their expiry is routine, not a
// warning; a client that can no longer get one is auth_token_failed.

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/msg"
)

// DefaultCredentialWarning is how long before a JWT bearer token expires
// the probe starts warning.
const DefaultCredentialWarning = 72 * time.Hour

// CredentialExpiry is the Details of a credential_expiry event.
type CredentialExpiry struct {
	// Fingerprint identifies the token (hex SHA-256 of exp, iss and sub,
	// first 16 bytes); never the token.
	Fingerprint string    `json:"fingerprint"`
	Header      string    `json:"header"` // where the credential is configured
	ExpiresAt   time.Time `json:"expiresAt"`
	Expired     bool      `json:"expired"`
}

// jwtClaims are the claims the watchdog reads.
type jwtClaims struct {
	exp      time.Time
	iss, sub string
}

// bearerJWT finds "Bearer <JWT>" in headers (Authorization, any case) and
// reads its exp, iss and sub. ok is false when there is no such header, the
// token is not a JWT, or it carries no numeric exp.
func bearerJWT(headers map[string]string) (header string, c jwtClaims, ok bool) {
	for name, v := range headers {
		if !strings.EqualFold(name, "Authorization") {
			continue
		}
		scheme, tok, found := strings.Cut(strings.TrimSpace(v), " ")
		if !found || !strings.EqualFold(scheme, "Bearer") {
			return "", jwtClaims{}, false
		}
		c, ok := parseJWTClaims(strings.TrimSpace(tok))
		return name, c, ok
	}
	return "", jwtClaims{}, false
}

// parseJWTClaims decodes a JWS compact serialisation's payload, without
// verifying it.
func parseJWTClaims(tok string) (jwtClaims, bool) {
	parts := strings.Split(tok, ".")
	if len(parts) != 3 || len(parts[1]) > 16<<10 {
		return jwtClaims{}, false
	}
	payload, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(parts[1], "="))
	if err != nil {
		return jwtClaims{}, false
	}
	var cl struct {
		Exp *float64 `json:"exp"`
		Iss string   `json:"iss"`
		Sub string   `json:"sub"`
	}
	if json.Unmarshal(payload, &cl) != nil || cl.Exp == nil || math.IsNaN(*cl.Exp) || *cl.Exp <= 0 || *cl.Exp > 1e11 {
		return jwtClaims{}, false
	}
	sec, frac := math.Modf(*cl.Exp)
	return jwtClaims{exp: time.Unix(int64(sec), int64(frac*1e9)).UTC(), iss: cl.Iss, sub: cl.Sub}, true
}

func (c jwtClaims) fingerprint() string {
	h := sha256.Sum256([]byte(fmt.Sprintf("%d\x00%s\x00%s", c.exp.Unix(), c.iss, c.sub)))
	return hex.EncodeToString(h[:16])
}

// credentialEvent decides the warning for a credential expiring at c.exp,
// seen at now with the warning window warn: nil while it is further off.
// It is pure.
func credentialEvent(header string, c jwtClaims, now time.Time, warn time.Duration) *msg.Event {
	left := c.exp.Sub(now)
	if left >= warn {
		return nil
	}
	d := CredentialExpiry{Fingerprint: c.fingerprint(), Header: header, ExpiresAt: c.exp, Expired: left <= 0}
	m := fmt.Sprintf("the bearer token in the %s header expires %s (in %s): renew it before probing goes blind",
		header, c.exp.Format(time.RFC3339), left.Round(time.Minute))
	sev := "warning"
	if d.Expired {
		m = fmt.Sprintf("the bearer token in the %s header expired %s: probes carry a dead credential", header, c.exp.Format(time.RFC3339))
		sev = "critical"
	}
	// One durable event per token for the warning and one more when it has
	// expired, however many probes report it (the aggregator's events are
	// idempotent by fingerprint).
	fp := d.Fingerprint
	if d.Expired {
		fp += "-expired"
	}
	return &msg.Event{Kind: model.EventCredentialExpiry, Severity: sev, Message: m, Details: d, Fingerprint: fp}
}
