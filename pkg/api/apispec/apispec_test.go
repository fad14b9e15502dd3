package apispec_test

import (
	"testing"

	"github.com/mcpmon/mcpmon/pkg/api/apispec"
)

// TestTheAPIDocumentIsValidOpenAPI31: the embedded document parses and
// passes the OpenAPI 3.1 schema.
func TestTheAPIDocumentIsValidOpenAPI31(t *testing.T) {
	s, err := apispec.Load()
	if err != nil {
		t.Fatal(err)
	}
	if n := len(s.Operations()); n < 20 {
		t.Errorf("%d operations, want every /v1 route", n)
	}
	for _, msg := range s.Lint() {
		t.Error(msg)
	}
}

// TestLintRefusesAnInvalidDocument proves the check above can fail: an
// operation's responses must be an object, and info needs a title.
func TestLintRefusesAnInvalidDocument(t *testing.T) {
	const doc = `openapi: 3.1.0
info: {version: "1"}
paths:
  /x:
    get:
      responses: 7
components:
  schemas:
    Problem: {type: object}
`
	s, err := apispec.Parse([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	if msgs := s.Lint(); len(msgs) == 0 {
		t.Error("Lint accepted a document without info.title and with responses: 7")
	}
}
