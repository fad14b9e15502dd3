package status

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/msg"
)

// Days is how many daily bars a page shows.
const Days = 90

// A page lists the spans of maintenance that start within ScheduledAhead,
// at most ScheduledSpans of them.
const (
	ScheduledAhead = 7 * 24 * time.Hour
	ScheduledSpans = 5
)

// StateMaintenance is the state of an endpoint under an active
// maintenance window: planned, so neither up nor an outage.
const StateMaintenance = "maintenance"

// Input is everything a page is built from: the store's view of one public
// endpoint. Build copies only public fields out of it.
type Input struct {
	Endpoint model.Endpoint
	// Daily are the endpoint's daily rollups covering the last Days days.
	Daily []model.Rollup
	// Incidents are the endpoint's incidents, any order.
	Incidents []model.Incident
	// Last is the last verdict (HasLast false before the first).
	Last    msg.Verdict
	HasLast bool
	// Latest is the latest probe result (HasLatest false before the first).
	Latest    msg.ProbeResult
	HasLatest bool
	// ToolsChanged is when the tool catalog last changed, if known.
	ToolsChanged time.Time
	// Maintenance are the endpoint's tenant's maintenance windows. Only
	// when they put the endpoint in maintenance reaches the page: never a
	// window's name (owners write internal notes there) or its targets.
	Maintenance []model.Maintenance
	Now         time.Time
}

// MoreIncidents counts the incidents of the last Days days the page does
// not list.
func (p Page) MoreIncidents() int { return p.Incidents90 - len(p.Incidents) }

// Page is the public model of one endpoint: what the page, the JSON and the
// badge show, and nothing else. It holds no URL, header, address, error
// text or internal ID: only the slug names the endpoint.
type Page struct {
	Slug  string
	Name  string
	State string // up, degraded, down, regional, no_data, paused, pending, maintenance
	// StateWord and Sentence say the state in words (never colour alone).
	StateWord string
	Sentence  string
	// Since is the window of the last verdict (zero before the first).
	Since time.Time
	// MaintenanceUntil is when the maintenance the endpoint is under
	// ends (model.MaintenanceUntil), set with State "maintenance".
	MaintenanceUntil time.Time
	// Scheduled are the endpoint's spans of maintenance that start
	// within ScheduledAhead, soonest first, at most ScheduledSpans.
	Scheduled []model.MaintenanceSpan

	Uptime30, Uptime90 Ratio
	P50, P95           time.Duration // zero: no successful probe in 30 days

	ToolCount    int
	HasTools     bool
	ToolsChanged time.Time
	// Conformance is the spec-conformance line, nil unless the owner
	// opted in (model.Endpoint.PublicConformance).
	Conformance *ConformanceLine

	Bars []Bar
	// Incidents are the newest (by start) of the last Days days'
	// incidents, at most PageIncidents; Incidents90 counts them all.
	Incidents   []IncidentRow
	Incidents90 int
	// Entries are the feed's entries (FeedEntriesOf), made from every
	// incident of the last Days days before the cut, so an old
	// incident's late resolution or update still reaches the feed.
	Entries   []FeedEntry
	Regions   []RegionRow
	Generated time.Time
	// IndexLink: the deployment serves /status (--public-index), so the
	// page links to it.
	IndexLink bool

	id string // the endpoint's ID: the cache's own bookkeeping, never rendered
	// turns is when the page's state turns by the clock alone (its
	// maintenance ends, or the next span starts); zero: never.
	turns time.Time
}

// Ratio is an uptime that may be unknown.
type Ratio struct {
	Measured bool
	Value    float64 // in [0, 1]
}

// Percent formats the ratio like 99.95%, or "no data".
func (r Ratio) Percent() string {
	if !r.Measured {
		return "no data"
	}
	// Floor, not round: 99.996% must not read as 100% while there was downtime.
	p := math.Floor(r.Value*10000) / 100
	if p == 100 {
		return "100%"
	}
	return fmt.Sprintf("%.2f%%", p)
}

// Bar is one UTC day.
type Bar struct {
	Date        string // 2006-01-02
	Level       string // up, degraded, down, none: the CSS class
	Word        string // the level in words
	DownMinutes int64
	Label       string // the hover and focus text
}

// IncidentRow is one incident of the last Days days.
type IncidentRow struct {
	Start    time.Time
	End      time.Time // zero while ongoing
	Ongoing  bool
	Duration time.Duration
	Cause    string // a fixed phrase per failure class, never the raw reason
	// Key names the incident in feed entry IDs: PublicKey of its ID, which
	// holds the endpoint's internal ID.
	Key string
	// Updates are the owner's updates, newest first: the incident's
	// public timeline.
	Updates []UpdateRow
}

// UpdateRow is one owner's update on the public timeline: the owner wrote
// it for readers of this page, so its message is shown as written (the
// templates escape it); the key that posted it is not shown.
type UpdateRow struct {
	At      time.Time
	Status  string // investigating, identified, monitoring, resolved
	Word    string // the status in words
	Message string
}

// updateWords are the update statuses as the page writes them; an unknown
// one (a record from a newer version) reads as "update".
var updateWords = map[model.UpdateStatus]string{
	model.UpdateInvestigating: "Investigating", model.UpdateIdentified: "Identified",
	model.UpdateMonitoring: "Monitoring", model.UpdateResolved: "Resolved",
}

// DurationText is the incident's duration in words.
func (i IncidentRow) DurationText() string { return HumanDuration(i.Duration) }

// RegionRow is one probing region's state.
type RegionRow struct {
	Region string
	Word   string
	Up     bool
}

// stateWords are the states in words: the badge message and the page's
// state label.
var stateWords = map[string]string{
	string(msg.StateUp):       "operational",
	string(msg.StateDegraded): "degraded",
	string(msg.StateDown):     "down",
	string(msg.StateRegional): "partial outage",
	string(msg.StateNoData):   "no data",
	"paused":                  "paused",
	"pending":                 "pending",
	StateMaintenance:          "under maintenance",
}

// causes maps a failure class to public words. Classes come from a fixed
// vocabulary (prober); an unknown one reads as "outage" rather than being
// echoed, so nothing a target sent can reach the page through it.
var causes = map[string]string{
	"timeout": "timed out", "refused": "connection refused", "dns": "DNS failure", "tls": "TLS failure",
	"network_error": "network error", "http_5xx": "server error", "blocked_target": "target blocked", "rate_limited": "rate limited",
	"auth_rejected": "authentication rejected", "auth_misconfigured": "authentication misconfigured",
	"forbidden": "access forbidden", "not_found": "MCP endpoint not found", "not_mcp": "not an MCP server",
	"protocol_error": "protocol error", "rpc_error": "initialize failed", "version_mismatch": "protocol version mismatch",
	"session_broken": "session broken", "sse_deaf": "SSE stream not answering",
	"tool_failed": "tool check failed", "auth_token_failed": "authentication token unavailable",
}

// Build is the pure page builder.
func Build(in Input) Page {
	e := in.Endpoint
	p := Page{Slug: e.Slug, Name: e.Name, Generated: in.Now.UTC()}
	ref := model.EndpointRef{ID: e.ID, Tenant: e.Tenant, Labels: e.Labels}
	until, inMaintenance := model.MaintenanceUntil(in.Maintenance, ref, in.Now)
	for _, sp := range model.MaintenanceAhead(in.Maintenance, ref, in.Now, in.Now.Add(ScheduledAhead), ScheduledSpans) {
		p.Scheduled = append(p.Scheduled, model.MaintenanceSpan{Start: sp.Start.UTC(), End: sp.End.UTC()})
	}
	switch {
	case inMaintenance:
		p.turns = until
	case len(p.Scheduled) > 0:
		p.turns = p.Scheduled[0].Start
	}
	switch {
	case e.Paused:
		p.State = "paused"
	case inMaintenance:
		// Planned: whatever the probes see, readers are told of the
		// maintenance, not of an outage.
		p.State, p.MaintenanceUntil = StateMaintenance, until.UTC()
		if in.HasLast {
			p.Since = in.Last.Window.UTC()
		}
	case !in.HasLast:
		p.State = "pending"
	default:
		p.State = string(in.Last.State)
		p.Since = in.Last.Window.UTC()
	}
	if _, ok := stateWords[p.State]; !ok {
		p.State = string(msg.StateNoData)
	}
	p.StateWord = stateWords[p.State]
	p.Sentence = sentence(p.Name, p.State)
	if p.State == StateMaintenance {
		p.Sentence = p.Name + " is under maintenance until " + p.MaintenanceUntil.Format(minuteUTC) + "."
	}

	today := in.Now.UTC().Truncate(model.Daily)
	to := today.Add(model.Daily)
	from90 := to.Add(-Days * model.Daily)
	from30 := to.Add(-30 * model.Daily)
	p.Uptime90 = ratio(model.Uptime(in.Daily, from90, to))
	p.Uptime30 = ratio(model.Uptime(in.Daily, from30, to))
	if total, _, err := model.MergeLatency(in.Daily, from30, to); err == nil && !total.IsEmpty() {
		if qs, err := total.GetValuesAtQuantiles([]float64{0.5, 0.95}); err == nil {
			p.P50 = secs(qs[0])
			p.P95 = secs(qs[1])
		}
	}
	if in.HasLatest && in.Latest.Status == msg.StatusUp {
		p.ToolCount, p.HasTools = in.Latest.ToolCount, true
	}
	p.ToolsChanged = in.ToolsChanged
	if e.PublicConformance {
		var c *msg.Conformance
		if in.HasLatest {
			c = in.Latest.Conformance
		}
		line := conformanceLine(c)
		p.Conformance = &line
	}

	p.Bars = make([]Bar, 0, Days)
	for d := from90; d.Before(to); d = d.Add(model.Daily) {
		p.Bars = append(p.Bars, bar(d, model.Uptime(in.Daily, d, d.Add(model.Daily))))
	}

	for _, inc := range in.Incidents {
		row, ok := incidentRow(inc, from90, in.Now)
		if ok {
			p.Incidents = append(p.Incidents, row)
		}
	}
	slices.SortFunc(p.Incidents, func(a, b IncidentRow) int { return b.Start.Compare(a.Start) })
	// Every row counts and feeds the feed; the page, its JSON and the
	// cache keep the newest PageIncidents: a flapping target's incidents,
	// each with up to 100 owner's updates of 2000 bytes, made pages of
	// tens of megabytes (2,000 incidents of 20 updates: 82 MB).
	p.Incidents90, p.Entries = len(p.Incidents), newestEntries(incidentEntries(p.Name, p.Slug, p.Incidents))
	if len(p.Incidents) > PageIncidents {
		p.Incidents = slices.Clone(p.Incidents[:PageIncidents])
	}

	p.Regions = regions(in)
	return p
}

// minuteUTC is how the page writes a time to the minute.
const minuteUTC = "2006-01-02 15:04 UTC"

func sentence(name, state string) string {
	switch state {
	case string(msg.StateUp):
		return name + " is operational."
	case string(msg.StateDegraded):
		return name + " is up but responding slowly."
	case string(msg.StateDown):
		return name + " is down."
	case string(msg.StateRegional):
		return name + " is down in some regions."
	case "paused":
		return "Monitoring of " + name + " is paused."
	case "pending":
		return name + " has not been checked yet."
	}
	return "There is no recent data for " + name + "."
}

func ratio(r model.UptimeReport) Ratio { return Ratio{Measured: r.Measured, Value: r.Ratio} }

func secs(s float64) time.Duration { return msg.PhaseDuration(s) }

func bar(day time.Time, r model.UptimeReport) Bar {
	b := Bar{Date: day.Format(time.DateOnly), DownMinutes: (r.Down + 59) / 60}
	switch {
	case !r.Measured:
		b.Level, b.Word = "none", "no data"
	case r.Down > 0:
		b.Level, b.Word = "down", "outage"
	case r.Degraded > 0 || r.Regional > 0:
		b.Level, b.Word = "degraded", "degraded"
	default:
		b.Level, b.Word = "up", "operational"
	}
	switch {
	case !r.Measured:
		b.Label = b.Date + ": no data"
	case b.DownMinutes == 0:
		b.Label = b.Date + ": " + b.Word + ", no downtime"
	case b.DownMinutes == 1:
		b.Label = b.Date + ": " + b.Word + ", 1 minute down"
	default:
		b.Label = fmt.Sprintf("%s: %s, %d minutes down", b.Date, b.Word, b.DownMinutes)
	}
	return b
}

// incidentRow is inc as a public row, if it began within the page's range.
func incidentRow(inc model.Incident, from, now time.Time) (IncidentRow, bool) {
	start := inc.Began()
	if start.Before(from) && inc.ResolvedAt != nil && inc.ResolvedAt.Before(from) {
		return IncidentRow{}, false
	}
	row := IncidentRow{Start: start.UTC(), Cause: "outage", Key: PublicKey(inc.ID)}
	if c, ok := causes[inc.Class]; ok {
		row.Cause = c
	}
	switch {
	case inc.ResolvedAt != nil:
		row.End = inc.ResolvedAt.UTC()
	case inc.State == model.IncidentResolved && inc.ResolvedWindow != nil:
		row.End = inc.ResolvedWindow.UTC()
	default:
		row.Ongoing = true
	}
	end := row.End
	if row.Ongoing {
		end = now
	}
	row.Duration = max(end.Sub(row.Start), 0)
	for _, u := range inc.UpdatesNewestFirst() {
		ur := UpdateRow{At: u.At.UTC(), Status: string(u.Status), Word: updateWords[u.Status], Message: u.Message}
		if ur.Word == "" {
			ur.Status, ur.Word = "update", "Update"
		}
		row.Updates = append(row.Updates, ur)
	}
	return row, true
}

// regions is the per-region state when several regions probe: the last
// verdict names the regions that failed; the latest result names one that
// answered. Shown only when more than one region is known.
func regions(in Input) []RegionRow {
	if !in.HasLast {
		return nil
	}
	seen := map[string]bool{}
	var out []RegionRow
	for _, r := range in.Last.FailingRegions {
		if r != "" && !seen[r] {
			seen[r] = true
			out = append(out, RegionRow{Region: r, Word: "not reachable"})
		}
	}
	if in.HasLatest && in.Latest.Region != "" && !seen[in.Latest.Region] && in.Latest.Status == msg.StatusUp {
		out = append(out, RegionRow{Region: in.Latest.Region, Word: "operational", Up: true})
	}
	if len(out) < 2 {
		return nil
	}
	slices.SortFunc(out, func(a, b RegionRow) int {
		if a.Region < b.Region {
			return -1
		}
		return 1
	})
	return out
}

// HumanDuration is d in words at minute precision ("3 h 5 min", "42 s").
func HumanDuration(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%d s", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%d min", int(d.Minutes()))
	case d < 24*time.Hour:
		return fmt.Sprintf("%d h %d min", int(d.Hours()), int(d.Minutes())%60)
	}
	return fmt.Sprintf("%d d %d h", int(d.Hours())/24, int(d.Hours())%24)
}
