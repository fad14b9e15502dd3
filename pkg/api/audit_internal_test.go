package api

import (
	"testing"

	apiv1 "github.com/mcpmon/mcpmon/pkg/api/v1"
)

func TestAuditOfNamesEveryChange(t *testing.T) {
	tests := []struct {
		method, pattern, action, kind string
	}{
		{"POST", "/v1/endpoints", ActionCreate, "endpoint"},
		{"PATCH", "/v1/endpoints/{id}", ActionUpdate, "endpoint"},
		{"POST", "/v1/incidents/{id}/ack", ActionAcknowledge, "incident"},
		{"POST", "/v1/maintenance", ActionSilence, "maintenance"},
		{"DELETE", "/v1/keys/{id}", ActionRevokeKey, "key"},
		// Routes without a row are named by their path.
		{"POST", "/v1/widgets", ActionCreate, "widgets"},
		{"PUT", "/v1/widgets/{id}", ActionUpdate, "widgets"},
		{"DELETE", "/v1/widgets/{id}", ActionDelete, "widgets"},
		{"POST", "/v1/widgets/{id}/rotate", "rotate", "widgets"},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.pattern, func(t *testing.T) {
			if ar := auditOf(tt.method, tt.pattern); ar.action != tt.action || ar.kind != tt.kind {
				t.Fatalf("auditOf = %s %s, want %s %s", ar.action, ar.kind, tt.action, tt.kind)
			}
		})
	}
}

// TestAuditSummaryNamesOnlyFields: values never appear, and neither does a
// member name that is not a field of the input (it could be a secret).
func TestAuditSummaryNamesOnlyFields(t *testing.T) {
	fields := jsonFields(apiv1.EndpointInput{})
	tests := []struct{ name, body, want string }{
		{"empty", ``, ""},
		{"not an object", `[1]`, ""},
		{"fields sorted, values dropped", `{"url":"https://x/?token=s3cret","name":"n"}`, "fields: name, url"},
		{"case-folded like encoding/json", `{"NAME":"n","name":"m"}`, "fields: name"},
		{"unknown member only counted", `{"mcpmon_s3cretkey":null,"paused":true}`, "fields: paused; 1 other member(s)"},
		{"only unknown", `{"s3cret":null}`, "1 other member(s)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := auditSummary([]byte(tt.body), fields); got != tt.want {
				t.Fatalf("auditSummary(%s) = %q, want %q", tt.body, got, tt.want)
			}
		})
	}
}
