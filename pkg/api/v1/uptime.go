package apiv1

import "time"

// LatencyView is one phase's latency percentiles over a range, in seconds
// (DDSketch, 1% relative accuracy); absent when no probe succeeded.
type LatencyView struct {
	Count float64 `json:"count"`
	P50   float64 `json:"p50"`
	P95   float64 `json:"p95"`
	P99   float64 `json:"p99"`
}

// UptimeView is GET /v1/endpoints/{id}/uptime.
type UptimeView struct {
	EndpointID string           `json:"endpointId"`
	Range      string           `json:"range"`
	Resolution string           `json:"resolution"` // hour | day
	Uptime     UptimeReportView `json:"uptime"`
	// Incidents opened by a window in the range.
	Incidents int                    `json:"incidents"`
	Latency   map[string]LatencyView `json:"latency"`
}

// DayView is one bar of GET /v1/endpoints/{id}/history.
type DayView struct {
	Date      string           `json:"date"` // UTC, 2006-01-02
	Uptime    UptimeReportView `json:"uptime"`
	Incidents int              `json:"incidents"`
}

// UptimeReportView is the uptime of one range [from, to): the seconds in
// each state and the ratio of the available ones (up, degraded, regional)
// to those plus the down ones. no_data and maintenance seconds count in
// neither.
type UptimeReportView struct {
	From        time.Time `json:"from"`
	To          time.Time `json:"to"`
	Up          int64     `json:"upSeconds"`
	Degraded    int64     `json:"degradedSeconds"`
	Regional    int64     `json:"regionalSeconds"`
	Down        int64     `json:"downSeconds"`
	NoData      int64     `json:"noDataSeconds"`
	Maintenance int64     `json:"maintenanceSeconds"`
	// Measured is false when the range has no available and no down
	// second: its uptime is unknown, and Ratio is 0.
	Measured bool `json:"measured"`
	// Ratio is (Up+Degraded+Regional) / (Up+Degraded+Regional+Down), in
	// [0, 1].
	Ratio float64 `json:"ratio"`
}
