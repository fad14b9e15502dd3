package prober

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
)

// rawServer accepts on 127.0.0.1:0 and hands each request, read with
// http.ReadRequest, to answer, which writes the bytes of the reply itself.
// It returns the endpoint URL; every goroutine is joined with the test.
func rawServer(t *testing.T, answer func(c net.Conn, req *http.Request, body []byte) error) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	t.Cleanup(func() {
		l.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	wg.Go(func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Go(func() {
				defer c.Close()
				br := bufio.NewReader(c)
				for {
					req, err := http.ReadRequest(br)
					if err != nil {
						return
					}
					body, _ := io.ReadAll(req.Body)
					if answer(c, req, body) != nil {
						return
					}
				}
			})
		}
	})
	return "http://" + l.Addr().String() + "/mcp"
}

// TestInterimResponsesAreSkipped: a healthy server behind a CDN that sends
// 103 Early Hints (or a server sending 100 Continue or 102 Processing)
// before each answer is up, in every era the probe tries; the interim
// response is never taken for the answer.
func TestInterimResponsesAreSkipped(t *testing.T) {
	interims := map[string][]int{
		"103 Early Hints":    {http.StatusEarlyHints},
		"100 Continue":       {http.StatusContinue},
		"102 Processing":     {http.StatusProcessing},
		"five of them mixed": {http.StatusContinue, http.StatusProcessing, http.StatusEarlyHints, http.StatusEarlyHints, http.StatusEarlyHints},
	}
	for name, codes := range interims {
		for _, pinned := range []string{"", Version20251125} {
			t.Run(name+"/pinned "+pinned, func(t *testing.T) {
				good := goodRaw(nil)
				ep := rawEP(t, func(w http.ResponseWriter, r *http.Request, method string, id json.RawMessage) {
					for _, c := range codes {
						if c == http.StatusEarlyHints {
							w.Header().Set("Link", "</x.css>; rel=preload")
						}
						w.WriteHeader(c)
						w.Header().Del("Link")
					}
					good(w, r, method, id)
				})
				ep.ProtocolVersion = pinned
				res := testProber(t, nil).Probe(context.Background(), ep, cmd())
				if res.Class != ClassOK {
					t.Fatalf("class %s (%s), want ok", res.Class, res.Error)
				}
				if res.ProtocolVersion != Version20251125 {
					t.Errorf("protocol %q, want %s", res.ProtocolVersion, Version20251125)
				}
			})
		}
	}
}

// TestEndlessInterimResponsesAreBounded: a server that answers with 1xx
// responses only, or with 1xx responses carrying huge headers, fails the
// probe as a protocol error after a bounded count and size, long before
// its deadline.
func TestEndlessInterimResponsesAreBounded(t *testing.T) {
	tests := []struct {
		name    string
		interim string
		substr  string
	}{
		{"endless 103", "HTTP/1.1 103 Early Hints\r\nLink: </x.css>; rel=preload\r\n\r\n", "more than 5 interim (1xx) responses"},
		{"103s with 30 KiB headers", "HTTP/1.1 103 Early Hints\r\nLink: <" + strings.Repeat("x", 30<<10) + ">\r\n\r\n", "interim (1xx) responses exceed 64 KiB"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			url := rawServer(t, func(c net.Conn, _ *http.Request, _ []byte) error {
				for {
					if _, err := io.WriteString(c, tc.interim); err != nil {
						return err
					}
				}
			})
			ep := endpoint(url)
			ep.ProtocolVersion = Version20251125
			ep.Timeout = MaxTimeout // the bound, not the deadline, ends the probe
			res := testProber(t, nil).Probe(context.Background(), ep, cmd())
			if res.Class != ClassProtocolError {
				t.Fatalf("class %s (%s), want protocol_error", res.Class, res.Error)
			}
			mustContain(t, res.Error, tc.substr)
		})
	}
}
