package api

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/mcpmon/mcpmon/pkg/model"
)

// Text checks shared by every human-readable field (endpoint and
// maintenance names, acknowledgement by/reason, label values). These
// strings reach logs, alert payloads (Slack, email subjects, PagerDuty
// summaries) and the operators' terminals, so they must not carry control
// characters (a CR/LF forges a log line or a mail header, ESC drives a
// terminal), bidirectional overrides (which make "evil.example" display as
// something else), or be made only of invisible characters (a name that
// looks empty in every list).

// textProblem returns why s is not acceptable display text, or "".
func textProblem(s string) string {
	if !utf8.ValidString(s) {
		return "must be valid UTF-8"
	}
	visible := false
	for _, r := range s {
		switch {
		case unicode.IsControl(r): // C0 (NUL, CR, LF, VT, ESC, ...), DEL, C1
			return fmt.Sprintf("must not contain control characters (found %U)", r)
		case model.IsBidiControl(r):
			return fmt.Sprintf("must not contain bidirectional text controls (found %U)", r)
		case !unicode.IsSpace(r) && !unicode.Is(unicode.Cf, r) && !unicode.Is(unicode.Mn, r):
			visible = true
		}
	}
	if s != "" && !visible {
		return "must contain visible characters, not only spaces or zero-width characters"
	}
	return ""
}

// multilineTextProblem is textProblem for text shown as paragraphs (a
// status page's description): line feeds are allowed, every other control
// character is not.
func multilineTextProblem(s string) string { return textProblem(strings.ReplaceAll(s, "\n", " ")) }

// validHeaderValue reports whether v may be sent as an HTTP field value
// (RFC 9110 §5.5): visible ASCII, space, horizontal tab and obs-text bytes;
// no other control character (NUL, CR, LF, VT, ESC, DEL, ...). The prober
// writes requests itself, so a control character here would reach the
// target's parser as is.
func validHeaderValue(v string) bool {
	for i := 0; i < len(v); i++ {
		if c := v[i]; (c < 0x20 && c != '\t') || c == 0x7f {
			return false
		}
	}
	return true
}
