package model

import "unicode"

// IsBidiControl reports the Unicode bidirectional formatting characters
// (the Bidi_Control property): embeddings and overrides (U+202A–U+202E),
// isolates (U+2066–U+2069) and the implicit marks (U+200E, U+200F,
// U+061C). They make text display as something else ("evil.example"
// shown reversed, a tool name that reads as another), so display text
// must not carry them: the API refuses them in what users submit and the
// prober replaces them in what targets send.
func IsBidiControl(r rune) bool { return unicode.Is(unicode.Bidi_Control, r) }
