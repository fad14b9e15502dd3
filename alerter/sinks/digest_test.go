package sinks

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/mcpmon/mcpmon/pkg/alert"
	"github.com/mcpmon/mcpmon/pkg/testpeers"
)

func TestDigestConfiguration(t *testing.T) {
	for _, c := range []struct {
		name, json, wantErr string
	}{
		{"webhook daily", `{"name":"h","type":"webhook","url":"https://x.example/h","notify":["catalog_info"],"digest":{"severities":["info"],"every":"daily","at":"09:00","timeZone":"Europe/Berlin"}}`, ""},
		{"email weekly", `{"name":"m","type":"email","smtpAddr":"smtp.example.com:587","from":"a@example.com","to":["b@example.com"],"notify":["incidents","catalog_info"],"digest":{"severities":["info","warning"],"every":"weekly","weekday":"friday"}}`, ""},
		{"pagerduty refuses", `{"name":"p","type":"pagerduty","routingKey":"k","notify":["catalog_info"],"digest":{"severities":["info"],"every":"daily"}}`, "does not carry digests"},
		{"opsgenie refuses", `{"name":"o","type":"opsgenie","apiKey":"k","digest":{"severities":["info"],"every":"daily"}}`, "does not carry digests"},
		{"no event kind to digest", `{"name":"h","type":"webhook","url":"https://x.example/h","digest":{"severities":["info"],"every":"daily"}}`, "no change-event kind"},
		{"bad schedule", `{"name":"h","type":"slack","url":"https://x.example/h","notify":["catalog_info"],"digest":{"severities":["low"],"every":"hourly","at":"9am"}}`, "every"},
		{"unknown digest member", `{"name":"h","type":"webhook","url":"https://x.example/h","notify":["catalog_info"],"digest":{"severities":["info"],"every":"daily","tz":"UTC"}}`, "unknown field"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseEndpointSinks(json.RawMessage("[" + c.json + "]"))
			switch {
			case c.wantErr == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case c.wantErr != "" && (err == nil || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), c.wantErr)):
				t.Fatalf("error %v, want ErrInvalid naming %q", err, c.wantErr)
			case c.wantErr != "" && c.wantErr != "unknown field" && !strings.Contains(err.Error(), "digest"):
				t.Fatalf("error %v does not name the digest", err)
			}
		})
	}
}

// TestBuiltDigestSinkDelivers: a configured digest survives the build's
// wrappers (notify list, severity routing, an endpoint's own sink) and
// delivers through the sink underneath.
func TestBuiltDigestSinkDelivers(t *testing.T) {
	rcv := testpeers.NewReceiver(t, nil)
	raw := json.RawMessage(`[{"name":"team","type":"webhook","url":"` + rcv.URL + `/h","severities":["critical"],"notify":["catalog_info"],
		"digest":{"severities":["info"],"every":"daily","at":"09:00"}}]`)
	sinks, err := NewEndpointResolver(nil, true, nil).For("ep1", raw)
	if err != nil || len(sinks) != 1 {
		t.Fatalf("sinks %v, %v", sinks, err)
	}
	s := sinks[0]
	rule, _, ok := alert.DigestOf(s)
	if !ok || !rule.Takes("info") || rule.Takes("breaking") || !alert.Subscribes(s, "catalog_info") || alert.Takes(s, "warning") {
		t.Fatalf("built sink: digest %v %+v, notify and severity routing lost", ok, rule)
	}
	if err := alert.ForwardDigest(t.Context(), s, alert.DigestNotification{Key: "digest-team-ep1-2026-06-10T00:00:00Z", Total: 0}); err != nil {
		t.Fatal(err)
	}
	if got := rcv.Requests(); len(got) != 1 || !strings.Contains(string(got[0].Body), `"type":"digest"`) {
		t.Fatalf("receiver got %d requests", len(got))
	}
	// Without a digest setting the sink has none.
	plain, err := BuildOne(Config{Name: "p", Type: TypeWebhook, URL: rcv.URL}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, ok := alert.DigestOf(plain); ok {
		t.Fatal("a sink without a digest setting reports one")
	}
}
