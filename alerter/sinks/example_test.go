package sinks_test

import (
	"fmt"

	"github.com/mcpmon/mcpmon/alerter/sinks"
)

// A sinks file, and what an operator (or the REST API) may see of it.
func ExampleParse() {
	cfgs, err := sinks.Parse([]byte(`{"sinks": [
	  {"name": "ops-slack", "type": "slack", "url": "https://hooks.slack.com/services/T0/B0/XXXX"},
	  {"name": "pd", "type": "pagerduty", "routingKey": "0123456789abcdef0123456789abcdef",
	   "url": "https://events.eu.pagerduty.com/v2/enqueue", "timeout": "5s"}
	]}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, c := range cfgs {
		fmt.Println(c.Redacted())
	}
	// Output:
	// {"name":"ops-slack","type":"slack","url":"https://hooks.slack.com/<redacted>"}
	// {"name":"pd","type":"pagerduty","url":"https://events.eu.pagerduty.com/v2/enqueue","routingKey":"<redacted>","timeout":"5s"}
}
