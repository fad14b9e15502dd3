package testpeers_test

import (
	"errors"
	"net"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/mcpmon/mcpmon/pkg/testpeers"
)

// TestDNSZoneAnswers: the zone answers A and TXT records it holds, a TXT
// answer too big for UDP whole (over TCP), NXDOMAIN for a name it does not
// hold and SERVFAIL for one set to fail; records change while it runs.
func TestDNSZoneAnswers(t *testing.T) {
	z := testpeers.NewDNSZone(t)
	z.SetA("a.mcpmon.test", netip.MustParseAddr("127.0.0.2"))
	z.SetTXT("_x.mcpmon.test", "one", "two")
	ctx := t.Context()

	if ips, err := z.Resolver.LookupNetIP(ctx, "ip4", "a.mcpmon.test"); err != nil || len(ips) != 1 || ips[0] != netip.MustParseAddr("127.0.0.2") {
		t.Errorf("A: %v %v", ips, err)
	}
	if txt, err := z.Resolver.LookupTXT(ctx, "_x.mcpmon.test."); err != nil || !slices.Equal(txt, []string{"one", "two"}) {
		t.Errorf("TXT: %q %v", txt, err)
	}
	big := strings.Repeat("b", 20000)
	z.SetTXT("_x.mcpmon.test", big)
	if txt, err := z.Resolver.LookupTXT(ctx, "_x.mcpmon.test."); err != nil || len(txt) != 1 || txt[0] != big {
		t.Errorf("big TXT: %d records, %v", len(txt), err)
	}
	var dnsErr *net.DNSError
	if _, err := z.Resolver.LookupTXT(ctx, "missing.mcpmon.test."); !errors.As(err, &dnsErr) || !dnsErr.IsNotFound {
		t.Errorf("unknown name: %v, want not found", err)
	}
	z.SetFail("_x.mcpmon.test")
	if _, err := z.Resolver.LookupTXT(ctx, "_x.mcpmon.test."); !errors.As(err, &dnsErr) || dnsErr.IsNotFound {
		t.Errorf("failing name: %v, want a failure that is not not-found", err)
	}
}
