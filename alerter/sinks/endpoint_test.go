package sinks

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/mcpmon/mcpmon/pkg/netguard"
)

// TestEndpointSinksValidationRefusesInternalAddresses: a REST caller cannot
// register a per-endpoint sink whose receiver is a literal internal address
// or a localhost name; the error names the field, not the URL's secrets.
func TestEndpointSinksValidationRefusesInternalAddresses(t *testing.T) {
	const token = "PATHTOKEN4242"
	refused := []string{
		`[{"name": "own", "type": "webhook", "url": "http://127.0.0.1:8080/hook/` + token + `"}]`,
		`[{"name": "own", "type": "slack", "url": "http://169.254.169.254/latest/meta-data/` + token + `"}]`,
		`[{"name": "own", "type": "webhook", "url": "http://[::ffff:10.0.0.1]/` + token + `"}]`,
		`[{"name": "own", "type": "pagerduty", "routingKey": "` + token + `", "url": "http://localhost:9000/v2/enqueue"}]`,
		`[{"name": "own", "type": "opsgenie", "apiKey": "` + token + `", "url": "https://[::1]/"}]`,
		`[{"name": "own", "type": "email", "smtpAddr": "192.168.1.10:25", "from": "a@b.example", "to": ["c@d.example"]}]`,
		`[{"name": "own", "type": "email", "smtpAddr": "mail.localhost:25", "from": "a@b.example", "to": ["c@d.example"]}]`,
	}
	for _, raw := range refused {
		err := ValidateEndpointSinks(json.RawMessage(raw), false)
		if !errors.Is(err, netguard.ErrBlocked) || !errors.Is(err, ErrInvalid) {
			t.Errorf("ValidateEndpointSinks(%s, false) = %v, want ErrInvalid wrapping netguard.ErrBlocked", raw, err)
			continue
		}
		if strings.Contains(err.Error(), token) || !strings.Contains(err.Error(), `sink "own"`) {
			t.Errorf("error %q: want the sink named and no secret", err)
		}
		if err := ValidateEndpointSinks(json.RawMessage(raw), true); err != nil {
			t.Errorf("with private targets allowed, %s: %v", raw, err)
		}
	}
	for _, raw := range []string{
		`[{"name": "own", "type": "webhook", "url": "https://hooks.example.com/in/` + token + `"}]`,
		`[{"name": "own", "type": "pagerduty", "routingKey": "k", "clientUrl": "http://127.0.0.1:3000/ui"}]`, // a link, never fetched
		`[{"name": "own", "type": "email", "smtpAddr": "smtp.example.com:587", "from": "a@b.example", "to": ["c@d.example"]}]`,
		`null`,
	} {
		if err := ValidateEndpointSinks(json.RawMessage(raw), false); err != nil {
			t.Errorf("ValidateEndpointSinks(%s, false) = %v, want nil", raw, err)
		}
	}
}
