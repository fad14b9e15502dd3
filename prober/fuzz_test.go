package prober

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzSSE feeds arbitrary streams to the bounded SSE parser: it must end
// (EOF or a bound error), never dispatch more events than the cap or an event
// larger than the line cap, and agree with a plain re-reading of well-formed
// single-line data events.
func FuzzSSE(f *testing.F) {
	f.Add([]byte("event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n"))
	f.Add([]byte("id: 0\ndata:\n\nevent: message\ndata: x\n\n"))
	f.Add([]byte(": keepalive\r\n\r\ndata: a\r\ndata: b\r\n\r\n"))
	f.Add([]byte("event: endpoint\ndata: /message?sessionId=1\n\n"))
	f.Add([]byte("data"))
	// Lone CR line ends (seen from a hostile server), and CRLF with CRs and
	// LFs in every order.
	f.Add([]byte("event: message\rdata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\r\r"))
	f.Add([]byte("data: a\r\n\rdata: b\n\r\r\ndata: c\r"))
	const maxLine, maxEvents = 256, 8
	f.Fuzz(func(t *testing.T, in []byte) {
		sr := newSSEReader(&capReader{r: bytes.NewReader(in), n: 4096}, maxLine, maxEvents)
		n := 0
		for {
			ev, err := sr.Next()
			if err != nil {
				if err != io.EOF && !errors.Is(err, errSSELineTooLong) && !errors.Is(err, errSSETooManyEvents) && !errors.Is(err, errTooLarge) {
					t.Fatalf("unexpected error %v", err)
				}
				break
			}
			n++
			if n > maxEvents {
				t.Fatalf("dispatched %d events, cap %d", n, maxEvents)
			}
			if len(ev.Data) > maxLine {
				t.Fatalf("event data %d bytes, cap %d", len(ev.Data), maxLine)
			}
			if ev.Event == "" {
				t.Fatal("event type empty; want message by default")
			}
		}
		// Round trip: a stream we build from the input's lines parses back.
		var want []string
		var stream strings.Builder
		for _, line := range strings.Split(string(in), "\n") {
			line = strings.Map(func(r rune) rune {
				if r == '\r' || r == 0 {
					return -1
				}
				return r
			}, line)
			if len(want) >= maxEvents || len(line) > maxLine-8 {
				break
			}
			want = append(want, line)
			stream.WriteString("data: " + line + "\n\n")
		}
		sr = newSSEReader(strings.NewReader(stream.String()), maxLine, maxEvents)
		for i, w := range want {
			ev, err := sr.Next()
			if err != nil {
				t.Fatalf("event %d: %v", i, err)
			}
			if ev.Data != w {
				t.Fatalf("event %d data %q, want %q", i, ev.Data, w)
			}
		}
	})
}

// FuzzJSONRPC: parseRPC never panics, accepts only valid UTF-8 JSON-RPC 2.0,
// and what it accepts survives a re-encode.
func FuzzJSONRPC(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25"}}`))
	f.Add([]byte(`{"jsonrpc":"2.0","id":"1","error":{"code":-32601,"message":"Method not found"}}`))
	f.Add([]byte(`[{"jsonrpc":"2.0","method":"notifications/message"},{"jsonrpc":"2.0","id":2,"result":null}]`))
	f.Add([]byte(`{"jsonrpc":"1.0","id":1,"result":{}}`))
	f.Add([]byte("{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":\"\xff\"}"))
	f.Add([]byte(strings.Repeat("[", 20000)))
	f.Fuzz(func(t *testing.T, in []byte) {
		msgs, err := parseRPC(in)
		if err != nil {
			if !errors.Is(err, errNotJSONRPC) {
				t.Fatalf("error %v does not wrap errNotJSONRPC", err)
			}
			return
		}
		if !utf8.Valid(in) {
			t.Fatal("accepted invalid UTF-8")
		}
		for _, m := range msgs {
			if m.JSONRPC != "2.0" {
				t.Fatalf("accepted jsonrpc %q", m.JSONRPC)
			}
			if m.Method == "" && len(m.ID) == 0 {
				t.Fatal("accepted a response without id")
			}
			b, err := json.Marshal(m)
			if err != nil {
				t.Fatal(err)
			}
			again, err := parseRPC(b)
			if err != nil || len(again) != 1 {
				t.Fatalf("re-encoded message rejected: %s: %v", b, err)
			}
			if _, ok := responseFor([]rpcMessage{m}, idOf(m.ID)); m.Method == "" && idOf(m.ID) >= 0 && !ok {
				t.Fatal("responseFor misses its own id")
			}
		}
	})
}
