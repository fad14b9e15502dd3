package apiv1

import "time"

// ConformanceView is GET /v1/endpoints/{id}/conformance: the outcome of
// every conformance rule at the endpoint's latest result.
type ConformanceView struct {
	EndpointID string `json:"endpointId"`
	// Era is the protocol revision the rules were judged against (absent
	// before a probe got far enough to judge any).
	Era string `json:"era,omitempty"`
	// CheckedAt is the slot of the probe that judged the passive rules;
	// ActiveAt of the one that last sent the active rules' requests.
	CheckedAt *time.Time `json:"checkedAt,omitempty"`
	ActiveAt  *time.Time `json:"activeAt,omitempty"`
	// Passed and Failed count the rules of the era by outcome.
	Passed int `json:"passed"`
	Failed int `json:"failed"`
	// Rules is the whole rule catalog: a rule not of the era is n/a.
	Rules []ConformanceRuleView `json:"rules"`
}

// ConformanceRuleView is one rule and its outcome.
type ConformanceRuleView struct {
	ID    string `json:"id"`
	Title string `json:"title"`
	// Spec links the section of the spec the rule checks.
	Spec string   `json:"spec"`
	Eras []string `json:"eras"`
	// Active rules send extra requests, about once an hour per endpoint;
	// their outcome is the last such probe's.
	Active  bool   `json:"active,omitempty"`
	Outcome string `json:"outcome"` // pass, fail or n/a
	Detail  string `json:"detail,omitempty"`
}
