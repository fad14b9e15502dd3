package prober

import (
	"fmt"
	"strings"

	"github.com/mcpmon/mcpmon/pkg/msg"
)

// fromTarget marks text the target supplied (a JSON-RPC error message, a
// header value, a content type, a version string) inside a probeError's
// arguments: it is the only text redaction touches, besides the text of
// error arguments, which carry what the target sent too (a malformed status
// line, a certificate's names).
type fromTarget string

// scrubber replaces the endpoint's configured header values (all of them
// are secrets) in target-supplied text. Values shorter than 4 bytes are left
// alone: replacing "1" everywhere would garble every message and protect
// nothing.
type scrubber []string

func newScrubber(headers map[string]string) scrubber {
	var s scrubber
	for _, v := range headers {
		if len(v) >= 4 {
			s = append(s, v)
		}
		// Bearer tokens are often echoed without the scheme.
		if _, tok, ok := strings.Cut(v, " "); ok && len(tok) >= 4 {
			s = append(s, tok)
		}
	}
	return s
}

func (s scrubber) scrub(text string) string {
	for _, v := range s {
		text = strings.ReplaceAll(text, v, "[REDACTED]")
	}
	return text
}

// render formats e with every target-supplied argument scrubbed; the
// format, mcpmon's own words, is kept as written.
func (e *probeError) render(s scrubber) string {
	args := make([]any, len(e.args))
	for i, a := range e.args {
		switch v := a.(type) {
		case fromTarget:
			args[i] = fromTarget(s.scrub(string(v)))
		case *probeError:
			args[i] = v.render(s)
		case error:
			args[i] = s.scrub(v.Error())
		default:
			args[i] = a
		}
	}
	return clean4k(fmt.Sprintf(e.format, args...))
}

// redactIdentity scrubs the fields of res that are wholly the target's
// words. Error and event messages are scrubbed where they are rendered.
func redactIdentity(res *msg.ProbeResult, s scrubber) {
	res.ServerName = s.scrub(res.ServerName)
	res.ServerVersion = s.scrub(res.ServerVersion)
	res.ProtocolVersion = s.scrub(res.ProtocolVersion)
}

// clean bounds and sanitizes a server-provided string before it is stored.
func clean(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) > 256 {
		s = strings.ToValidUTF8(s[:256], "") + "…"
	}
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, s)
}
