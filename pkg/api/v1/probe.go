package apiv1

import "time"

// ProbeAccepted is the 202 body of POST /v1/endpoints/{id}/probe: the probe
// was queued but its result did not arrive while the request waited. The
// endpoint's latestResult (GET Location) carries ProbeRunID once it has.
type ProbeAccepted struct {
	ProbeRunID string    `json:"probeRunId"`
	Slot       time.Time `json:"slot"`
	Location   string    `json:"location"`
}
