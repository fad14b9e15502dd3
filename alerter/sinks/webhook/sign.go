package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Signature verification errors.
var (
	ErrNoSignature    = errors.New("webhook: missing signature or timestamp header")
	ErrBadTimestamp   = errors.New("webhook: malformed timestamp")
	ErrStaleTimestamp = errors.New("webhook: timestamp outside tolerance (possible replay)")
	ErrBadSignature   = errors.New("webhook: signature mismatch")
)

// DefaultTolerance is a sensible replay window for Verify.
const DefaultTolerance = 5 * time.Minute

// Sign returns the X-Mcpmon-Signature value for body sent at Unix time ts:
// "v1=" + hex(HMAC-SHA256(secret, "<ts>.<body>")).
func Sign(secret string, ts int64, body []byte) string {
	return "v1=" + hex.EncodeToString(mac(secret, strconv.FormatInt(ts, 10), body))
}

func mac(secret, ts string, body []byte) []byte {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(ts))
	m.Write([]byte{'.'})
	m.Write(body)
	return m.Sum(nil)
}

// Verify checks a delivery as a receiver would: ts is the X-Mcpmon-Timestamp
// header, sig the X-Mcpmon-Signature header (one or more comma-separated
// "v1=<hex>" values, so a sender can sign with an old and a new secret while
// rotating), body the raw request body. A timestamp further than tolerance
// from now (either way) is rejected so a captured request cannot be
// replayed later; receivers should also remember Idempotency-Key values for
// at least the tolerance.
func Verify(secret, ts string, body []byte, sig string, now time.Time, tolerance time.Duration) error {
	if ts == "" || sig == "" {
		return ErrNoSignature
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return fmt.Errorf("%w: %q", ErrBadTimestamp, ts)
	}
	if d := now.Sub(time.Unix(sec, 0)); d > tolerance || d < -tolerance {
		return fmt.Errorf("%w: signed %s ago, tolerance %s", ErrStaleTimestamp, d.Round(time.Second), tolerance)
	}
	want := mac(secret, ts, body)
	for _, part := range strings.Split(sig, ",") {
		v, ok := strings.CutPrefix(strings.TrimSpace(part), "v1=")
		if !ok {
			continue
		}
		got, err := hex.DecodeString(v)
		if err == nil && hmac.Equal(got, want) {
			return nil
		}
	}
	return ErrBadSignature
}
