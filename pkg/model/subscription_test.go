package model

import (
	"testing"
	"unicode/utf8"
)

// TestMaskEmailKeepsWholeCharacters: the owner's view shows the first
// character of the local part whole, however many bytes it takes.
func TestMaskEmailKeepsWholeCharacters(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"jane@example.com", "j***@example.com"},
		{"ünï@exämple.com", "ü***@exämple.com"},
		{"名前@例え.jp", "名***@例え.jp"},
		{"😀x@example.com", "😀***@example.com"},
		{"@example.com", "***"},
		{"no-at", "***"},
	} {
		t.Run(c.in, func(t *testing.T) {
			got := MaskEmail(c.in)
			if got != c.want || !utf8.ValidString(got) {
				t.Fatalf("MaskEmail(%q) = %q, want %q", c.in, got, c.want)
			}
		})
	}
}
