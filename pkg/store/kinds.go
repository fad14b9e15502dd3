// The kinds of Objects documents, the one list of them: every package that
// keeps documents in the object store names its kind here, so a backend, a
// migration or an operator reading a dump finds every kind in one place.

package store

import "slices"

const (
	// KindCatalog: the tool catalog a prober last saw, for drift events
	// (id = ProberObjectID).
	KindCatalog = "catalog"
	// KindServerIdentity: the protocol version, server name and version of
	// the last successful probe (id = ProberObjectID).
	KindServerIdentity = "server"
	// KindAuthServer: the OAuth authorization server pinned for an endpoint
	// whose client has no token URL; one per endpoint (id = the endpoint
	// ID), shared by every region, since the client secret may go to one
	// token endpoint only.
	KindAuthServer = "auth_server"
	// KindMaintenance: one JSON-encoded model.Maintenance per window ID,
	// indexed by tenant (TenantKinds).
	KindMaintenance = "maintenance"
	// KindStatusPage: one JSON-encoded model.StatusPage per page ID,
	// indexed by tenant (TenantKinds).
	KindStatusPage = "status-page"
	// KindSubscriber: one JSON-encoded model.Subscriber per subscriber ID,
	// indexed by its page's ID as its tenant (TenantKinds), so a page's
	// subscribers are counted and capped in the write's transaction.
	KindSubscriber = "status-subscriber"
	// KindSubscribeKey: the link keys pkg/subscribe signs links and
	// derives subscriber IDs with, sealed under the keyring (id =
	// "current"; subscribe.LinkKeys).
	KindSubscribeKey = "subscribe-key"
	// KindAPIKey: one auth.Key record per API key, id = auth.Hash(key).
	KindAPIKey = "apikey"
	// KindAPIKeyUse: a key's last-used time, id = auth.Hash(key); kept
	// apart from the record so flushing it never races a revocation.
	KindAPIKeyUse = "apikey-use"
	// KindAgentSeen: what an agent's polls told the API (last poll,
	// version, results per minute), id = the agent key's ID; advisory,
	// written at most every few seconds per agent.
	KindAgentSeen = "agent-seen"
	// KindAgentOffline: an agent the alerter told its tenant is offline
	// and not yet back, id = the agent key's ID (alerter/agents.go).
	KindAgentOffline = "agent-offline"
	// KindProberHeartbeat: one pkg/membership beat per prober replica and
	// region, id = "<region>|<replica>".
	KindProberHeartbeat = "prober-heartbeat"
	// KindAggregatorHeartbeat: one pkg/membership beat per aggregator
	// replica, id = the replica ID.
	KindAggregatorHeartbeat = "aggregator-heartbeat"
	// KindLegacyOutbox: where releases before the pending-outbox index
	// kept their own, one empty object per endpoint with a pending outbox;
	// read and emptied once by the alerter's migration.
	KindLegacyOutbox = "alerter-outbox"
	// KindAlertGroup: one alerter/grouping.Slot per (tenant, group key,
	// grouping sink), id = a digest of the three: the groups of incidents
	// a sink gets as one notification, kept until decided and settled.
	KindAlertGroup = "alerter-group"
	// KindMigrations: one marker per migration that has run, id = the
	// migration's name and version.
	KindMigrations = "alerter-migrations"
	// KindDigestEntry: one change event waiting in a sink's digest, id =
	// "<sink>|<scope>|<event key>"; removed once its period's digest is
	// sent (alerter/digest.go).
	KindDigestEntry = "digest-entry"
)

// ProberObjectKinds are removed with their endpoint by DeleteEndpoint.
func ProberObjectKinds() [3]string {
	return [3]string{KindCatalog, KindServerIdentity, KindAuthServer}
}

// TenantKinds returns the Objects kinds whose documents belong to a tenant
// and are indexed by it: maintenance windows, status pages, and status
// page subscribers (whose "tenant" is their page).
func TenantKinds() [3]string { return [3]string{KindMaintenance, KindStatusPage, KindSubscriber} }

// IsTenantKind reports whether kind is one of TenantKinds.
func IsTenantKind(kind string) bool {
	kinds := TenantKinds()
	return slices.Contains(kinds[:], kind)
}
