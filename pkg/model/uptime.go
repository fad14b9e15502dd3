// Rollups: per-endpoint hourly and daily summaries of the verdict history,
// folded by RecordVerdict in the transaction (bolt) or script (Redis) that
// applies the verdict, and the one definition of uptime computed over them.
//
// Why inside RecordVerdict: RecordVerdict applies a window at most once per
// endpoint (only a window after the last one applies), so a rollup folded
// only when it applies counts each window exactly once whatever happens
// around it — a redelivered or replayed verdict, a second aggregator replica
// racing on the same window, the aggregator re-deciding a window after a
// crash between publish and record. No second record of "windows folded"
// is needed, and the rollups can never disagree with the verdict history
// they summarise (STYLE habit 14).
//
// What a rollup counts, and the definitions (the README's "Uptime and
// latency" table says the same):
//   - A verdict's WindowSecs seconds go, whole, to the bucket (hour and day,
//     UTC) holding its window's start, under its state; a verdict decided
//     while a maintenance window of its endpoint was active
//     (msg.Verdict.Maintenance) goes to Maintenance instead, whatever its
//     state.
//   - Latency: the total and initialize phase seconds of the window's
//     successful results (msg.Verdict.Latency), clamped to
//     [MinLatency, MaxLatency], into a DDSketch with 1% relative accuracy
//     (github.com/DataDog/sketches-go); maintenance windows are left out of
//     latency as they are of uptime.
//   - Uptime = available / (available + down) where available = up +
//     degraded + regional. Degraded and regional count as available (the
//     server answered, slowly, or a quorum of regions reached it) and are
//     reported separately; no_data and maintenance count in neither. A
//     range with no available and no down second has no uptime (Measured
//     false), not 100%.
//   - Incidents are the alerter's, not the aggregator's: they are counted
//     per bucket at read time from the incident history (kept forever, and
//     indexed by endpoint), by the bucket holding the incident's opening
//     window.
package model

import (
	"fmt"
	"math"
	"time"

	"github.com/DataDog/sketches-go/ddsketch"
	"github.com/DataDog/sketches-go/ddsketch/mapping"
	sketchstore "github.com/DataDog/sketches-go/ddsketch/store"

	"github.com/mcpmon/mcpmon/pkg/msg"
)

// Rollup resolutions and how many buckets of each an endpoint keeps: the
// bucket holding now and the ones before it, so "7d" is always 168 whole or
// current hourly buckets and "90d" 90 daily ones.
const (
	Hourly = time.Hour
	Daily  = 24 * time.Hour

	HourlyBuckets = 7 * 24
	DailyBuckets  = 400
)

// Latency sketch bounds: values are clamped into [MinLatency, MaxLatency]
// seconds, so a sketch has at most SketchMaxBins bins per phase whatever
// the probes report (1% relative accuracy: ln(Max/Min)/ln(1.0202) ≈ 870).
const (
	SketchRelativeAccuracy = 0.01
	MinLatency             = 1e-4
	MaxLatency             = 3600.0
)

// SketchMapping is the index mapping of every latency sketch. Both
// backends index with it (Redis increments bins by index inside its Lua
// script, which cannot decode a sketch) and read sketches back with it.
var SketchMapping = mustMapping()

func mustMapping() mapping.IndexMapping {
	m, err := mapping.NewLogarithmicMapping(SketchRelativeAccuracy)
	if err != nil {
		panic(err) // a constant accuracy in (0, 1)
	}
	return m
}

// SketchMaxBins bounds the bins of one latency sketch.
var SketchMaxBins = SketchMapping.Index(MaxLatency) - SketchMapping.Index(MinLatency) + 1

// NewSketch returns an empty latency sketch.
func NewSketch() *ddsketch.DDSketch {
	return ddsketch.NewDDSketch(SketchMapping, sketchstore.NewDenseStore(), sketchstore.NewDenseStore())
}

// DecodeSketch reads a sketch encoded with EncodeSketch (nil or empty: an
// empty sketch).
func DecodeSketch(b []byte) (*ddsketch.DDSketch, error) {
	if len(b) == 0 {
		return NewSketch(), nil
	}
	s, err := ddsketch.DecodeDDSketch(b, sketchstore.DenseStoreConstructor, SketchMapping)
	if err != nil {
		return nil, fmt.Errorf("decode latency sketch: %w", err)
	}
	return s, nil
}

// EncodeSketch is the sketch's binary encoding without its mapping
// (SketchMapping is implied); nil for an empty sketch.
func EncodeSketch(s *ddsketch.DDSketch) []byte {
	if s == nil || s.IsEmpty() {
		return nil
	}
	var b []byte
	s.Encode(&b, true)
	return b
}

// SketchIndex is the bin of one latency value (clamped).
func SketchIndex(seconds float64) int { return SketchMapping.Index(ClampLatency(seconds)) }

// ClampLatency clamps a phase duration into [MinLatency, MaxLatency].
func ClampLatency(seconds float64) float64 {
	if math.IsNaN(seconds) {
		return MinLatency
	}
	return min(max(seconds, MinLatency), MaxLatency)
}

// Rollup is one endpoint's summary of one hour or one UTC day. Seconds are
// verdict window seconds by state (see the file comment for what goes
// where).
type Rollup struct {
	Start       time.Time     `json:"start"`
	Size        time.Duration `json:"-"`
	Up          int64         `json:"upSeconds"`
	Degraded    int64         `json:"degradedSeconds"`
	Regional    int64         `json:"regionalSeconds"`
	Down        int64         `json:"downSeconds"`
	NoData      int64         `json:"noDataSeconds"`
	Maintenance int64         `json:"maintenanceSeconds"`
	// Verdicts is how many verdicts were folded in.
	Verdicts int64 `json:"verdicts"`
	// Total and Initialize are the latency sketches (never nil once read
	// from a store).
	Total      *ddsketch.DDSketch `json:"-"`
	Initialize *ddsketch.DDSketch `json:"-"`
}

// RollupBuckets returns the starts of the hourly and daily buckets that
// hold a verdict window.
func RollupBuckets(window time.Time) (hour, day time.Time) {
	w := window.UTC()
	return w.Truncate(Hourly), w.Truncate(Daily)
}

// RollupKept reports whether the bucket of size starting at start is still
// kept at now (the newest HourlyBuckets or DailyBuckets up to now's).
func RollupKept(start time.Time, size time.Duration, now time.Time) bool {
	return start.After(RollupOldest(size, now).Add(-size))
}

// RollupOldest is the start of the oldest bucket of size kept at now.
func RollupOldest(size time.Duration, now time.Time) time.Time {
	n := HourlyBuckets
	if size == Daily {
		n = DailyBuckets
	}
	return now.UTC().Truncate(size).Add(-time.Duration(n-1) * size)
}

// VerdictField names the rollup counter v's seconds go to: its state, or
// maintenance.
func VerdictField(v msg.Verdict) string {
	if v.Maintenance {
		return "maintenance"
	}
	switch v.State {
	case msg.StateUp, msg.StateDegraded, msg.StateDown, msg.StateRegional:
		return string(v.State)
	}
	return string(msg.StateNoData)
}

// VerdictLatencies returns the total and initialize seconds v adds to the
// sketches (none for a maintenance window).
func VerdictLatencies(v msg.Verdict) (total, initialize []float64) {
	if v.Maintenance || v.Latency == nil {
		return nil, nil
	}
	return v.Latency.Total, v.Latency.Initialize
}

// FoldVerdict adds v to r: the fold both backends apply (Redis its script's
// equivalent, with the same fields and SketchIndex bins).
func FoldVerdict(r *Rollup, v msg.Verdict) error {
	secs := int64(v.WindowSecs)
	switch VerdictField(v) {
	case "maintenance":
		r.Maintenance += secs
	case string(msg.StateUp):
		r.Up += secs
	case string(msg.StateDegraded):
		r.Degraded += secs
	case string(msg.StateRegional):
		r.Regional += secs
	case string(msg.StateDown):
		r.Down += secs
	default:
		r.NoData += secs
	}
	r.Verdicts++
	if r.Total == nil {
		r.Total = NewSketch()
	}
	if r.Initialize == nil {
		r.Initialize = NewSketch()
	}
	total, initialize := VerdictLatencies(v)
	for _, x := range total {
		if err := r.Total.Add(ClampLatency(x)); err != nil {
			return err
		}
	}
	for _, x := range initialize {
		if err := r.Initialize.Add(ClampLatency(x)); err != nil {
			return err
		}
	}
	return nil
}

// UptimeReport is the uptime of one range (see Uptime).
type UptimeReport struct {
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

// Available is the seconds that count as up.
func (r UptimeReport) Available() int64 { return r.Up + r.Degraded + r.Regional }

// Uptime is the definition of uptime: it sums the buckets whose start is in
// [from, to) and divides the available seconds (up, degraded, regional) by
// those plus the down seconds. no_data and maintenance seconds are
// reported but count in neither.
func Uptime(buckets []Rollup, from, to time.Time) UptimeReport {
	rep := UptimeReport{From: from.UTC(), To: to.UTC()}
	for _, b := range buckets {
		if b.Start.Before(from) || !b.Start.Before(to) {
			continue
		}
		rep.Up += b.Up
		rep.Degraded += b.Degraded
		rep.Regional += b.Regional
		rep.Down += b.Down
		rep.NoData += b.NoData
		rep.Maintenance += b.Maintenance
	}
	if den := rep.Available() + rep.Down; den > 0 {
		rep.Measured = true
		rep.Ratio = float64(rep.Available()) / float64(den)
	}
	return rep
}

// MergeLatency merges the sketches of the buckets whose start is in
// [from, to).
func MergeLatency(buckets []Rollup, from, to time.Time) (total, initialize *ddsketch.DDSketch, err error) {
	total, initialize = NewSketch(), NewSketch()
	for _, b := range buckets {
		if b.Start.Before(from) || !b.Start.Before(to) {
			continue
		}
		if b.Total != nil {
			if err := total.MergeWith(b.Total); err != nil {
				return nil, nil, err
			}
		}
		if b.Initialize != nil {
			if err := initialize.MergeWith(b.Initialize); err != nil {
				return nil, nil, err
			}
		}
	}
	return total, initialize, nil
}

// RangeBounds returns the buckets a named range covers at now: "24h" and
// "7d" are the 24 and 168 hourly buckets ending with the one holding now,
// "30d" and "90d" the 30 and 90 UTC days ending with today. The newest
// bucket is partial: it holds the windows decided so far, and windows not
// yet decided count in neither side of the ratio. ok is false for an
// unknown name.
func RangeBounds(name string, now time.Time) (from, to time.Time, size time.Duration, ok bool) {
	var n int
	switch name {
	case "24h":
		size, n = Hourly, 24
	case "7d":
		size, n = Hourly, HourlyBuckets
	case "30d":
		size, n = Daily, 30
	case "90d":
		size, n = Daily, 90
	default:
		return time.Time{}, time.Time{}, 0, false
	}
	to = now.UTC().Truncate(size).Add(size)
	return to.Add(-time.Duration(n) * size), to, size, true
}

// CustomBounds rounds [from, to) outward to whole buckets: hourly ones
// when the rounded range starts within the hourly retention at now, daily
// ones otherwise.
func CustomBounds(from, to, now time.Time) (time.Time, time.Time, time.Duration) {
	size := Hourly
	if from.UTC().Truncate(Hourly).Before(RollupOldest(Hourly, now)) {
		size = Daily
	}
	f := from.UTC().Truncate(size)
	t := to.UTC().Truncate(size)
	if t.Before(to) {
		t = t.Add(size)
	}
	return f, t, size
}

// SketchFromBins builds a latency sketch from bin counts indexed by
// SketchIndex (how the Redis backend keeps them).
func SketchFromBins(bins map[int]float64) *ddsketch.DDSketch {
	pos := sketchstore.NewDenseStore()
	for idx, n := range bins {
		pos.AddWithCount(idx, n)
	}
	return ddsketch.NewDDSketch(SketchMapping, pos, sketchstore.NewDenseStore())
}
