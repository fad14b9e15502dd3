package api_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/mcpmon/mcpmon/pkg/api"
	"github.com/mcpmon/mcpmon/pkg/api/apispec"
	"github.com/mcpmon/mcpmon/pkg/clock"
	"github.com/mcpmon/mcpmon/pkg/store/bolt"
)

// Registering an endpoint. With `mcpmon run` listening on 127.0.0.1:8080 the
// same request is:
//
//	curl -sS -X POST http://127.0.0.1:8080/v1/endpoints \
//	  -H 'Content-Type: application/json' \
//	  -d '{"name":"docs","url":"https://mcp.example.com/mcp","schedule":"@every 1m",
//	       "headers":{"Authorization":"Bearer <token>"}}'
//
// The answer is 201 with a Location; the header value is never returned.
func ExampleNew() {
	dir, _ := os.MkdirTemp("", "mcpmon-example")
	defer os.RemoveAll(dir)
	clk := clock.NewFake(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	st, err := bolt.Open(filepath.Join(dir, "mcpmon.db"), bolt.Options{Clock: clk, SweepInterval: -1})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer st.Close()

	// apispec holds the exchange to openapi.yaml; a mismatch would print
	// here and fail the example.
	srv := httptest.NewServer(apispec.Handler(printReporter{}, api.New(api.Options{
		Store: st,
		NewID: func() string { return "k7m2q9x4c1v8b3n6" },
	})))
	defer srv.Close()

	body := `{"name":"docs","url":"https://mcp.example.com/mcp","schedule":"@every 1m",
	          "headers":{"Authorization":"Bearer <token>"}}`
	req, _ := http.NewRequestWithContext(context.Background(), "POST", srv.URL+"/v1/endpoints", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	fmt.Println(resp.Status)
	fmt.Println("Location:", resp.Header.Get("Location"))
	fmt.Print(string(out))

	// Output:
	// 201 Created
	// Location: /v1/endpoints/k7m2q9x4c1v8b3n6
	// {"id":"k7m2q9x4c1v8b3n6","tenant":"default","name":"docs","url":"https://mcp.example.com/mcp","transport":"auto","schedule":"@every 1m","timeout":"10s","headers":{"Authorization":"<redacted>"},"paused":false,"createdAt":"2026-03-01T12:00:00Z","updatedAt":"2026-03-01T12:00:00Z","version":1,"state":"pending"}
}

// printReporter reports spec mismatches of an example on its output.
type printReporter struct{}

func (printReporter) Helper()                           {}
func (printReporter) Errorf(format string, args ...any) { fmt.Printf(format+"\n", args...) }
