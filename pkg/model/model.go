package model

import "errors"

// DefaultTenant owns everything written before tenants existed: a record
// whose Tenant is empty belongs to it, so existing data needs no rewrite.
const DefaultTenant = "default"

// TenantOf returns the tenant a stored Tenant field names: DefaultTenant
// for the empty one.
func TenantOf(tenant string) string {
	if tenant == "" {
		return DefaultTenant
	}
	return tenant
}

// SameTenant reports whether two Tenant fields name one tenant, the empty
// one being DefaultTenant.
func SameTenant(a, b string) bool { return TenantOf(a) == TenantOf(b) }

// ErrNotFound: no record of that kind has that ID (or it is another
// tenant's, which a caller must not be able to tell apart). Every store
// returns it, so a consumer checks for it without importing a backend.
var ErrNotFound = errors.New("not found")
