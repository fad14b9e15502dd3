package model

import (
	"errors"
	"slices"
	"testing"
)

func TestEndpointValidate(t *testing.T) {
	ok := Endpoint{URL: "https://mcp.example.com/mcp", Transport: "auto"}
	for _, tc := range []struct {
		name string
		edit func(*Endpoint)
		want []FieldError // nil: valid
	}{
		{"valid", func(*Endpoint) {}, nil},
		{"empty transport is auto", func(e *Endpoint) { e.Transport = "" }, nil},
		{"pinned revision", func(e *Endpoint) { e.ProtocolVersion = "2025-06-18" }, nil},
		{"default rules", func(e *Endpoint) { e.Rules = &Rules{} }, nil},
		{"no URL", func(e *Endpoint) { e.URL = "" }, []FieldError{{"url", "is required"}}},
		{"ftp URL", func(e *Endpoint) { e.URL = "ftp://b.example/mcp" }, []FieldError{{"url", "scheme must be http or https"}}},
		{"credentials in URL", func(e *Endpoint) { e.URL = "https://u:p@b.example/mcp" },
			[]FieldError{{"url", "must not contain credentials (user:password@); use headers instead"}}},
		{"port out of range", func(e *Endpoint) { e.URL = "https://b.example:70000/mcp" }, []FieldError{{"url", "port must be between 1 and 65535"}}},
		{"unknown transport", func(e *Endpoint) { e.Transport = "websocket" },
			[]FieldError{{"transport", "must be one of auto, streamable-http, sse"}}},
		{"revision not a date", func(e *Endpoint) { e.ProtocolVersion = "latest" },
			[]FieldError{{"protocolVersion", "must be a protocol revision date such as 2025-06-18"}}},
		{"rule bounds, in field order", func(e *Endpoint) { e.Rules = &Rules{OpenAfter: -1, RegionQuorum: 101} }, []FieldError{
			{"rules/openAfter", "must be between 0 (default) and 100"}, {"rules/regionQuorum", "must be between 0 (default) and 100"}}},
		{"window below openAfter", func(e *Endpoint) { e.Rules = &Rules{OpenAfter: 3, OpenWindow: 2} },
			[]FieldError{{"rules/openWindow", "must be at least openAfter (3)"}}},
		{"every field at once", func(e *Endpoint) { e.URL, e.Transport = "/mcp", "ws" }, []FieldError{
			{"url", "scheme must be http or https"}, {"transport", "must be one of auto, streamable-http, sse"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := ok
			tc.edit(&e)
			err := e.Validate()
			if tc.want == nil {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			var got FieldErrors
			if !errors.As(err, &got) || !slices.Equal(got, FieldErrors(tc.want)) {
				t.Fatalf("Validate = %v, want %v", err, tc.want)
			}
		})
	}
}
