package sinks

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/mcpmon/mcpmon/pkg/alert"
)

func TestNotifyListValidated(t *testing.T) {
	for _, c := range []struct {
		name, doc, want string
	}{
		{"unknown kind", `[{"name":"h","type":"webhook","url":"https://h.example.com/x","notify":["outage"]}]`, `notify: "outage": want any of incidents, catalog_breaking`},
		{"twice", `[{"name":"h","type":"webhook","url":"https://h.example.com/x","notify":["version","version"]}]`, `notify: "version" listed twice`},
		{"opsgenie carries no events", `[{"name":"og","type":"opsgenie","apiKey":"k","notify":["incidents","certificate_expiry"]}]`, `notify: "certificate_expiry": type opsgenie does not carry change events`},
	} {
		_, err := Parse([]byte(c.doc))
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want one naming %q", c.name, err, c.want)
		}
	}
}

// TestNotifyListSubscribes: a built sink wants what its notify list says
// (incidents only without one), also as a per-endpoint sink, and keeps
// its list in the redacted form.
func TestNotifyListSubscribes(t *testing.T) {
	cfgs, err := Parse([]byte(`{"sinks":[
		{"name":"changes","type":"slack","url":"https://hooks.slack.com/services/T/B/X","notify":["catalog_breaking","catalog_security"]},
		{"name":"oncall","type":"pagerduty","routingKey":"rk"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	built, err := Build(cfgs, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	changes, oncall := built[0], built[1]
	for _, c := range []struct {
		s    alert.Sink
		kind string
		want bool
	}{
		{changes, alert.NotifyIncidents, false}, {changes, "catalog_breaking", true}, {changes, "version", false},
		{oncall, alert.NotifyIncidents, true}, {oncall, "catalog_breaking", false},
	} {
		if got := alert.Subscribes(c.s, c.kind); got != c.want {
			t.Errorf("%s subscribes to %s = %v, want %v", c.s.Name(), c.kind, got, c.want)
		}
	}
	if _, ok := changes.(alert.EventNotifier); !ok {
		t.Error("a subscribed slack sink does not carry events")
	}
	if got := cfgs[0].Redacted().Notify; strings.Join(got, ",") != "catalog_breaking,catalog_security" {
		t.Errorf("redacted notify = %v", got)
	}
	r := NewEndpointResolver(nil, true, nil)
	own, err := r.For("ep1", json.RawMessage(`[{"name":"mine","type":"webhook","url":"https://h.example.com/x","notify":["version"]}]`))
	if err != nil || len(own) != 1 {
		t.Fatal(own, err)
	}
	if !alert.Subscribes(own[0], "version") || alert.Subscribes(own[0], alert.NotifyIncidents) || alert.MetricLabel(own[0]) != "endpoint:webhook" {
		t.Errorf("per-endpoint sink: subscribes version %v, incidents %v, label %s", alert.Subscribes(own[0], "version"),
			alert.Subscribes(own[0], alert.NotifyIncidents), alert.MetricLabel(own[0]))
	}
	if _, ok := own[0].(alert.EventNotifier); !ok {
		t.Error("a per-endpoint sink does not carry events")
	}
}
