package sinks

import (
	"errors"
	"strings"
	"testing"

	"github.com/mcpmon/mcpmon/pkg/alert"
	"github.com/mcpmon/mcpmon/pkg/model"
)

// TestSeverityRouting: "severities" takes critical and warning only, a
// sink built with it takes those severities alone, and one without it
// takes every severity.
func TestSeverityRouting(t *testing.T) {
	_, err := Parse([]byte(`{"sinks":[{"name":"hook","type":"webhook","url":"https://example.com/h","severities":["page"]}]}`))
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "severities") {
		t.Fatalf("bad severity: %v, want ErrInvalid naming severities", err)
	}
	cfgs, err := Parse([]byte(`{"sinks":[
		{"name":"pager","type":"webhook","url":"https://example.com/p","severities":["critical"]},
		{"name":"chat","type":"webhook","url":"https://example.com/c"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	built, err := Build(cfgs, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	pager, chat := built[0], built[1]
	if !alert.Takes(pager, model.SeverityCritical) || alert.Takes(pager, model.SeverityWarning) {
		t.Fatal("the critical-only sink routes wrongly")
	}
	if !alert.Takes(chat, model.SeverityCritical) || !alert.Takes(chat, model.SeverityWarning) {
		t.Fatal("a sink without severities must take both")
	}
	if pager.Name() != "pager" || alert.MetricLabel(pager) != "pager" {
		t.Fatalf("routed sink name %q label %q", pager.Name(), alert.MetricLabel(pager))
	}
	res := NewEndpointResolver(nil, false, nil)
	eps, err := res.For("ep", []byte(`[{"name":"own","type":"webhook","url":"https://example.com/o","severities":["warning"]}]`))
	if err != nil || len(eps) != 1 || alert.Takes(eps[0], model.SeverityCritical) || !alert.Takes(eps[0], model.SeverityWarning) {
		t.Fatalf("per-endpoint sink routing lost: %v %v", eps, err)
	}
}
