package declarative_test

import (
	"fmt"
	"strings"

	apiv1 "github.com/mcpmon/mcpmon/pkg/api/v1"
	"github.com/mcpmon/mcpmon/pkg/declarative"
)

// A file declares two endpoints; the server holds one of them with an
// older schedule and one the file does not name. With Prune, the plan
// creates, updates and deletes — and shows header names, never values.
func ExampleMakePlan() {
	doc, _ := declarative.Parse([]byte(`
endpoints:
  - name: search
    url: https://search.example.com/mcp
    schedule: "@every 1m"
    headers: {Authorization: "Bearer ${env:MCPMON_APPLY_SEARCH_TOKEN}"}
  - name: billing
    url: https://billing.example.com/mcp
`))
	r := declarative.Resolver{Env: func(string) (string, bool) { return "s3cret", true }}
	desired, _ := r.Resolve([]declarative.Desired{{Input: doc.Endpoints[0]}, {Input: doc.Endpoints[1]}})
	current := []apiv1.EndpointView{
		{ID: "e1", Name: "search", URL: "https://search.example.com/mcp", Transport: "auto", Schedule: "@every 30s", Timeout: "10s", Version: 2},
		{ID: "e2", Name: "demo", URL: "https://demo.example.com/mcp", Transport: "auto", Schedule: "@every 30s", Timeout: "10s"},
	}
	plan, _ := declarative.MakePlan(desired, current, declarative.Options{Prune: true})
	for _, c := range plan.Changes {
		fmt.Println(strings.TrimSpace(fmt.Sprintf("%s %s %s", c.Action, c.Name, c.ID)))
		for _, f := range c.Fields {
			fmt.Printf("  %s: %s -> %s\n", f.Field, f.From, f.To)
		}
	}
	// Output:
	// create billing
	// update search e1
	//   schedule: @every 30s -> @every 1m
	//   headers: [] -> [Authorization]
	// delete demo e2
}
