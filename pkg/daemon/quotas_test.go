package daemon

import (
	"testing"

	"github.com/mcpmon/mcpmon/pkg/api"
	"github.com/mcpmon/mcpmon/pkg/config"
)

// TestQuotaDefaultsAgree: the flags' defaults are the API's documented ones
// (config does not import the API, so they are written twice).
func TestQuotaDefaultsAgree(t *testing.T) {
	o := config.Defaults()
	got := api.Quotas{MaxEndpoints: o.MaxEndpointsPerTenant, MaxMaintenance: o.MaxMaintenancePerTenant, MaxStatusPages: o.MaxStatusPagesPerTenant,
		RatePerSecond: o.RateLimit, Burst: o.RateBurst, MaxInFlight: o.MaxInFlightPerTenant}
	want := api.Quotas{MaxEndpoints: api.DefaultMaxEndpointsPerTenant, MaxMaintenance: api.DefaultMaxMaintenancePerTenant,
		MaxStatusPages: api.DefaultMaxStatusPagesPerTenant, RatePerSecond: api.DefaultRateLimit, Burst: api.DefaultRateBurst,
		MaxInFlight: api.DefaultMaxInFlightPerTenant}
	if got != want {
		t.Fatalf("config defaults %+v, api defaults %+v", got, want)
	}
}
