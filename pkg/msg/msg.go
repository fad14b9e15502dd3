// Package msg holds the message contracts that travel between mcpmon's roles
// over the queues: ProbeCommand (scheduler → prober), ProbeResult (prober →
// aggregator) and Verdict (aggregator → alerter), plus the identities derived
// from them: probe run IDs, deduplication IDs, incident IDs and alert keys.
//
// Every identity here is a pure function of the message's business identity
// (endpoint + slot, endpoint + window, endpoint + opening window), never of the
// time of sending or a random value, so a retry after a crash produces the same
// ID and both halves of idempotency — SQS's five-minute send dedup and the
// long-horizon ledger — recognise it.
package msg

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/mcpmon/mcpmon/pkg/jsonv"
)

// SchemaVersion is the version of every message body this build writes.
// Readers accept bodies with a schema version they know and reject newer ones
// with ErrSchema so an old consumer never half-reads a new message.
const SchemaVersion = 1

// Queue names, one queue per stage.
const (
	QueueCommands = "commands"
	QueueResults  = "results"
	QueueVerdicts = "verdicts"
)

// CommandsQueue names the commands queue the probers of region consume:
// "commands-<region>" in a deployment with a region set (--regions), and
// the single QueueCommands when region is "" (no region set: one queue,
// whichever prober takes a slot probes it). It is the one place a
// per-region queue name is made; the SQS adapter adds the prefix and
// ".fifo".
func CommandsQueue(region string) string {
	if region == "" {
		return QueueCommands
	}
	return QueueCommands + "-" + region
}

// MinuteLayout formats a verdict window in its dedup ID when windows are whole
// minutes; SecondLayout is used for sub-minute windows (demos, tests) so that
// two windows inside one minute never share a dedup ID.
const (
	MinuteLayout = "2006-01-02T1504"
	SecondLayout = "2006-01-02T150405"
)

// ErrSchema reports a message body with an unknown schema version.
var ErrSchema = fmt.Errorf("unsupported message schema version (this build reads %d)", SchemaVersion)

// Status is a single probe's outcome.
type Status string

const (
	StatusUp       Status = "up"
	StatusDegraded Status = "degraded"
	StatusDown     Status = "down"
)

// State is a verdict's state for one endpoint and window.
type State string

const (
	StateUp       State = "up"
	StateDegraded State = "degraded"
	StateDown     State = "down"
	StateNoData   State = "no_data"
	StateRegional State = "regional" // some but not enough regions down
)

// States lists every verdict state, for pre-creating metric label values.
func States() []State {
	return []State{StateUp, StateDegraded, StateDown, StateNoData, StateRegional}
}

// ProbeCommand asks a prober to probe one endpoint for one scheduled slot.
// Its JSON body is deterministic (fixed field order, no send time, no random
// ID) so the commands queue can use content-based deduplication and two
// schedulers emitting the same slot produce one message.
type ProbeCommand struct {
	Schema     int       `json:"schema"`
	EndpointID string    `json:"endpointId"`
	Slot       time.Time `json:"slot"` // UTC, whole seconds
}

// NewProbeCommand builds the command for endpointID at slot.
func NewProbeCommand(endpointID string, slot time.Time) ProbeCommand {
	return ProbeCommand{Schema: SchemaVersion, EndpointID: endpointID, Slot: slot.UTC().Truncate(time.Second)}
}

// ProbeRunID is derived from the command, so a probe retried for the same
// slot publishes under the same dedup ID.
func (c ProbeCommand) ProbeRunID() string { return ProbeRunID(c.EndpointID, c.Slot) }

// GroupID is the FIFO message group: one ordered stream per endpoint.
func (c ProbeCommand) GroupID() string { return c.EndpointID }

// Body is the deterministic JSON encoding of the command.
func (c ProbeCommand) Body() []byte { return mustJSON(c) }

// ProbeRunID returns the run ID for endpointID at slot: the first 16 bytes of
// SHA-256(endpointID "|" slot), hex encoded.
func ProbeRunID(endpointID string, slot time.Time) string {
	h := sha256.Sum256([]byte(endpointID + "|" + slot.UTC().Truncate(time.Second).Format(time.RFC3339)))
	return hex.EncodeToString(h[:16])
}

// Phase names for ProbeResult.Phases and the phase histogram.
const (
	PhaseDNS         = "dns"
	PhaseConnect     = "connect"
	PhaseTLS         = "tls"
	PhaseDiscover    = "discover" // server/discover (2026-07-28)
	PhaseInitialize  = "initialize"
	PhaseInitialized = "initialized"
	PhasePing        = "ping"
	PhaseToolsList   = "tools_list"
	PhaseClose       = "close" // the DELETE that ends a session
	PhaseTotal       = "total"
	// PhaseToolCall times the endpoint's tool check (tools/call), if it
	// has one. It and PhaseAuthToken are not in Phases(): only endpoints
	// that use them get their series, when they first happen.
	PhaseToolCall = "tool_call"
	// PhaseAuthToken times obtaining an OAuth client-credentials token,
	// when the probe had to fetch one (a cached token costs nothing).
	PhaseAuthToken = "auth_token"
)

// Phases lists every phase, for pre-creating metric label values.
func Phases() []string {
	return []string{PhaseDNS, PhaseConnect, PhaseTLS, PhaseDiscover, PhaseInitialize, PhaseInitialized, PhasePing, PhaseToolsList, PhaseClose, PhaseTotal}
}

// KnownPhase reports whether name is a phase a probe times (Phases,
// PhaseToolCall or PhaseAuthToken): the API refuses an agent's result with
// any other.
func KnownPhase(name string) bool {
	return name == PhaseToolCall || name == PhaseAuthToken || slices.Contains(Phases(), name)
}

// MaxPhase is the longest a phase can be: a probe's deadline is its
// timeout, two minutes at most, and an agent's result whose slot may be
// 15 minutes old is refused a longer one.
const MaxPhase = 15 * time.Minute

// PhaseDuration is a phase's seconds as a duration, within 0 and
// MaxPhase (NaN as 0): a record stored before phases were bounded may
// hold any float, and a plain conversion of 1e308 seconds overflows to a
// negative duration.
func PhaseDuration(secs float64) time.Duration {
	switch {
	case math.IsNaN(secs) || secs <= 0:
		return 0
	case secs >= MaxPhase.Seconds():
		return MaxPhase
	}
	return time.Duration(secs * float64(time.Second))
}

// ProbeResult is what a prober observed for one probe run.
type ProbeResult struct {
	Schema     int       `json:"schema"`
	EndpointID string    `json:"endpointId"`
	ProbeRunID string    `json:"probeRunId"`
	Slot       time.Time `json:"slot"`
	Region     string    `json:"region,omitempty"`
	StartedAt  time.Time `json:"startedAt"`
	FinishedAt time.Time `json:"finishedAt"`

	Status Status `json:"status"`
	// Class is the failure class ("ok" when up); see prober for the table.
	Class string `json:"class"`
	// Error is a human-readable reason, never containing secrets.
	Error      string `json:"error,omitempty"`
	HTTPStatus int    `json:"httpStatus,omitempty"`

	Transport       string `json:"transport,omitempty"`
	ProtocolVersion string `json:"protocolVersion,omitempty"`
	ServerName      string `json:"serverName,omitempty"`
	ServerVersion   string `json:"serverVersion,omitempty"`

	// Phases holds each phase's duration in seconds.
	Phases map[string]float64 `json:"phases,omitempty"`

	CertExpiry         *time.Time `json:"certExpiry,omitempty"`
	ToolCount          int        `json:"toolCount,omitempty"`
	CatalogFingerprint string     `json:"catalogFingerprint,omitempty"`
	// CatalogTruncated says the target listed more than the prober keeps
	// of a catalog (prober.MaxCatalogTools and its siblings): ToolCount and
	// the fingerprint cover the tools kept.
	CatalogTruncated bool `json:"catalogTruncated,omitempty"`
	// Events are notable changes seen by this probe (protocol version change,
	// tool catalog drift, certificate near expiry).
	Events []Event `json:"events,omitempty"`
	// Blind says the prober could not reach any of its canaries when it
	// published this result (prober/canary.go), blind since BlindSince:
	// the result says nothing about the endpoint, so the aggregator leaves
	// the region out of the window and decides no_data when no region is
	// left. Readers without the field treat the result as sighted.
	Blind      bool      `json:"blind,omitempty"`
	BlindSince time.Time `json:"blindSince,omitzero"`
	// Conformance is the endpoint's latest spec conformance (see
	// pkg/conformance): evaluated by this probe when it got far enough to
	// observe the server, else carried from the previous result. It never
	// changes Status.
	Conformance *Conformance `json:"conformance,omitempty"`
}

// Outcomes of one conformance rule.
const (
	ConformancePass = "pass"
	ConformanceFail = "fail"
	ConformanceNA   = "n/a" // the rule does not apply to the era, or the probe could not tell
)

// Bounds of a result's conformance: a rule list is the rule catalog's, so
// MaxConformanceRules only guards a corrupt or hostile body; details are
// scrubbed target text cut to MaxConformanceDetail bytes.
const (
	MaxConformanceRules  = 64
	MaxConformanceDetail = 200
)

// Conformance is the outcome of every conformance rule for one endpoint.
type Conformance struct {
	// Era is the protocol revision the rules were evaluated against.
	Era string `json:"era"`
	// CheckedAt is the slot of the probe that evaluated the passive rules.
	CheckedAt time.Time `json:"checkedAt"`
	// ActiveAt is the slot of the probe that last sent the extra requests
	// of the active rules; their outcomes are carried until the next one.
	ActiveAt time.Time `json:"activeAt,omitzero"`
	// ToolOrder is a digest of the listed tool names in the order listed,
	// compared by the next probe (rule tools-order-stable).
	ToolOrder string `json:"toolOrder,omitempty"`
	// ToolSet is a digest of the same names sorted: the order is compared
	// only while the set is the same.
	ToolSet string `json:"toolSet,omitempty"`
	// Results is a digest of the results the schema rules validated:
	// while it is unchanged, their outcomes are carried instead of
	// validating the same bytes again.
	Results string `json:"results,omitempty"`
	// SchemaAt is the slot of the probe that last ran the schema rules'
	// validator, over the results Results names; until SchemaRecheck
	// (pkg/conformance) after it, large results that changed do not run
	// it again.
	SchemaAt time.Time    `json:"schemaAt,omitzero"`
	Rules    []RuleResult `json:"rules"`
}

// RuleResult is one rule's outcome.
type RuleResult struct {
	ID      string `json:"id"`
	Outcome string `json:"outcome"`
	Detail  string `json:"detail,omitempty"`
}

// Rule returns the result of rule id, if c has one.
func (c *Conformance) Rule(id string) (RuleResult, bool) {
	if c == nil {
		return RuleResult{}, false
	}
	for _, r := range c.Rules {
		if r.ID == id {
			return r, true
		}
	}
	return RuleResult{}, false
}

// Event is a notable change observed by a probe.
type Event struct {
	Kind     string `json:"kind"`               // e.g. "protocol_version_changed", "catalog_changed", "cert_expiring"
	Severity string `json:"severity,omitempty"` // "breaking", "info", "warning"
	Message  string `json:"message"`
	Details  any    `json:"details,omitempty"`
	// Fingerprint, when set, identifies the change itself (say, a
	// credential's header and expiry), so every probe reporting it maps to
	// one durable event; empty: the aggregator derives it from Details.
	Fingerprint string `json:"fingerprint,omitempty"`
}

// The kinds of Event a probe reports that are not themselves durable
// change events: the aggregator turns each into model.EventKinds
// (catalog_changed into catalog_breaking, catalog_info and
// catalog_security; both version changes into version; cert_expiring is
// decided from CertExpiry). A probe's other events carry a
// model.EventKinds kind as it is.
const (
	EventVersionChanged = "protocol_version_changed"
	EventServerChanged  = "server_version_changed" // server name or version
	EventCatalogChanged = "catalog_changed"
	EventCertExpiring   = "cert_expiring"
)

// ProbeEventKinds are the kinds above.
func ProbeEventKinds() []string {
	return []string{EventVersionChanged, EventServerChanged, EventCatalogChanged, EventCertExpiring}
}

// EventSeverities are the severities an Event may have (or none).
func EventSeverities() []string { return []string{"breaking", "info", "warning", "critical"} }

// KnownEventSeverity reports whether s is empty or one of EventSeverities:
// the API refuses an agent's event with any other.
func KnownEventSeverity(s string) bool { return s == "" || slices.Contains(EventSeverities(), s) }

// DedupID is the results-queue deduplication ID: <endpointId>-<probeRunId>,
// with -<region> appended when the result has a region. The probe run ID
// is the same in every region (it is the slot's), and with a region set
// every region probes every slot: without the region the queue would keep
// one region's result of a slot and drop the others as duplicates.
func (r ProbeResult) DedupID() string {
	if r.Region == "" {
		return r.EndpointID + "-" + r.ProbeRunID
	}
	return r.EndpointID + "-" + r.ProbeRunID + "-" + r.Region
}

// GroupID is the FIFO message group: the endpoint ID.
func (r ProbeResult) GroupID() string { return r.EndpointID }

// Body is the JSON encoding of the result.
func (r ProbeResult) Body() []byte { return mustJSON(r) }

// WithoutConformance is r as the results queue and a window carry it: no
// verdict reads the conformance, and the endpoint's latest result, stored
// before the result is published (by the prober, or by the API for an
// agent), is its one home. The rule list is most of a result's bytes, and
// a window's results and the queue's messages are written, read and
// deleted once per probe.
func (r ProbeResult) WithoutConformance() ProbeResult {
	r.Conformance = nil
	return r
}

// Verdict is the aggregator's decision for one endpoint and one window.
type Verdict struct {
	Schema     int       `json:"schema"`
	EndpointID string    `json:"endpointId"`
	Window     time.Time `json:"window"` // window start, UTC
	WindowSecs int       `json:"windowSeconds"`
	State      State     `json:"state"`
	// Class is the failure class that decided the verdict ("ok" when up).
	Class  string `json:"class,omitempty"`
	Reason string `json:"reason,omitempty"`
	// Results is how many probe results the verdict folds.
	Results int `json:"results"`
	// FailingRegions names regions that reported down (for down and regional).
	FailingRegions []string `json:"failingRegions,omitempty"`
	// RegionStates is each due region's state in the window (up, degraded,
	// down, or no_data for a region that was due but sent nothing), in a
	// deployment with a region set (--regions); empty without one.
	RegionStates map[string]State `json:"regionStates,omitempty"`
	// FirstProbeAt is the earliest probe start folded in: the pipeline-delay
	// metrics measure from it.
	FirstProbeAt time.Time `json:"firstProbeAt,omitzero"`
	// EmittedAt is when the aggregator published the verdict.
	EmittedAt time.Time `json:"emittedAt,omitzero"`
	// Latency and Maintenance feed the store's uptime and latency rollups
	// (pkg/store rollups.go), which RecordVerdict folds in its own
	// transaction. Both are optional (readers of schema 1 ignore them).
	Latency *VerdictLatency `json:"latency,omitempty"`
	// Maintenance: a maintenance window matching the endpoint was active at
	// the window's start when the aggregator decided it.
	Maintenance bool `json:"maintenance,omitempty"`
}

// VerdictLatency holds the phase timings, in seconds, of the window's
// results that succeeded (up or degraded): one value per result that
// reported the phase. A failed probe's timings measure how fast it failed,
// not the server's latency, so they are left out.
type VerdictLatency struct {
	Total      []float64 `json:"total,omitempty"`
	Initialize []float64 `json:"initialize,omitempty"`
}

// DedupID is the verdicts-queue deduplication ID: verdict-<endpointId>-<minute>
// with the minute as 2006-01-02T1504 in UTC (seconds appended for sub-minute
// windows).
func (v Verdict) DedupID() string { return VerdictDedupID(v.EndpointID, v.Window, v.WindowSecs) }

// GroupID is the FIFO message group: the endpoint ID.
func (v Verdict) GroupID() string { return v.EndpointID }

// Body is the JSON encoding of the verdict.
func (v Verdict) Body() []byte { return mustJSON(v) }

// VerdictDedupID formats verdict-<endpointId>-<window>.
func VerdictDedupID(endpointID string, window time.Time, windowSecs int) string {
	layout := MinuteLayout
	if windowSecs%60 != 0 {
		layout = SecondLayout
	}
	return "verdict-" + endpointID + "-" + window.UTC().Format(layout)
}

// IncidentID is stable for an endpoint and the window that opened the
// incident: <endpointId>-<20060102T150405Z>.
func IncidentID(endpointID string, openingWindow time.Time) string {
	return endpointID + "-" + openingWindow.UTC().Format("20060102T150405Z")
}

// RegionalIncidentID is the ID of a regional incident (some regions,
// fewer than the quorum, down): <endpointId>-regional-<20060102T150405Z>.
// It is a space of its own, so the regional and the global incident of one
// outage never share an ID, an alert key or a ledger key.
func RegionalIncidentID(endpointID string, openingWindow time.Time) string {
	return endpointID + "-regional-" + openingWindow.UTC().Format("20060102T150405Z")
}

// AlertKey is the once-only key of an incident's alert: alert-<endpointId>-<incidentId>.
// The ledger extends it with the event kind and the sink (see LedgerKey).
func AlertKey(endpointID, incidentID string) string {
	return "alert-" + endpointID + "-" + incidentID
}

// LedgerKey is the idempotency-ledger key of one notification: the alert key,
// the event kind (open, resolve, reminder-N) and the sink name.
func LedgerKey(endpointID, incidentID, kind, sink string) string {
	return AlertKey(endpointID, incidentID) + ":" + kind + ":" + sink
}

// BlindSpell is one spell of a prober's blindness in a region: from Since,
// the first failed canary round of the run of failures that made it
// blind, to Until, the round that made it sighted again (zero while it
// lasts). It is what the operator is told, once when it starts and once
// when it ends.
type BlindSpell struct {
	Region string
	Since  time.Time
	Until  time.Time
}

// ID identifies the spell: blind-<region>-<20060102T150405Z of Since>
// ("_" for the empty region). Notifications about the spell carry it as
// their incident ID, so the "blind" and the "recovered" notice of one
// spell pair up at sinks with native dedup.
func (s BlindSpell) ID() string {
	region := s.Region
	if region == "" {
		region = "_"
	}
	return "blind-" + region + "-" + s.Since.UTC().Format("20060102T150405Z")
}

// LedgerKey is the once-only key of the spell's notice of kind (open:
// blind, resolve: recovered) to sink.
func (s BlindSpell) LedgerKey(kind, sink string) string {
	return s.ID() + ":" + kind + ":" + sink
}

// GroupID names one group of incidents (alerter/group.go) across its open
// and resolve: group-<tenant>-<groupHash>-<start as Unix seconds>, where
// groupHash is a digest of the values the members share.
func GroupID(tenant, groupHash string, start time.Time) string {
	return "group-" + tenant + "-" + groupHash + "-" + strconv.FormatInt(start.Unix(), 10)
}

// GroupLedgerKey is the idempotency-ledger key of one grouped
// notification: the group ID, the kind (open, resolve) and the sink name.
func GroupLedgerKey(groupID, kind, sink string) string {
	return groupID + ":" + kind + ":" + sink
}

// Decode unmarshals a message body into v and checks its schema version.
func Decode(body []byte, v interface{ schema() int }) error {
	if err := jsonv.Unmarshal(body, v); err != nil {
		return fmt.Errorf("decode message body: %w", err)
	}
	if s := v.schema(); s < 1 || s > SchemaVersion {
		return fmt.Errorf("%w: got %d", ErrSchema, s)
	}
	return nil
}

func (c *ProbeCommand) schema() int { return c.Schema }
func (r *ProbeResult) schema() int  { return r.Schema }
func (v *Verdict) schema() int      { return v.Schema }

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		// Only reachable with an unmarshalable Details value: a programming error.
		panic(fmt.Sprintf("msg: encode %T: %v", v, err))
	}
	return b
}
