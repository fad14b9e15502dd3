package model

import (
	"strings"
	"unicode"
)

// IsBidiControl reports the Unicode bidirectional formatting characters
// (the Bidi_Control property): embeddings and overrides (U+202A–U+202E),
// isolates (U+2066–U+2069) and the implicit marks (U+200E, U+200F,
// U+061C). They make text display as something else ("evil.example"
// shown reversed, a tool name that reads as another), so display text
// must not carry them: the API refuses them in what users submit, and
// DisplayLine replaces them in what targets and agents send.
func IsBidiControl(r rune) bool { return unicode.Is(unicode.Bidi_Control, r) }

// DisplayLine bounds and sanitizes text mcpmon did not write (a target's
// server name or error words, an agent's posted result) before it is
// stored and shown on one line: invalid UTF-8 becomes U+FFFD, text over
// maxBytes is cut there (on a rune boundary) and marked "…", control
// characters (C0 with ESC, BEL, NUL, CR and LF; DEL; C1) become spaces,
// and bidirectional controls U+FFFD (DisplayRune). Text that may carry a
// secret is scrubbed before: a cut could otherwise leave a prefix of one
// that no longer matches.
func DisplayLine(s string, maxBytes int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) > maxBytes {
		s = strings.ToValidUTF8(s[:maxBytes], "") + "…"
	}
	return strings.Map(lineRune, s)
}

// OneLine is DisplayLine without the cut, for text bounded already that
// is about to be shown (a CLI table's cell): nothing in it can move a
// terminal's cursor, ring its bell, start an escape sequence or reorder
// what follows.
func OneLine(s string) string { return strings.Map(lineRune, strings.ToValidUTF8(s, "\uFFFD")) }

func lineRune(r rune) rune {
	if unicode.IsControl(r) {
		return ' '
	}
	return DisplayRune(r)
}

// DisplayRune replaces a bidirectional control (IsBidiControl) with
// U+FFFD and keeps any other rune. A bidi control in a server's name, a
// tool's name or description or an error message would make it display as
// other text in the dashboard, a terminal or an alert; replaced rather
// than dropped, the change stays visible, and a description that gains
// one still changes the catalog's fingerprint.
func DisplayRune(r rune) rune {
	if IsBidiControl(r) {
		return '\uFFFD'
	}
	return r
}

// NoBidi replaces the bidirectional controls of s with U+FFFD, keeping
// its line breaks (text shown as paragraphs, such as a tool description).
func NoBidi(s string) string {
	for _, r := range s {
		if IsBidiControl(r) {
			return strings.Map(DisplayRune, s)
		}
	}
	return s
}
