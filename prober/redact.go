package prober

import (
	"encoding/base64"
	"fmt"
	"net/url"
	"sort"
	"strings"

	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/msg"
)

// fromTarget marks text the target supplied (a JSON-RPC error message, a
// header value, a content type, a version string) inside a probeError's
// arguments: it is the only text redaction touches, besides the text of
// error arguments, which carry what the target sent too (a malformed status
// line, a certificate's names).
type fromTarget string

// scrubber replaces the endpoint's secrets — its configured header values
// (all of them are secrets) and the values of credential-like query
// parameters of its URL — in target-supplied text. It matches each secret
// ignoring ASCII case, and its standard and URL-safe base64 and URL-encoded
// forms, since a server echoing a credential back often re-encodes it:
// base64 at each of the three alignments a secret can have inside a longer
// encoded blob, with the characters that depend on its neighbours left out.
// Secrets shorter than 4 bytes are left alone, and so are derived forms
// shorter than 6 characters: replacing "1" everywhere would garble every
// message and protect nothing.
//
// Scrubbing comes before any cut: clean and clean4k run on scrubbed text,
// so a truncation can never leave a prefix of a secret behind.
type scrubber []string

const (
	minSecretLen  = 4
	minDerivedLen = 6
)

func newScrubber(headers map[string]string, more ...string) scrubber {
	var secrets []string
	for _, v := range headers {
		secrets = append(secrets, v)
		// Bearer tokens are often echoed without the scheme.
		if _, tok, ok := strings.Cut(v, " "); ok {
			secrets = append(secrets, tok)
		}
	}
	secrets = append(secrets, more...)
	seen := map[string]bool{}
	var s scrubber
	add := func(needle string, min int) {
		needle = asciiLower(needle)
		if len(needle) >= min && !seen[needle] {
			seen[needle] = true
			s = append(s, needle)
		}
	}
	for _, v := range secrets {
		if len(v) < minSecretLen {
			continue
		}
		add(v, minSecretLen)
		add(url.QueryEscape(v), minDerivedLen)
		add(url.PathEscape(v), minDerivedLen)
		for _, enc := range []*base64.Encoding{base64.RawStdEncoding, base64.RawURLEncoding} {
			for _, form := range base64Forms(enc, []byte(v)) {
				add(form, minDerivedLen)
			}
		}
	}
	return s
}

// base64Forms returns the characters of enc's encoding of secret that are
// the same wherever it sits in a longer encoded text: for each of the three
// byte offsets, the characters of the 3-byte groups secret alone decides.
// At offset 0 a secret that fills its last group exactly is the whole
// unpadded encoding.
func base64Forms(enc *base64.Encoding, secret []byte) []string {
	var forms []string
	for off := range 3 {
		buf := append(make([]byte, off), secret...)
		full := enc.EncodeToString(buf)
		// Characters decided only by secret's bytes: the first group is
		// shared with off unknown bytes (skip 0, 2 or 3 characters), the last
		// partial group with unknown bytes after it.
		skip := [3]int{0, 2, 3}[off]
		end := len(buf) / 3 * 4
		if off == 0 && len(buf)%3 == 0 {
			end = len(full)
		}
		if end > skip {
			forms = append(forms, full[skip:end])
		}
	}
	// The whole encoding, for a secret encoded on its own.
	forms = append(forms, enc.EncodeToString(secret))
	return forms
}

// scrub replaces every occurrence of every secret form, ignoring ASCII
// case, with model.ScrubbedText. Overlapping matches merge into one replacement,
// so one form cannot break up another's match.
func (s scrubber) scrub(text string) string {
	if len(s) == 0 || text == "" {
		return text
	}
	folded := asciiLower(text)
	type span struct{ from, to int }
	var spans []span
	for _, needle := range s {
		for i := 0; ; {
			j := strings.Index(folded[i:], needle)
			if j < 0 {
				break
			}
			spans = append(spans, span{i + j, i + j + len(needle)})
			i += j + 1
		}
	}
	if len(spans) == 0 {
		return text
	}
	sort.Slice(spans, func(a, b int) bool { return spans[a].from < spans[b].from })
	var b strings.Builder
	last := 0
	for i := 0; i < len(spans); {
		from, to := spans[i].from, spans[i].to
		for i++; i < len(spans) && spans[i].from <= to; i++ {
			to = max(to, spans[i].to)
		}
		if from >= last {
			b.WriteString(text[last:from])
			b.WriteString(model.ScrubbedText)
			last = to
		}
	}
	b.WriteString(text[last:])
	return b.String()
}

// asciiLower lower-cases ASCII letters only, so byte offsets in the result
// are offsets in s.
func asciiLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + ('a' - 'A')
		}
	}
	return string(b)
}

// render formats e with every target-supplied argument scrubbed; the
// format, mcpmon's own words, is kept as written.
func (e *probeError) render(s scrubber) string {
	args := make([]any, len(e.args))
	for i, a := range e.args {
		switch v := a.(type) {
		case fromTarget:
			// Scrub, then sanitize and cut: never cut first.
			args[i] = fromTarget(clean(s.scrub(string(v))))
		case *probeError:
			args[i] = v.render(s)
		case error:
			args[i] = s.scrub(v.Error())
		default:
			args[i] = a
		}
	}
	// model.NoBidi covers the error arguments, which are the target's words too
	// (a malformed status line); the format, mcpmon's, has no bidi control.
	return clean4k(model.NoBidi(fmt.Sprintf(e.format, args...)))
}

// redactIdentity scrubs the fields of res that are wholly the target's
// words. Error and event messages are scrubbed where they are rendered.
// The probe stores them as the target sent them; they are cleaned (and
// cut) here, after scrubbing.
func redactIdentity(res *msg.ProbeResult, s scrubber) {
	res.ServerName = clean(s.scrub(res.ServerName))
	res.ServerVersion = clean(s.scrub(res.ServerVersion))
	res.ProtocolVersion = clean(s.scrub(res.ProtocolVersion))
}

// clean bounds and sanitizes a server-provided string before it is stored
// (model.DisplayLine at 256 bytes). Text that may carry a secret is
// scrubbed first: a cut at 256 bytes could otherwise leave a prefix of one
// that no longer matches.
func clean(s string) string { return model.DisplayLine(s, 256) }
