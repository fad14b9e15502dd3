package prober

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"
)

// TestTimeoutNamesTheStep: a server that hangs at one step of the
// handshake times out with a message naming that step and the timeout.
func TestTimeoutNamesTheStep(t *testing.T) {
	hang := func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }
	tests := []struct {
		step string
		h    func(w http.ResponseWriter, r *http.Request)
		want string
	}{
		{"initialize", hang, "initialize: no answer within the timeout (300ms): "},
		{"notifications/initialized", hang, "notifications/initialized: no answer within the timeout (300ms): "},
		{"ping", hang, "ping: no answer within the timeout (300ms): "},
		{"initialize", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(200)
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		}, "initialize: no complete answer within the timeout (300ms): "},
	}
	for _, tc := range tests {
		t.Run(tc.want, func(t *testing.T) {
			good := goodRaw(nil)
			ep := rawEP(t, func(w http.ResponseWriter, r *http.Request, method string, id json.RawMessage) {
				if method == tc.step {
					tc.h(w, r)
					return
				}
				good(w, r, method, id)
			})
			ep.ProtocolVersion = Version20251125
			ep.Timeout = 300 * time.Millisecond
			res := testProber(t, nil).Probe(context.Background(), ep, cmd())
			if res.Class != ClassTimeout {
				t.Fatalf("class %s (%s), want timeout", res.Class, res.Error)
			}
			mustContain(t, res.Error, tc.want)
		})
	}
}

// TestUnansweredServerRequestIsNamed: a server that sends a request of its
// own on the SSE stream of an answer (sampling, elicitation) and waits for
// the client's reply before answering times out, or ends its stream, with
// a message naming that request: the prober answers none.
func TestUnansweredServerRequestIsNamed(t *testing.T) {
	for name, after := range map[string]func(r *http.Request){
		"waits":       func(r *http.Request) { <-r.Context().Done() },
		"ends stream": func(*http.Request) {},
	} {
		t.Run(name, func(t *testing.T) {
			good := goodRaw(nil)
			ep := rawEP(t, func(w http.ResponseWriter, r *http.Request, method string, id json.RawMessage) {
				if method != "ping" {
					good(w, r, method, id)
					return
				}
				w.Header().Set("Content-Type", "text/event-stream")
				w.WriteHeader(200)
				_, _ = w.Write([]byte("event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":\"s1\",\"method\":\"elicitation/create\",\"params\":{}}\n\n"))
				w.(http.Flusher).Flush()
				after(r)
			})
			ep.ProtocolVersion = Version20251125
			ep.Timeout = 300 * time.Millisecond
			res := testProber(t, nil).Probe(context.Background(), ep, cmd())
			if res.Status == "up" {
				t.Fatalf("class %s, want a failure", res.Class)
			}
			mustContain(t, res.Error, "ping: ")
			mustContain(t, res.Error, "the server sent a request (elicitation/create), which the prober does not answer")
		})
	}
}
