package apiv1

import (
	"encoding/json"

	"github.com/mcpmon/mcpmon/pkg/msg"
)

// CatalogView is GET /v1/endpoints/{id}/catalog.
type CatalogView struct {
	EndpointID string `json:"endpointId"`
	// Region is the region whose catalog this is (absent: the endpoint's
	// own, regionless catalog).
	Region string `json:"region,omitempty"`
	// Fingerprint and Tools are the catalog the prober stored at its last
	// change (absent before the first successful tools/list).
	Fingerprint string            `json:"fingerprint,omitempty"`
	Tools       []json.RawMessage `json:"tools"`
	// Truncated says the target listed more than a stored catalog keeps.
	Truncated bool `json:"truncated,omitempty"`
	// Drift holds the catalog_changed events of the latest probe result
	// only, when that result is the region's. The durable history of every
	// change, which sinks can opt into, is GET /v1/endpoints/{id}/events
	// (EventView).
	Drift []msg.Event `json:"drift"`
	// LatestFingerprint is the fingerprint the latest probe saw, when that
	// probe was the region's.
	LatestFingerprint string `json:"latestFingerprint,omitempty"`
	// Regions is the fingerprint of each of the endpoint's regions'
	// stored catalogs, in a deployment with a region set: more than one
	// value is a divergence (a catalog_divergent event).
	Regions map[string]string `json:"regions,omitempty"`
}
