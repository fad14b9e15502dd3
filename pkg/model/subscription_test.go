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

// TestShownIsSchemeAndHostOrMask: the owner sees a webhook subscriber as
// its URL's scheme and host alone, whatever Masked a record holds, and an
// e-mail subscriber as its mask, never as invalid UTF-8.
func TestShownIsSchemeAndHostOrMask(t *testing.T) {
	hook := func(masked string) Subscriber { return Subscriber{Kind: SubscriberWebhook, Masked: masked} }
	for _, c := range []struct {
		name string
		sub  Subscriber
		want string
	}{
		{"webhook", hook(SecretURL("https://hooks.example.com/t/k3y?token=x").Origin()), "https://hooks.example.com"},
		{"webhook with port", hook(SecretURL("http://127.0.0.1:8080/p?q=1").Origin()), "http://127.0.0.1:8080"},
		{"webhook masked with path and query markers", hook("http://127.0.0.1:8080/" + Redacted + "?" + Redacted), "http://127.0.0.1:8080"},
		{"email", Subscriber{Masked: MaskEmail("ünï@exämple.com")}, "ü***@exämple.com"},
		{"email mask cut mid-rune", Subscriber{Masked: "\xc3***@exämple.com"}, "***@exämple.com"},
		{"nothing masked", Subscriber{}, "***"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := c.sub.Shown(); got != c.want {
				t.Fatalf("Shown() = %q, want %q", got, c.want)
			}
		})
	}
}
