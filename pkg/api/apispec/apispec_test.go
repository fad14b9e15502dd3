package apispec_test

import (
	"testing"

	"github.com/mcpmon/mcpmon/pkg/api/apispec"
)

func TestTheAPIDocumentLoads(t *testing.T) {
	s, err := apispec.Load()
	if err != nil {
		t.Fatal(err)
	}
	if n := len(s.Operations()); n < 20 {
		t.Errorf("%d operations, want every /v1 route", n)
	}
}
