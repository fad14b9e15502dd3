package prober

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/iotest"
	"testing/synctest"
)

// TestSSELineEnds: CRLF, LF and a lone CR all end a line (WHATWG HTML
// §9.2), also when a CRLF is split between two reads, which is one line
// end, not two (a second would end the event early).
func TestSSELineEnds(t *testing.T) {
	want := []sseEvent{{Event: "message", Data: "a\nb", ID: "1"}, {Event: "ping", Data: "c"}}
	streams := map[string]string{
		"LF":    "id: 1\nevent: message\ndata: a\ndata: b\n\nevent: ping\ndata: c\n\n",
		"CRLF":  "id: 1\r\nevent: message\r\ndata: a\r\ndata: b\r\n\r\nevent: ping\r\ndata: c\r\n\r\n",
		"CR":    "id: 1\revent: message\rdata: a\rdata: b\r\revent: ping\rdata: c\r\r",
		"mixed": ": hi\r\nid: 1\revent: message\ndata: a\r\ndata: b\r\r\nevent: ping\rdata: c\r\n\n",
	}
	readers := map[string]func(string) io.Reader{
		"whole":           func(s string) io.Reader { return strings.NewReader(s) },
		"a byte per read": func(s string) io.Reader { return iotest.OneByteReader(strings.NewReader(s)) },
	}
	for name, stream := range streams {
		for rname, reader := range readers {
			t.Run(name+"/"+rname, func(t *testing.T) {
				sr := newSSEReader(reader(stream), 1024, 8)
				for i, w := range want {
					ev, err := sr.Next()
					if err != nil {
						t.Fatalf("event %d: %v", i, err)
					}
					if ev != w {
						t.Fatalf("event %d is %+v, want %+v", i, ev, w)
					}
				}
				if ev, err := sr.Next(); err != io.EOF {
					t.Fatalf("after the events: %+v, %v; want EOF", ev, err)
				}
			})
		}
	}
}

// TestSSELoneCRDispatchesAtOnce: an event ended by CR CR is dispatched
// without waiting for the byte after the last CR, which a server that
// pauses between events sends only later.
func TestSSELoneCRDispatchesAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		pr, pw := io.Pipe()
		defer pr.Close()
		go func() { _, _ = io.WriteString(pw, "data: x\r\r") }()
		got := make(chan sseEvent, 1)
		go func() {
			ev, err := newSSEReader(pr, 1024, 8).Next()
			if err == nil {
				got <- ev
			}
			close(got)
		}()
		synctest.Wait()
		select {
		case ev := <-got:
			if ev.Data != "x" {
				t.Fatalf("event %+v, want data x", ev)
			}
		default:
			t.Fatal("the event ended by CR CR is not dispatched until more bytes arrive")
		}
		pw.Close()
	})
}

// TestSSEWithCRLineEndsIsUp: a server whose SSE answers end lines in a
// lone CR answers; the probe reads it.
func TestSSEWithCRLineEndsIsUp(t *testing.T) {
	for name, nl := range map[string]string{"CR": "\r", "CRLF": "\r\n", "LF": "\n"} {
		t.Run(name, func(t *testing.T) {
			good := goodRaw(nil)
			ep := rawEP(t, func(w http.ResponseWriter, r *http.Request, method string, id json.RawMessage) {
				var res any
				switch method {
				case "initialize":
					res = initResult(Version20251125)
				case "ping":
					res = map[string]any{}
				case "tools/list":
					res = map[string]any{"tools": []any{}}
				default:
					good(w, r, method, id)
					return
				}
				b, _ := json.Marshal(result(id, res))
				w.Header().Set("Content-Type", "text/event-stream")
				_, _ = io.WriteString(w, "event: message"+nl+"data: "+string(b)+nl+nl)
			})
			res := testProber(t, nil).Probe(context.Background(), ep, cmd())
			if res.Class != ClassOK {
				t.Fatalf("class %s (%s), want ok", res.Class, res.Error)
			}
		})
	}
}
