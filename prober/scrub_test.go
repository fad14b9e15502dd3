package prober

import (
	"encoding/base64"
	"net/url"
	"strings"
	"testing"

	"github.com/mcpmon/mcpmon/pkg/msg"
)

// TestScrubCatchesEncodedAndCasedForms: a secret echoed back upper-cased,
// base64-encoded (alone or inside a longer encoded document, at any
// alignment) or URL-encoded is scrubbed like the secret itself.
func TestScrubCatchesEncodedAndCasedForms(t *testing.T) {
	const token = "sk-Live-ABC123xyz/+=?&"
	s := newScrubber(map[string]string{"Authorization": "Bearer " + token}, "qs-SECRET-0042")
	inBlob := func(prefix string) string {
		return base64.StdEncoding.EncodeToString([]byte(prefix + token + `","more":"data"}`))
	}
	for name, text := range map[string]string{
		"as is":                   "bad token " + token,
		"upper case":              "BAD TOKEN " + strings.ToUpper(token),
		"lower case":              strings.ToLower(token) + " rejected",
		"base64":                  "got " + base64.StdEncoding.EncodeToString([]byte(token)),
		"base64 url":              "got " + base64.RawURLEncoding.EncodeToString([]byte(token)),
		"base64 of the header":    base64.StdEncoding.EncodeToString([]byte("Bearer " + token)),
		"inside base64, offset 0": inBlob(`{"a":"`),
		"inside base64, offset 1": inBlob(`{"ab":"`),
		"inside base64, offset 2": inBlob(`{"abc":"`),
		"url-encoded":             "/cb?t=" + url.QueryEscape(token),
		"url-encoded, lower hex":  "/cb?t=" + strings.ToLower(url.QueryEscape(token)),
		"path-escaped":            "/x/" + url.PathEscape(token),
		"query secret":            "unknown key QS-secret-0042",
	} {
		t.Run(name, func(t *testing.T) {
			got := s.scrub(text)
			if !strings.Contains(got, "[REDACTED]") {
				t.Fatalf("scrub(%q) = %q: nothing scrubbed", text, got)
			}
			for _, leak := range []string{token[:10], strings.ToUpper(token[:10]), "QS-secret", "qs-SECRET"} {
				if strings.Contains(got, leak) {
					t.Fatalf("scrub(%q) = %q still holds %q", text, got, leak)
				}
			}
		})
	}
	if got := s.scrub("nothing secret here: OK"); got != "nothing secret here: OK" {
		t.Fatalf("ordinary text changed: %q", got)
	}
}

// TestScrubBeforeCut: text is scrubbed before it is cut to size, so a
// secret straddling the cut leaves no prefix behind.
func TestScrubBeforeCut(t *testing.T) {
	const secret = "tok-STRADDLE-9f8e7d6c"
	s := newScrubber(map[string]string{"X-Api-Key": secret})
	long := strings.Repeat("x", 250) + secret + strings.Repeat("y", 100) // the 256-byte cut falls inside the secret

	res := msg.ProbeResult{ServerName: long, ServerVersion: long, ProtocolVersion: long}
	redactIdentity(&res, s)
	for _, f := range []string{res.ServerName, res.ServerVersion, res.ProtocolVersion} {
		if strings.Contains(f, secret[:4]) || len(f) > 256+len("…") {
			t.Fatalf("identity field %q: want the secret gone and the field cut", f)
		}
	}

	pe := failf(ClassRPCError, 0, "initialize answered with JSON-RPC error %d: %s", -32603, fromTarget(long))
	if got := pe.render(s); strings.Contains(got, secret[:4]) || !strings.Contains(got, "[REDAC") {
		t.Fatalf("rendered error %q: want the secret scrubbed before the cut", got)
	}

	huge := strings.Repeat("z", 4090) + secret
	pe = failf(ClassRPCError, 0, "%s", fromTarget(huge))
	if got := pe.render(s); strings.Contains(got, secret[:4]) {
		t.Fatalf("rendered 4k error still holds a prefix of the secret: %q", got[len(got)-40:])
	}
}
