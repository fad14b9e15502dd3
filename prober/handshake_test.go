package prober

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// TestInitializeAnsweredWith20260728: a server that answers initialize
// with 2026-07-28 is a version mismatch, and the message says why (that
// revision has no initialize) instead of claiming the prober does not
// speak it. (With a pinned revision the message says the pin differs.)
func TestInitializeAnsweredWith20260728(t *testing.T) {
	for _, transport := range []string{TransportAuto, TransportStreamableHTTP} {
		t.Run(transport, func(t *testing.T) {
			ep := rawEP(t, goodRaw(map[string]func(http.ResponseWriter, json.RawMessage){
				"initialize": func(w http.ResponseWriter, id json.RawMessage) {
					writeJSON(w, 200, result(id, initResult(Version20260728)))
				},
			}))
			ep.Transport = transport
			res := testProber(t, nil).Probe(context.Background(), ep, cmd())
			if res.Class != ClassVersionMismatch {
				t.Fatalf("class %s (%s), want version_mismatch", res.Class, res.Error)
			}
			if strings.Contains(res.Error, "does not speak") {
				t.Errorf("error %q says the prober does not speak 2026-07-28", res.Error)
			}
			mustContain(t, res.Error, "2026-07-28 to initialize, a revision without initialize (the prober speaks it through server/discover)")
		})
	}
}

// TestUnaskedContentEncodingIsNamed: the prober sends no Accept-Encoding;
// a server that compresses its answer anyway fails as a protocol error
// whose message names the encoding (not "body is not valid UTF-8").
func TestUnaskedContentEncodingIsNamed(t *testing.T) {
	for _, ct := range []string{"application/json", "text/event-stream"} {
		t.Run(ct, func(t *testing.T) {
			good := goodRaw(nil)
			ep := rawEP(t, func(w http.ResponseWriter, r *http.Request, method string, id json.RawMessage) {
				if ae := r.Header.Get("Accept-Encoding"); ae != "" {
					t.Errorf("probe sent Accept-Encoding %q", ae)
				}
				if method != "initialize" {
					good(w, r, method, id)
					return
				}
				b, _ := json.Marshal(result(id, initResult(Version20251125)))
				if ct == "text/event-stream" {
					b = []byte("event: message\ndata: " + string(b) + "\n\n")
				}
				var buf bytes.Buffer
				zw := gzip.NewWriter(&buf)
				_, _ = zw.Write(b)
				_ = zw.Close()
				w.Header().Set("Content-Type", ct)
				w.Header().Set("Content-Encoding", "gzip")
				_, _ = w.Write(buf.Bytes())
			})
			res := testProber(t, nil).Probe(context.Background(), ep, cmd())
			if res.Class != ClassProtocolError {
				t.Fatalf("class %s (%s), want protocol_error", res.Class, res.Error)
			}
			mustContain(t, res.Error, "initialize: response is Content-Encoding gzip, which the prober did not ask for")
		})
	}
}
