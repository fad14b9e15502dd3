package apiv1

import "time"

// KeyView is an API key as the API shows it. Scope is read, write or
// admin. Key is set only in the response that creates it.
type KeyView struct {
	ID       string     `json:"id"`
	Name     string     `json:"name"`
	Tenant   string     `json:"tenant"`
	Scope    string     `json:"scope"`
	Status   string     `json:"status"`
	Created  time.Time  `json:"created"`
	Expires  *time.Time `json:"expires,omitempty"`
	Revoked  *time.Time `json:"revoked,omitempty"`
	LastUsed *time.Time `json:"lastUsed,omitempty"`
	Key      string     `json:"key,omitempty"`
}
