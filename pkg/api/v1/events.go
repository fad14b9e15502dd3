package apiv1

import (
	"encoding/json"
	"time"
)

// EventView is a change event as the API shows it.
type EventView struct {
	ID          string          `json:"id"`
	EndpointID  string          `json:"endpointId"`
	Kind        string          `json:"kind"`
	Fingerprint string          `json:"fingerprint"`
	ObservedAt  time.Time       `json:"observedAt"`
	RecordedAt  time.Time       `json:"recordedAt,omitzero"`
	Region      string          `json:"region,omitempty"`
	ProbeRunID  string          `json:"probeRunId,omitempty"`
	Source      string          `json:"source,omitempty"`
	Severity    string          `json:"severity,omitempty"`
	Message     string          `json:"message"`
	Before      string          `json:"before,omitempty"`
	After       string          `json:"after,omitempty"`
	Diff        json.RawMessage `json:"diff,omitempty"`
	Details     json.RawMessage `json:"details,omitempty"`
	// Suppressed is set on a flapping marker: how many changes of its
	// kind it stands for, since when.
	Suppressed *EventSuppression `json:"suppressed,omitempty"`
}

// EventSuppression is what a flapping marker counts.
type EventSuppression struct {
	Count int       `json:"count"`
	Since time.Time `json:"since"`
	Last  time.Time `json:"last"`
}
