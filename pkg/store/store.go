// Package store persists mcpmon's durable state (the pkg/model types) and
// its long-horizon idempotency ledger: registered endpoints, each endpoint's latest probe result
// and verdict history, the aggregator's open windows, incidents with the
// alerter's per-endpoint tracker, the claim-before-effect ledger that makes
// "one alert per incident per sink" hold beyond SQS's five-minute dedup window,
// and each incident's delivery records (what each sink was told, and how).
//
// Two implementations satisfy Store: the embedded one on bbolt in the data dir
// (pkg/store/bolt) and Redis (pkg/store/redis). The conformance suite in
// pkg/store/storetest runs against both. Consumers declare the narrow
// interface they need next to their own code; Store is the union that the
// implementations and the suite share. The rules both backends apply the
// same way (endpoint versions, the incident filter, result order, the
// delivery merge) are written once here, in rules.go.
package store

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/msg"
)

// Sentinel errors.
var (
	// ErrConflict: a compare-and-set lost to a concurrent writer; reload and retry.
	ErrConflict = errors.New("conflict: the record changed since it was read")
	// ErrWindowDecided: a result for a window whose verdict is already out.
	ErrWindowDecided = errors.New("window already decided")
	// ErrUnavailable wraps backend connectivity failures so consumers can
	// leave messages in the queue and report not-ready.
	ErrUnavailable = errors.New("store unavailable")
	// ErrQuota: a create would take a tenant past its limit.
	ErrQuota = errors.New("tenant quota reached")
)

// EndpointPage is one page of ListEndpointsPage.
type EndpointPage struct {
	Endpoints []model.Endpoint
	// Next is the cursor of the next page (the last ID this one covered);
	// empty on the last page.
	Next string
}

// VerdictRecord is a stored verdict.
type VerdictRecord = msg.Verdict

// WindowRef names one endpoint's aggregation window.
type WindowRef struct {
	EndpointID string    `json:"endpointId"`
	Window     time.Time `json:"window"`
}

// IncidentFilter selects incidents; zero fields match all.
type IncidentFilter struct {
	// Tenant keeps the tenant's incidents only (TenantOf(Incident.Tenant)).
	Tenant     string
	EndpointID string
	State      model.IncidentState
	Limit      int
	// After, when set, keeps the incidents that come after it in
	// ListIncidents order (an earlier OpenedWindow, or the same one and a
	// lower ID): the cursor of a page that ended there.
	After *IncidentKey
}

// IncidentKey is an incident's place in ListIncidents order.
type IncidentKey struct {
	OpenedWindow time.Time
	ID           string
}

// ClaimState is the outcome of a ledger claim.
type ClaimState int

const (
	// ClaimAcquired: the caller now holds the key and must perform the effect,
	// then Complete it (or Release it on failure).
	ClaimAcquired ClaimState = iota + 1
	// ClaimDone: the effect was already performed; skip it.
	ClaimDone
	// ClaimHeld: another owner holds a live lease; retry later.
	ClaimHeld
)

func (s ClaimState) String() string {
	switch s {
	case ClaimAcquired:
		return "acquired"
	case ClaimDone:
		return "done"
	case ClaimHeld:
		return "held"
	}
	return "unknown"
}

// Endpoints is the endpoint registry.
type Endpoints interface {
	// CreateEndpoint stores a new endpoint (Version becomes 1; CreatedAt
	// defaults to now; Tenant defaults to DefaultTenant; ErrConflict if the
	// ID exists) and lists it in its tenant's index.
	CreateEndpoint(ctx context.Context, e model.Endpoint) (model.Endpoint, error)
	// UpdateEndpoint replaces e if its Version matches (ErrConflict otherwise,
	// ErrNotFound if absent) and returns it with the next version, CreatedAt
	// and Tenant kept and UpdatedAt set to now.
	UpdateEndpoint(ctx context.Context, e model.Endpoint) (model.Endpoint, error)
	GetEndpoint(ctx context.Context, id string) (model.Endpoint, error)
	// GetEndpointOf is GetEndpoint for the tenant's endpoint only:
	// ErrNotFound when id is absent or another tenant's, decided from the
	// per-tenant index before the record is read, so another tenant's ID
	// costs what a missing one does (no record read, decoded or unsealed).
	GetEndpointOf(ctx context.Context, tenant, id string) (model.Endpoint, error)
	ListEndpoints(ctx context.Context) ([]model.Endpoint, error) // ordered by ID
	// ListEndpointsIn returns the endpoints whose ShardOf is one of shards,
	// ordered by ID (none when shards is empty; an out-of-range shard
	// matches nothing, a shard named twice counts once): what one
	// aggregator replica lists for the shards it owns. A backend that keeps
	// each shard's endpoints apart (Redis Cluster: one hash per shard, one
	// slot) reads only those shards; one that does not filters a full
	// listing and says so.
	ListEndpointsIn(ctx context.Context, shards []int) ([]model.Endpoint, error)
	// EndpointsStampsIn returns one number per shard of shards, in their
	// order, that changes whenever an endpoint of that shard is created,
	// updated (paused, resumed, edited) or deleted, and on no write to
	// another shard's endpoint, so a reader that lists a few shards
	// periodically can skip each shard whose number stood. The numbers of
	// different shards are not comparable; an out-of-range shard's stands
	// forever.
	EndpointsStampsIn(ctx context.Context, shards []int) ([]uint64, error)
	// ListEndpointsOf returns the tenant's endpoints ordered by ID. It reads
	// the per-tenant index the writes below keep in their own transaction,
	// so it costs the tenant's size, not the deployment's. The pipeline
	// keeps using ListEndpoints (scheduler, prober, alerter) and
	// ListEndpointsIn (the aggregator's no_data pass).
	ListEndpointsOf(ctx context.Context, tenant string) ([]model.Endpoint, error)
	// ListEndpointsPage returns one page of the tenant's endpoints: those
	// whose ID is greater than after ("" = from the first), ordered by ID,
	// at most limit of them (limit <= 0: an empty last page). It reads
	// limit+1 IDs of the per-tenant index and limit records, so it costs
	// the page, not the tenant. Next is the last ID the page covered when
	// more remain (pass it as after), "" on the last page. An ID in the
	// index whose record is gone (deleted between the two reads) is left
	// out and still covered by Next, so a page may hold fewer than limit
	// endpoints with more to come. Keyset paging by ID: creates and deletes
	// between pages never repeat or skip an endpoint that exists
	// throughout.
	ListEndpointsPage(ctx context.Context, tenant, after string, limit int) (EndpointPage, error)
	// CreateEndpointWithin is CreateEndpoint that refuses with ErrQuota when
	// the endpoint's tenant already holds limit endpoints, counted in the
	// same transaction as the write, so concurrent creates — from any
	// replica — cannot pass the limit together. limit <= 0: no limit.
	CreateEndpointWithin(ctx context.Context, e model.Endpoint, limit int) (model.Endpoint, error)
	// DeleteEndpoint atomically removes the endpoint together with its
	// latest probe result, its undecided window results (OpenWindows no
	// longer lists them) and what the prober remembers of it (Objects of
	// the kinds in ProberObjectKinds, id = the endpoint ID and
	// ProberObjectID of it for every region, whether or not the region is
	// still configured). ErrNotFound if the endpoint is absent; the cleanup runs
	// anyway, so a repeated delete removes what a probe in flight at the
	// first one wrote back. Kept on purpose: the verdict history and last
	// verdict (they age out with the retention, and the last verdict makes a
	// straggling result of a decided window ErrWindowDecided), the tracker,
	// the incidents (the audit trail) and the ledger keys (they expire).
	DeleteEndpoint(ctx context.Context, id string) error
}

// Results keeps each endpoint's latest probe result and the aggregator's
// open windows.
type Results interface {
	// PutLatestResult stores r unless a result for a later slot is stored.
	PutLatestResult(ctx context.Context, r msg.ProbeResult) error
	LatestResult(ctx context.Context, endpointID string) (msg.ProbeResult, error)

	// AddWindowResult adds r to the endpoint's window, idempotently by
	// (ProbeRunID, Region): added is false for a duplicate. It returns
	// ErrWindowDecided when a verdict for that window or a later one exists.
	AddWindowResult(ctx context.Context, window time.Time, r msg.ProbeResult) (added bool, err error)
	// WindowResults returns a window's results ordered by (Region, ProbeRunID).
	WindowResults(ctx context.Context, ref WindowRef) ([]msg.ProbeResult, error)
	// OpenWindows lists undecided windows holding results that start before
	// `before`, ordered by window then endpoint ID.
	OpenWindows(ctx context.Context, before time.Time) ([]WindowRef, error)
	// OpenWindowsIn is OpenWindows for the endpoints whose ShardOf is one
	// of shards (none when shards is empty; an out-of-range shard matches
	// nothing): what one aggregator replica lists for the shards it owns.
	// A backend that keeps each shard's windows apart (Redis Cluster: one
	// sorted set per shard, one slot) reads only those shards, so the cost
	// is the shards' windows, not the deployment's.
	OpenWindowsIn(ctx context.Context, before time.Time, shards []int) ([]WindowRef, error)
}

// Verdicts keeps each endpoint's verdict history.
type Verdicts interface {
	// RecordVerdict atomically: if v.Window is after the endpoint's last
	// verdict window, sets it as the last verdict, appends it to the history
	// (trimmed to the retention) and drops the window's results (and those of
	// the endpoint's earlier windows, which can no longer be decided); returns
	// applied=false and changes nothing otherwise.
	RecordVerdict(ctx context.Context, v msg.Verdict) (applied bool, err error)
	LastVerdict(ctx context.Context, endpointID string) (msg.Verdict, error)
	// ListVerdicts returns up to limit verdicts (all if limit <= 0) within
	// the retention, newest first.
	ListVerdicts(ctx context.Context, endpointID string, limit int) ([]msg.Verdict, error)
	// ListVerdictsBefore is ListVerdicts for the verdicts whose Window is
	// before `before` (zero: no bound): the next page of a newest-first
	// walk whose last verdict was before's window. Windows are unique per
	// endpoint, so the window is the whole cursor.
	ListVerdictsBefore(ctx context.Context, endpointID string, before time.Time, limit int) ([]msg.Verdict, error)
}

// Incidents keeps incidents and the alerter's trackers, with indexes the
// store maintains inside the transaction that writes them (no caller keeps
// them in step): the endpoints whose outbox holds notifications, the
// incidents not yet resolved, and each tenant's incidents (by opening
// window, and by ID for ownership). Each costs what it holds, not the
// deployment's history. Incidents stored before the tenant index existed
// are indexed when the backend opens.
type Incidents interface {
	GetTracker(ctx context.Context, endpointID string) (model.Tracker, error) // zero model.Tracker (Version 0) if none
	// SaveTracker atomically writes t (compare-and-set on t.Version; 0 means
	// create) and each incident (compare-and-set on its Version; 0 means
	// create), and in the same transaction lists t's endpoint in
	// PendingOutboxes if t.Pending > 0 (unlists it otherwise) and each
	// incident in the open-incident index unless it is resolved. On success
	// the stored versions are one higher. ErrConflict if any version
	// differs; nothing is written then, indexes included.
	SaveTracker(ctx context.Context, t model.Tracker, incidents ...model.Incident) error
	GetIncident(ctx context.Context, id string) (model.Incident, error)
	// GetIncidentOf is GetIncident for the tenant's incident only
	// (TenantOf(Incident.Tenant)): ErrNotFound when id is absent or another
	// tenant's, decided from the tenant index before the record is read.
	GetIncidentOf(ctx context.Context, tenant, id string) (model.Incident, error)
	// UpdateIncident compare-and-sets one existing incident (acknowledge over
	// the API), keeping the open-incident index in the same transaction:
	// ErrNotFound if absent, ErrConflict on a version mismatch.
	UpdateIncident(ctx context.Context, inc model.Incident) (model.Incident, error)
	// ListIncidents returns matching incidents, newest OpenedWindow first
	// (ties by ID, descending). It walks the endpoint's index when the
	// filter names one, else the tenant's when it names one (so a tenant's
	// list costs the tenant's incidents, not the deployment's), else the
	// whole history: for the API, not for periodic work.
	ListIncidents(ctx context.Context, f IncidentFilter) ([]model.Incident, error)
	// PendingOutboxes returns, ordered by ID, the endpoints whose tracker
	// was last saved with Pending > 0 (empty, not nil, if none).
	PendingOutboxes(ctx context.Context) ([]string, error)
	// CountOpenIncidents returns how many incidents are open or
	// acknowledged, from the index, without reading resolved ones.
	CountOpenIncidents(ctx context.Context) (int, error)
	// IncidentsStamp returns a number that changes whenever an incident
	// is written (SaveTracker with incidents, UpdateIncident), bumped in
	// the write's transaction, so a reader that walks incidents
	// periodically can skip a walk while it stays the same.
	IncidentsStamp(ctx context.Context) (uint64, error)
}

// Deliveries keeps each incident's delivery records, one per (kind, sink):
// what the alerter did with each notification at each sink, for the API.
// Records stay as long as their incident (incidents are the audit trail and
// are never deleted); an incident has at most one per kind it owed and sink
// it had, so they stay small.
type Deliveries interface {
	// RecordDelivery atomically merges d into the incident's record for
	// (d.Kind, d.Sink) with MergeDelivery (creating it if absent), so
	// replicas recording different sinks, or the same one, lose nothing.
	// ErrNotFound if the incident does not exist.
	RecordDelivery(ctx context.Context, incidentID string, d model.Delivery) error
	// Deliveries returns the incident's records in SortDeliveries order
	// (empty, not an error, for an incident without any or unknown).
	Deliveries(ctx context.Context, incidentID string) ([]model.Delivery, error)
}

// Ledger is the claim-before-effect idempotency ledger. A key moves
// absent → claimed (by an owner, for a lease) → done (kept for the TTL).
// A done key past its TTL reads as absent. Lease and TTL are measured on the
// backend's injected clock.
type Ledger interface {
	// Claim takes key for owner for lease (DefaultLease if lease <= 0). A
	// claim whose lease expired may be taken over by another owner; a live
	// claim by the same owner is re-acquired with a fresh lease.
	Claim(ctx context.Context, key, owner string, lease time.Duration) (ClaimState, error)
	// Complete marks a claimed key done; ErrConflict if owner lost the claim
	// (another owner took it over, or it was never claimed). Completing a key
	// owner already completed is a no-op, and so is completing owner's own
	// claim after its lease ended if nobody took it over.
	Complete(ctx context.Context, key, owner string) error
	// Release drops owner's claim so the effect can be retried at once. It is
	// a no-op if owner does not hold the claim; done keys are never released.
	Release(ctx context.Context, key, owner string) error
}

// Objects is a small versionless document store for configuration that has
// no query needs: maintenance windows, global sink settings, tool catalogs.
//
// Documents of a TenantKinds kind belong to a tenant (ObjectTenant reads
// it from the document): PutObject and DeleteObject keep, in the same
// transaction as the document, the tenant's index of that kind (its IDs,
// and each ID's tenant) and the tenant's ObjectsStamp. PutObject refuses a
// document of such a kind whose tenant does not decode. Documents stored
// before the index existed are indexed when the backend opens.
type Objects interface {
	PutObject(ctx context.Context, kind, id string, doc []byte) error
	GetObject(ctx context.Context, kind, id string) ([]byte, error) // model.ErrNotFound
	ListObjects(ctx context.Context, kind string) (map[string][]byte, error)
	DeleteObject(ctx context.Context, kind, id string) error // model.ErrNotFound

	// PutObjectWithin is PutObject that refuses with ErrQuota a document
	// new to its tenant when the tenant already holds limit documents of
	// kind, counted in the write's own transaction (so concurrent creates,
	// from any replica, cannot pass it together). limit <= 0: no limit.
	// Only for TenantKinds.
	PutObjectWithin(ctx context.Context, kind, id string, doc []byte, limit int) error
	// SwapObject is PutObject of doc only while kind/id holds exactly old
	// (compared byte for byte in the write's own transaction): the
	// compare-and-set of a read-modify-write of a versionless document,
	// so a write made meanwhile by another replica is not put back as it
	// was. ErrConflict when it holds something else, ErrNotFound when it
	// is absent.
	SwapObject(ctx context.Context, kind, id string, old, doc []byte) error
	// GetObjectOf returns the tenant's document of kind: ErrNotFound when
	// id is absent or another tenant's, decided from the index before the
	// document is read. Only for TenantKinds.
	GetObjectOf(ctx context.Context, kind, tenant, id string) ([]byte, error)
	// ListObjectsOf returns the tenant's documents of kind by ID (empty map
	// if none), reading the tenant's index: it costs the tenant's
	// documents, never another tenant's. Only for TenantKinds.
	ListObjectsOf(ctx context.Context, kind, tenant string) (map[string][]byte, error)
	// CountObjectsOf returns how many documents of kind the tenant holds,
	// from the index alone. Only for TenantKinds.
	CountObjectsOf(ctx context.Context, kind, tenant string) (int, error)
	// ObjectsStamp returns a number that changes whenever one of the
	// tenant's documents of kind is put or deleted (bumped in the same
	// transaction), so a reader that decodes them can keep the decoded
	// form while the stamp stays the same; tenant AnyTenant names the
	// kind's stamp, which changes with a put or delete of any tenant's
	// document of kind. Only for TenantKinds.
	ObjectsStamp(ctx context.Context, kind, tenant string) (uint64, error)
}

// AnyTenant, given to ObjectsStamp as the tenant, names the stamp of a
// kind across every tenant.
const AnyTenant = "*"

// Audit is the audit log: who changed what over the API, per tenant, kept
// for the backend's audit TTL (store.DefaultAuditTTL by default) measured
// on its injected clock. Entries are appended, never changed.
type Audit interface {
	// AppendAudit stores e under e.Tenant with a fresh e.ID (store.AuditID)
	// and removes the tenant's entries older than the TTL in the same step.
	AppendAudit(ctx context.Context, e AuditEntry) error
	// ListAudit returns f.Tenant's entries within f's time range and the
	// TTL, newest first (ties: the later append first), at most
	// store.AuditLimit(f); empty, not nil, if none. Another tenant's
	// entries are never returned.
	ListAudit(ctx context.Context, f AuditFilter) ([]AuditEntry, error)
}

// Store is everything a backend implements.
type Store interface {
	Endpoints
	Results
	Verdicts
	Incidents
	Deliveries
	Ledger
	Objects
	Audit
	Rollups // rollups.go
	Events  // events.go
	// Ping reports whether the backend is reachable (readiness).
	Ping(ctx context.Context) error
	Close() error
}

// Defaults for backends.
const (
	// DefaultLedgerTTL keeps done ledger keys for 7 days: far beyond SQS's
	// 5-minute dedup window, its 4-day default retention and a DLQ replay
	// within a week, and short enough that the ledger stays small.
	DefaultLedgerTTL = 7 * 24 * time.Hour
	// DefaultVerdictHistory bounds verdict history per endpoint.
	DefaultVerdictHistory = 7 * 24 * time.Hour
	// DefaultLease is the ledger claim lease used when Claim is given none
	// (lease <= 0): long enough for a sink call with its retries, short enough
	// that a crashed holder's claim is taken over within a minute.
	DefaultLease = time.Minute
)

// RegionSeparator joins an endpoint ID and a region in a prober object ID.
// Neither can contain it: endpoint IDs are [a-z0-9-] (api.RandomID, and
// the API never takes one from a client), regions are [a-z0-9-]
// (config.ValidRegion). So "ep@eu" is never an endpoint's own ID, and the
// prefix "ep@" selects exactly the regional documents of ep.
const RegionSeparator = "@"

// ProberObjectID is the ID under which a prober of region keeps its
// document (a kind of ProberObjectKinds) of an endpoint:
// "<endpointID>@<region>", or the endpoint ID itself without a region (the
// regionless layout, which is also the legacy document a region reads
// before it has its own). Each region remembers what it saw, so a region
// behind a stale cache diffs against its own last catalog, never another
// region's.
func ProberObjectID(endpointID, region string) string {
	if region == "" {
		return endpointID
	}
	return endpointID + RegionSeparator + region
}

// SplitProberObjectID undoes ProberObjectID: region is "" for an
// endpoint's own (regionless) document.
func SplitProberObjectID(id string) (endpointID, region string) {
	endpointID, region, _ = strings.Cut(id, RegionSeparator)
	return endpointID, region
}
