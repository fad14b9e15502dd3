package prober

import (
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
