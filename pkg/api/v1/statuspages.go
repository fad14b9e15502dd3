package apiv1

import "time"

// StatusPageInput is the body of POST /v1/status-pages and PUT
// /v1/status-pages/{id}: a public page of the tenant's public endpoints,
// in ordered groups each chosen by a label selector.
type StatusPageInput struct {
	Slug        string           `json:"slug"`
	Title       string           `json:"title"`
	Description string           `json:"description,omitempty"`
	LogoURL     string           `json:"logoUrl,omitempty"`
	Host        string           `json:"host,omitempty"`
	Groups      []PageGroupInput `json:"groups,omitempty"`
}

// PageGroupInput is one titled section of a page: the tenant's public
// endpoints having every selector label (none: all of them).
type PageGroupInput struct {
	Name     string            `json:"name"`
	Selector map[string]string `json:"selector,omitempty"`
}

// StatusPageView is a stored status page.
type StatusPageView struct {
	ID          string `json:"id"`
	Tenant      string `json:"tenant"`
	Slug        string `json:"slug"`
	Title       string `json:"title"`
	Description string `json:"description,omitempty"`
	LogoURL     string `json:"logoUrl,omitempty"`
	Host        string `json:"host,omitempty"`
	// HostVerification is where Host stands (absent without a host): a
	// host is served only once verified (or grandfathered).
	HostVerification *HostVerificationView `json:"hostVerification,omitempty"`
	Groups           []PageGroupInput      `json:"groups,omitempty"`
	CreatedAt        time.Time             `json:"createdAt,omitzero"`
	UpdatedAt        time.Time             `json:"updatedAt,omitzero"`
}

// StatusPageList is the answer of GET /v1/status-pages: every page of the
// tenant (at most --max-status-pages-per-tenant), in slug order.
type StatusPageList struct {
	Items []StatusPageView `json:"items"`
}

// HostVerificationView is where a page's custom host stands and the DNS
// record that proves it: State is pending (not served until the record is
// published and POST /v1/status-pages/{id}/verify-host finds it),
// verified, or grandfathered (stored before hosts were verified; served).
// Record, RecordType and Value are absent for a grandfathered host until
// its first re-check issues them.
//
// A served host is looked up again periodically: CheckedAt is the last
// look, FailingSince the first of the consecutive looks that found no
// record (absent while it is found) and Failure why the last look found
// none. A host whose record stays missing for the deployment's grace is
// released: pending again, with ReleasedAt and ReleasedBy ("recheck", or
// "operator" when the deployment's operator released it).
type HostVerificationView struct {
	State        string     `json:"state"`
	RecordType   string     `json:"recordType,omitempty"`
	Record       string     `json:"record,omitempty"`
	Value        string     `json:"value,omitempty"`
	VerifiedAt   *time.Time `json:"verifiedAt,omitempty"`
	CheckedAt    *time.Time `json:"checkedAt,omitempty"`
	FailingSince *time.Time `json:"failingSince,omitempty"`
	Failure      string     `json:"failure,omitempty"`
	ReleasedAt   *time.Time `json:"releasedAt,omitempty"`
	ReleasedBy   string     `json:"releasedBy,omitempty"`
}

// HostReleaseInput is the body of POST /v1/status-page-hosts/release: the
// custom host to take back from whatever page holds it.
type HostReleaseInput struct {
	Host string `json:"host"`
}

// HostReleaseView is the answer of POST /v1/status-page-hosts/release: the
// host and the pages, of any tenant, whose verification of it was cleared
// (empty when every page naming it was already pending).
type HostReleaseView struct {
	Host     string         `json:"host"`
	Released []ReleasedPage `json:"released"`
}

// ReleasedPage is one page a host was released from.
type ReleasedPage struct {
	ID     string `json:"id"`
	Tenant string `json:"tenant"`
	Slug   string `json:"slug"`
}
