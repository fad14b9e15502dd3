package metrics

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// Metric types in the catalog.
const (
	Counter   = "counter"
	Gauge     = "gauge"
	Histogram = "histogram"
	// Summary is a summary without quantiles: only _sum and _count, the
	// cheap way to carry a mean per label set (two series, no buckets).
	Summary = "summary"
)

// Family is one metric family of the catalog: the contract between the roles
// that export it and the dashboards and alert rules that read it.
type Family struct {
	Name   string
	Type   string
	Labels []string // sorted
	Owner  string   // role or package that exports it
	// Cardinality states the bound on the family's series.
	Cardinality string
}

// Catalog returns every mcpmon_* metric family a role may export. Dashboards
// (dashboards/) and the pipeline alert rules (deploy/prometheus/rules.yml)
// use only these names; Lint checks a registry against it.
func Catalog() []Family {
	const (
		perEndpoint = "endpoints (series of deleted ones pruned within 5m)"
		perQueue    = "3 queues"
	)
	return []Family{
		// Prober.
		{"mcpmon_probes_total", Counter, []string{"class", "endpoint", "region"}, "prober", "endpoints × 23 classes × regions"},
		{"mcpmon_probe_duration_seconds", Histogram, []string{"endpoint"}, "prober", "endpoints × buckets"},
		{"mcpmon_probe_phase_seconds", Summary, []string{"endpoint", "phase"}, "prober", "endpoints × phases × 2 (_sum, _count)"},
		{"mcpmon_probe_cert_expiry_timestamp_seconds", Gauge, []string{"endpoint"}, "prober", "https endpoints"},
		{"mcpmon_probe_credential_expiry_timestamp_seconds", Gauge, []string{"endpoint"}, "prober", "endpoints whose Authorization header is a JWT"},
		{"mcpmon_probe_protocol_info", Gauge, []string{"endpoint", "transport", "version"}, "prober", "endpoints (one current version/transport each)"},
		{"mcpmon_tool_catalog_changes_total", Counter, []string{"endpoint", "severity"}, "prober", "endpoints × 2 severities"},
		{"mcpmon_probe_up", Gauge, []string{"endpoint", "region"}, "prober", "endpoints × regions (series of deleted ones pruned within 5m)"},
		{"mcpmon_probe_commands_skipped_total", Counter, []string{"reason"}, "prober", "2 reasons"},
		{"mcpmon_prober_blind", Gauge, []string{"region"}, "prober", "probers' regions (with --canary-url)"},
		{"mcpmon_canary_rounds_total", Counter, []string{"outcome", "region"}, "prober", "probers' regions × 2 outcomes"},
		{"mcpmon_canary_round_seconds", Histogram, []string{"region"}, "prober", "probers' regions × buckets"},
		// Scheduler.
		{"mcpmon_scheduler_endpoints", Gauge, nil, "api", "1"},
		{"mcpmon_scheduler_commands_total", Counter, nil, "api", "1"},
		{"mcpmon_scheduler_lag_seconds", Histogram, nil, "api", "buckets"},
		// API.
		{"mcpmon_audit_append_failures_total", Counter, nil, "api", "1"},
		{"mcpmon_agent_last_seen_timestamp_seconds", Gauge, []string{"agent", "location"}, "api", "agent keys (--max-agents-per-tenant per tenant)"},
		{"mcpmon_agent_clock_skew_seconds", Gauge, []string{"agent", "location"}, "api", "agent keys (--max-agents-per-tenant per tenant)"},
		{"mcpmon_agent_results_total", Counter, []string{"agent", "location"}, "api", "agent keys (--max-agents-per-tenant per tenant)"},
		{"mcpmon_status_page_host_checks_total", Counter, []string{"outcome"}, "api", "4 outcomes"},
		// Aggregator.
		{"mcpmon_verdict_state", Gauge, []string{"endpoint", "state"}, "aggregator", "endpoints × 5 states"},
		{"mcpmon_verdicts_total", Counter, []string{"state"}, "aggregator", "5 states"},
		{"mcpmon_results_duplicate_total", Counter, nil, "aggregator", "1"},
		{"mcpmon_results_late_total", Counter, nil, "aggregator", "1"},
		{"mcpmon_events_total", Counter, []string{"kind"}, "aggregator", "6 change-event kinds"},
		{"mcpmon_events_flapping_total", Counter, []string{"kind"}, "aggregator", "6 change-event kinds"},
		{"mcpmon_region_windows_total", Counter, []string{"region", "state"}, "aggregator", "configured regions (--regions) × 4 states"},
		{"mcpmon_region_prober_live", Gauge, []string{"region"}, "aggregator", "configured regions (--regions)"},
		{"mcpmon_aggregator_members", Gauge, nil, "aggregator", "1"},
		{"mcpmon_aggregator_takeovers_total", Counter, nil, "aggregator", "1"},
		{"mcpmon_pipeline_delay_seconds", Histogram, []string{"stage"}, "aggregator, alerter", "2 stages × buckets"},
		// Alerter.
		{"mcpmon_incidents_open", Gauge, nil, "alerter", "1"},
		{"mcpmon_incidents_total", Counter, []string{"event"}, "alerter", "3 events"},
		{"mcpmon_alerts_total", Counter, []string{"kind", "outcome", "sink"}, "alerter", "(global sink names + 5 endpoint:<type> labels) × kinds × 5 outcomes"},
		{"mcpmon_ledger_claims_total", Counter, []string{"result"}, "alerter", "3 results"},
		{"mcpmon_alert_unmarked_seconds", Histogram, nil, "alerter", "buckets"},
		{"mcpmon_deliveries_given_up_total", Counter, []string{"sink"}, "alerter", "global sink names + 5 endpoint:<type> labels"},
		{"mcpmon_event_notifications_total", Counter, []string{"kind", "outcome", "sink"}, "alerter", "(global sink names + 5 endpoint:<type> labels) × 6 event kinds × 5 outcomes"},
		{"mcpmon_subscriber_notices_total", Counter, []string{"outcome"}, "alerter", "4 outcomes (never a subscriber or page label)"},
		{"mcpmon_agent_online", Gauge, []string{"agent", "location"}, "alerter", "agent keys that polled once (--max-agents-per-tenant per tenant)"},
		// Queue plumbing (every role that sends or consumes).
		{"mcpmon_queue_sends_total", Counter, []string{"queue"}, "queue", perQueue},
		{"mcpmon_queue_duplicates_total", Counter, []string{"queue"}, "queue", perQueue},
		{"mcpmon_queue_receives_total", Counter, []string{"queue"}, "queue", perQueue},
		{"mcpmon_queue_deletes_total", Counter, []string{"queue"}, "queue", perQueue},
		{"mcpmon_queue_handoffs_total", Counter, []string{"queue"}, "queue", perQueue},
		{"mcpmon_queue_messages", Gauge, []string{"kind", "queue"}, "queue", "3 queues × 3 kinds"},
		{"mcpmon_queue_oldest_message_age_seconds", Gauge, []string{"queue"}, "queue", perQueue},
		{"mcpmon_sqs_requests_total", Counter, []string{"op", "queue"}, "queue/sqs", "SQS operations used (< 10)"},
		{"mcpmon_store_commits_total", Counter, nil, "embedded store", "1"},
		{"mcpmon_store_pages_written_total", Counter, nil, "embedded store", "1"},
		{"mcpmon_store_commit_failures_total", Counter, nil, "embedded store and queue, redis store", "1"},
		{"mcpmon_store_created_timestamp_seconds", Gauge, nil, "embedded store, redis store", "1"},
		{"mcpmon_store_ledger_waits_total", Counter, nil, "redis store", "1"},
		{"mcpmon_store_ledger_unreplicated_total", Counter, nil, "redis store", "1"},
		// Every role.
		{"mcpmon_build_info", Gauge, []string{"version"}, "every role", "1"},
		{"mcpmon_ready", Gauge, nil, "every role", "1"},
	}
}

// Lookup returns the catalog family for a metric name as it appears in a
// query: histogram series names (_bucket, _sum, _count) and summary series
// names (_sum, _count) map to their family.
func Lookup(series string) (Family, bool) {
	for _, f := range Catalog() {
		if f.Name == series {
			return f, true
		}
		var sufs []string
		switch f.Type {
		case Histogram:
			sufs = []string{"_bucket", "_sum", "_count"}
		case Summary:
			sufs = []string{"_sum", "_count"}
		}
		for _, suf := range sufs {
			if series == f.Name+suf {
				return f, true
			}
		}
	}
	return Family{}, false
}

// ErrNotInCatalog marks a gathered mcpmon_* family the catalog does not list
// or lists with another type or label set.
var ErrNotInCatalog = errors.New("metric does not match the catalog in pkg/metrics (dashboards and alert rules depend on it)")

// Lint gathers g and checks every mcpmon_* family against the catalog: the
// name is listed, the type matches, and the label names are exactly the
// catalog's. Roles call it in their metrics tests so a renamed metric breaks
// a test, not a dashboard.
func Lint(g prometheus.Gatherer) error {
	mfs, err := g.Gather()
	if err != nil {
		return fmt.Errorf("gather: %w", err)
	}
	var errs []error
	for _, mf := range mfs {
		name := mf.GetName()
		if !strings.HasPrefix(name, Namespace+"_") {
			continue
		}
		f, ok := Lookup(name)
		if !ok || f.Name != name {
			errs = append(errs, fmt.Errorf("%s: %w: not listed", name, ErrNotInCatalog))
			continue
		}
		if got := typeName(mf.GetType()); got != f.Type {
			errs = append(errs, fmt.Errorf("%s: %w: type %s, catalog says %s", name, ErrNotInCatalog, got, f.Type))
		}
		for _, m := range mf.GetMetric() {
			var labels []string
			for _, lp := range m.GetLabel() {
				labels = append(labels, lp.GetName())
			}
			sort.Strings(labels)
			if !slices.Equal(labels, f.Labels) {
				errs = append(errs, fmt.Errorf("%s: %w: labels %v, catalog says %v", name, ErrNotInCatalog, labels, f.Labels))
				break
			}
		}
	}
	return errors.Join(errs...)
}

func typeName(t dto.MetricType) string {
	switch t {
	case dto.MetricType_COUNTER:
		return Counter
	case dto.MetricType_GAUGE:
		return Gauge
	case dto.MetricType_HISTOGRAM, dto.MetricType_GAUGE_HISTOGRAM:
		return Histogram
	default:
		return strings.ToLower(t.String())
	}
}
