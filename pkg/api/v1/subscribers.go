package apiv1

import "time"

// SubscribersView is GET /v1/status-pages/{id}/subscribers: how many
// subscribers a page has, and each one with its address masked. No
// response ever holds a subscriber's address in full.
type SubscribersView struct {
	Pending   int              `json:"pending"`
	Confirmed int              `json:"confirmed"`
	Items     []SubscriberView `json:"items"`
}

// SubscriberView is one subscriber of a page, as its owner sees it.
type SubscriberView struct {
	ID string `json:"id"`
	// Kind is email or webhook.
	Kind string `json:"kind"`
	// Address is masked: the first character and the domain
	// ("j***@example.com"), or a webhook's scheme and host alone
	// ("https://hooks.example.com").
	Address     string     `json:"address"`
	State       string     `json:"state"`
	CreatedAt   time.Time  `json:"createdAt"`
	ConfirmedAt *time.Time `json:"confirmedAt,omitempty"`
}

// WebhookSubscriberInput is POST /v1/status-pages/{id}/subscribers: a URL
// the page's tenant wants each incident event of the page POSTed to,
// signed with Secret when given.
type WebhookSubscriberInput struct {
	WebhookURL string `json:"webhookUrl"`
	Secret     string `json:"secret,omitempty"`
}
