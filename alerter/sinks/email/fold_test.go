package email

import (
	"bytes"
	"mime"
	"net/mail"
	"strings"
	"testing"
)

// TestLongSubjectIsFolded: a subject of 66 CJK characters in a title and
// 66 in a name was one 1,470-character header line, past the 998 RFC 5322
// allows (a strict relay refuses it, and mcpmon takes that as permanent).
// Folded at the spaces between its encoded-words, every line keeps to 78
// characters and the subject reads back whole.
func TestLongSubjectIsFolded(t *testing.T) {
	subject := "[" + strings.Repeat("日", 66) + "] Incident: " + strings.Repeat("本", 66)
	raw := render(map[string]string{"Subject": mime.QEncoding.Encode("utf-8", subject), "To": "a@example.com"}, "body\n")
	head, _, _ := bytes.Cut(raw, []byte("\r\n\r\n"))
	for line := range strings.SplitSeq(string(head), "\r\n") {
		if len(line) > foldAt {
			t.Errorf("header line of %d characters, want at most %d: %q", len(line), foldAt, line)
		}
	}
	m, err := mail.ReadMessage(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	got, err := new(mime.WordDecoder).DecodeHeader(m.Header.Get("Subject"))
	if err != nil || got != subject {
		t.Fatalf("subject read back as %q (%v), want %q", got, err, subject)
	}
	if short := fold("Subject: hello"); short != "Subject: hello" {
		t.Errorf("a short line was changed: %q", short)
	}
	if long := "X: " + strings.Repeat("a", 200); fold(long) != long {
		t.Errorf("a line without spaces was changed")
	}
}
