package prober

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"testing"

	"github.com/mcpmon/mcpmon/pkg/netguard"
)

// TestRefusedTokenURLNamesNoAddress: a token URL the SSRF guard refuses is
// reported to the tenant by host and the guard's sentence only; the dial
// error's resolved address and blocked range stay in the operator's detail.
func TestRefusedTokenURLNamesNoAddress(t *testing.T) {
	refusal := &netguard.BlockedError{Addr: netip.MustParseAddr("10.1.2.3"), Range: netip.MustParsePrefix("10.0.0.0/8")}
	err := fmt.Errorf(`Post "https://auth.example/token": dial tcp 10.1.2.3:443: %w`, refusal)
	pe := tokenFailure(context.Background(), "https://auth.example/token", err)
	if pe.class != ClassAuthTokenFailed {
		t.Fatalf("class %s, want %s", pe.class, ClassAuthTokenFailed)
	}
	for _, leak := range []string{"10.1.2.3", "10.0.0.0/8"} {
		if strings.Contains(pe.Error(), leak) {
			t.Errorf("the tenant's message %q names %s", pe.Error(), leak)
		}
	}
	if !strings.Contains(pe.Error(), "auth.example") || !strings.Contains(pe.Error(), netguard.ErrBlocked.Error()) {
		t.Errorf("message %q should name the host and the guard's refusal", pe.Error())
	}
	if d := pe.blockedDetail(); !strings.Contains(d, "10.1.2.3") {
		t.Errorf("operator detail %q lacks the address", d)
	}
}
