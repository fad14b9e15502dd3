package netguard

import (
	"errors"
	"net"
	"net/netip"
	"strings"
	"testing"
)

func TestGuardBlocksSpecialAddresses(t *testing.T) {
	g := Guard{}
	for _, s := range []string{
		"127.0.0.1", "127.9.9.9", "10.1.2.3", "172.16.0.1", "172.31.255.255", "192.168.1.1",
		"169.254.169.254", "100.64.0.1", "100.127.255.254", "0.0.0.0", "224.0.0.1", "255.255.255.255",
		"::1", "::", "fe80::1", "fc00::1", "fd12:3456::1", "ff02::1",
		"::ffff:127.0.0.1", "::ffff:169.254.169.254", "::ffff:10.0.0.1", "64:ff9b::a9fe:a9fe",
	} {
		if err := g.CheckAddr(netip.MustParseAddr(s)); !errors.Is(err, ErrBlocked) {
			t.Errorf("%s allowed, want blocked", s)
		}
	}
	for _, s := range []string{"93.184.216.34", "8.8.8.8", "100.128.0.1", "172.32.0.1", "2606:4700::1111", "::ffff:8.8.8.8"} {
		if err := g.CheckAddr(netip.MustParseAddr(s)); err != nil {
			t.Errorf("%s blocked: %v", s, err)
		}
	}
	if err := (Guard{AllowPrivate: true}).CheckAddr(netip.MustParseAddr("127.0.0.1")); err != nil {
		t.Errorf("AllowPrivate still blocks: %v", err)
	}
	ex := Guard{Allowed: []netip.Prefix{netip.MustParsePrefix("10.1.0.0/16")}}
	if ex.CheckAddr(netip.MustParseAddr("10.1.2.3")) != nil || ex.CheckAddr(netip.MustParseAddr("10.2.0.1")) == nil {
		t.Error("Allowed exception wrong")
	}
}

func TestCheckTarget(t *testing.T) {
	tests := []struct {
		url          string
		allowPrivate bool
		want         error
	}{
		{"https://mcp.example.com/mcp", false, nil},
		{"http://127.0.0.1:8080/mcp", false, ErrBlocked},
		{"http://127.0.0.1:8080/mcp", true, nil},
		{"http://localhost:3000/mcp", false, ErrBlocked},
		{"http://api.localhost/mcp", false, ErrBlocked},
		{"http://[::1]/mcp", false, ErrBlocked},
		{"http://[::ffff:169.254.169.254]/", false, ErrBlocked},
		{"http://169.254.169.254/latest/meta-data/", false, ErrBlocked},
		{"ftp://example.com/", false, ErrInvalidURL},
		{"https://user:pw@example.com/mcp", false, ErrInvalidURL},
		{"https:///mcp", false, ErrInvalidURL},
		{"::not a url", false, ErrInvalidURL},
	}
	for _, tc := range tests {
		err := Guard{AllowPrivate: tc.allowPrivate}.CheckTarget(tc.url)
		if tc.want == nil && err != nil || tc.want != nil && !errors.Is(err, tc.want) {
			t.Errorf("CheckTarget(%q) allowPrivate=%v = %v, want %v", tc.url, tc.allowPrivate, err, tc.want)
		}
	}
}

func TestCheckHost(t *testing.T) {
	for _, tc := range []struct {
		host         string
		allowPrivate bool
		want         error
	}{
		{"smtp.example.com", false, nil},
		{"93.184.216.34", false, nil},
		{"127.0.0.1", false, ErrBlocked},
		{"169.254.169.254", false, ErrBlocked},
		{"::1", false, ErrBlocked},
		{"LocalHost.", false, ErrBlocked},
		{"mail.localhost", false, ErrBlocked},
		{"10.0.0.5", true, nil},
		{"localhost", true, nil},
	} {
		err := Guard{AllowPrivate: tc.allowPrivate}.CheckHost(tc.host)
		if tc.want == nil && err != nil || tc.want != nil && !errors.Is(err, tc.want) {
			t.Errorf("CheckHost(%q) allowPrivate=%v = %v, want %v", tc.host, tc.allowPrivate, err, tc.want)
		}
	}
}

// TestDialContextRefusesBeforeConnect: a name resolving to loopback is
// refused before connect (the listener never sees a connection);
// AllowPrivate connects.
func TestDialContextRefusesBeforeConnect(t *testing.T) {
	ln, err := (&net.ListenConfig{}).Listen(t.Context(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan struct{}, 4)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted <- struct{}{}
			c.Close()
		}
	}()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	for _, addr := range []string{"localhost:" + port, ln.Addr().String()} {
		c, err := Guard{}.DialContext(t.Context(), "tcp", addr)
		if !errors.Is(err, ErrBlocked) {
			if c != nil {
				c.Close()
			}
			t.Fatalf("dial %s: %v, want ErrBlocked", addr, err)
		}
	}
	c, err := Guard{AllowPrivate: true}.DialContext(t.Context(), "tcp", ln.Addr().String())
	if err != nil {
		t.Fatalf("AllowPrivate: %v", err)
	}
	c.Close()
	<-accepted
	select {
	case <-accepted:
		t.Fatal("a refused dial reached the listener")
	default:
	}
}

// TestNonCanonicalIPv4RefusedAtRegistration: the spellings of an IPv4
// address that getaddrinfo and browsers accept (one number, hex, octal,
// fewer than four parts) and IPv4-compatible IPv6 are refused when a
// target is registered, as the dial-time check refuses the address they
// stand for; a public address spelled that way is refused as ambiguous,
// with the canonical spelling.
func TestNonCanonicalIPv4RefusedAtRegistration(t *testing.T) {
	for _, tc := range []struct {
		url  string
		want error
	}{
		{"http://2130706433/mcp", ErrBlocked},
		{"http://0x7f000001/mcp", ErrBlocked},
		{"http://0X7F000001/mcp", ErrBlocked},
		{"http://127.1/mcp", ErrBlocked},
		{"http://0177.0.0.1/mcp", ErrBlocked},
		{"http://0x7f.0.0.1/mcp", ErrBlocked},
		{"http://127.0.1/mcp", ErrBlocked},
		{"http://169.254.43518/latest", ErrBlocked},
		{"http://0/mcp", ErrBlocked},
		{"http://[::127.0.0.1]/mcp", ErrBlocked},
		{"http://[::169.254.169.254]/mcp", ErrBlocked},
		{"http://134744072/mcp", ErrInvalidURL}, // 8.8.8.8: public, but spelled so that readers disagree
		{"http://1.2.3.4.5/mcp", ErrInvalidURL},
		{"http://256.0.0.1/mcp", ErrInvalidURL},
		{"http://09.0.0.1/mcp", ErrInvalidURL},
		{"http://mcp.example.123/mcp", ErrInvalidURL},
		{"http://example.com:0/mcp", ErrInvalidURL},
		{"http://example.com:65536/mcp", ErrInvalidURL},
		{"http://8.8.8.8/mcp", nil},
		{"http://0xcafe.example.com/mcp", nil}, // a name: its last part is not a number
		{"http://1password.com/mcp", nil},
		{"http://example.com:65535/mcp", nil},
	} {
		err := Guard{}.CheckTarget(tc.url)
		if tc.want == nil && err != nil || tc.want != nil && !errors.Is(err, tc.want) {
			t.Errorf("CheckTarget(%q) = %v, want %v", tc.url, err, tc.want)
		}
	}
	// The dial-time half refuses the IPv4-compatible form too.
	if err := (Guard{}).CheckAddr(netip.MustParseAddr("::127.0.0.1")); !errors.Is(err, ErrBlocked) {
		t.Errorf("CheckAddr(::127.0.0.1) = %v, want ErrBlocked", err)
	}
}

// TestTranslationPrefixesAreBlocked: the IPv6 ranges that carry an IPv4
// address (IPv4-translated, Teredo, local-use NAT64) and the 6to4 relay
// anycast range are refused, whatever IPv4 address they embed, as are
// the ranges' edges; the public neighbours stay allowed.
func TestTranslationPrefixesAreBlocked(t *testing.T) {
	for _, tc := range []struct {
		addr    string
		blocked bool
	}{
		{"::ffff:0:7f00:1", true},                      // IPv4-translated 127.0.0.1
		{"::ffff:0:a9fe:a9fe", true},                   // IPv4-translated 169.254.169.254
		{"::ffff:0:a00:1", true},                       // IPv4-translated 10.0.0.1
		{"::ffff:0:808:808", true},                     // IPv4-translated public 8.8.8.8: still a translation
		{"::ffff:0:0:0", true},                         // the range's first address
		{"::ffff:0:ffff:ffff", true},                   // and its last
		{"2001::1", true},                              // Teredo
		{"2001:0:4136:e378:8000:63bf:3fff:fdd2", true}, // Teredo, RFC 4380's example (client 192.0.2.45)
		{"2001:0:ffff:ffff:ffff:ffff:ffff:ffff", true}, // Teredo's last address
		{"2001:1::1", false},                           // just past Teredo
		{"192.88.99.1", true},                          // 6to4 relay anycast
		{"192.88.99.255", true},
		{"192.88.98.1", false},
		{"192.88.100.1", false},
		{"64:ff9b:1::7f00:1", true},  // local-use NAT64 with loopback
		{"64:ff9b:1::a00:1", true},   // local-use NAT64 with 10.0.0.1
		{"64:ff9b:1:ffff::1", true},  // the /48's last subnet
		{"64:ff9b:2::1", false},      // past the /48
		{"::ffff:192.88.99.1", true}, // 6to4 relay, IPv4-mapped
		{"::ffff:8.8.8.8", false},    // mapped public IPv4
	} {
		err := Guard{}.CheckAddr(netip.MustParseAddr(tc.addr))
		if tc.blocked != errors.Is(err, ErrBlocked) {
			t.Errorf("CheckAddr(%s) = %v, want blocked=%v", tc.addr, err, tc.blocked)
		}
		if tc.blocked {
			if err := (Guard{AllowPrivate: true}).CheckAddr(netip.MustParseAddr(tc.addr)); err != nil {
				t.Errorf("AllowPrivate still blocks %s: %v", tc.addr, err)
			}
		}
	}
	for _, u := range []string{"http://[::ffff:0:7f00:1]/mcp", "http://[2001::a9fe:a9fe]/mcp", "http://192.88.99.1/mcp", "http://[64:ff9b:1::a9fe:a9fe]/mcp"} {
		if err := (Guard{}).CheckTarget(u); !errors.Is(err, ErrBlocked) {
			t.Errorf("CheckTarget(%s) = %v, want ErrBlocked", u, err)
		}
	}
}

// TestRefusalNamesNeitherAddressNorRange: what a refusal says (its Error,
// shown to tenants) is the same sentence whatever was refused; the address
// and range are in Detail only, for the operator's log.
func TestRefusalNamesNeitherAddressNorRange(t *testing.T) {
	const want = "the target resolves to a private or reserved address; mcpmon refuses those (an operator may allow its network with --allow-target-networks, or every address with --allow-private-targets)"
	for _, tc := range []struct {
		name       string
		err        error
		detail     []string
		notInError []string
	}{
		{"address", Guard{}.CheckAddr(netip.MustParseAddr("10.1.2.3")), []string{"10.1.2.3", "10.0.0.0/8"}, []string{"10.1.2.3", "10.0.0.0"}},
		{"mapped metadata", Guard{}.CheckAddr(netip.MustParseAddr("::ffff:169.254.169.254")), []string{"169.254.169.254", "169.254.0.0/16"}, []string{"169.254"}},
		{"non-canonical host", Guard{}.CheckHost("0x7f000001"), []string{"127.0.0.1", "0x7f000001"}, []string{"127.0.0.1", "0x7f"}},
		{"localhost", Guard{}.CheckTarget("http://db.localhost/"), []string{"db.localhost"}, []string{"db.localhost"}},
		{"dial address", Guard{}.Control("tcp", "nonsense", nil), []string{"nonsense"}, []string{"nonsense"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !errors.Is(tc.err, ErrBlocked) || tc.err.Error() != want {
				t.Fatalf("error %q, want ErrBlocked saying %q", tc.err, want)
			}
			for _, s := range tc.notInError {
				if strings.Contains(tc.err.Error(), s) {
					t.Errorf("error %q names %q", tc.err, s)
				}
			}
			wrapped := &net.OpError{Op: "dial", Net: "tcp", Err: tc.err}
			d := Detail(wrapped)
			for _, s := range tc.detail {
				if !strings.Contains(d, s) {
					t.Errorf("Detail = %q, want it to name %q", d, s)
				}
			}
		})
	}
	if d := Detail(errors.New("connection refused")); d != "" {
		t.Errorf("Detail of a non-refusal = %q, want empty", d)
	}
}

func TestParseNetworks(t *testing.T) {
	got, err := ParseNetworks([]string{"10.20.0.0/16", " 10.30.1.7 ", "fd00:1::/64", "10.40.5.6/24", "", "::ffff:10.50.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"10.20.0.0/16", "10.30.1.7/32", "fd00:1::/64", "10.40.5.0/24", "10.50.0.1/32"}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i := range want {
		if got[i].String() != want[i] {
			t.Errorf("[%d] = %s, want %s", i, got[i], want[i])
		}
	}
	g := Guard{Allowed: got}
	for addr, ok := range map[string]bool{"10.20.3.4": true, "10.30.1.7": true, "10.30.1.8": false, "169.254.169.254": false, "127.0.0.1": false, "10.40.5.200": true} {
		if err := g.CheckAddr(netip.MustParseAddr(addr)); (err == nil) != ok {
			t.Errorf("CheckAddr(%s) = %v, want allowed %v", addr, err, ok)
		}
	}
	for _, bad := range []string{"10.0.0.0/33", "office", "10.0.0.1-10.0.0.9", "fe80::1%eth0"} {
		if _, err := ParseNetworks([]string{bad}); err == nil || !strings.Contains(err.Error(), bad) {
			t.Errorf("ParseNetworks(%q) = %v, want an error naming it", bad, err)
		}
	}
}

// A confined guard dials only its networks: Allowed, and with
// AllowPrivate every private address; public addresses are refused with
// ErrOutsideSecretNetworks (which is also an ErrBlocked).
func TestConfinedGuard(t *testing.T) {
	nets := []netip.Prefix{netip.MustParsePrefix("10.20.0.0/16")}
	for _, tc := range []struct {
		g    Guard
		addr string
		ok   bool
	}{
		{Guard{Allowed: nets, Confine: true}, "10.20.1.1", true},
		{Guard{Allowed: nets, Confine: true}, "10.30.1.1", false},
		{Guard{Allowed: nets, Confine: true}, "127.0.0.1", false},
		{Guard{Allowed: nets, Confine: true}, "8.8.8.8", false},
		{Guard{Allowed: nets, Confine: true}, "2606:4700::1111", false},
		{Guard{AllowPrivate: true, Confine: true}, "127.0.0.1", true},
		{Guard{AllowPrivate: true, Confine: true}, "192.168.1.1", true},
		{Guard{AllowPrivate: true, Confine: true}, "169.254.169.254", true},
		{Guard{AllowPrivate: true, Confine: true}, "8.8.8.8", false},
		{Guard{Confine: true}, "8.8.8.8", false},
		{Guard{Allowed: []netip.Prefix{netip.MustParsePrefix("8.8.8.0/24")}, Confine: true}, "8.8.8.8", true},
		{Guard{}, "8.8.8.8", true}, // not confined: public addresses pass
	} {
		err := tc.g.CheckAddr(netip.MustParseAddr(tc.addr))
		if (err == nil) != tc.ok {
			t.Errorf("%+v CheckAddr(%s) = %v, want allowed %v", tc.g, tc.addr, err, tc.ok)
		}
		if err != nil && tc.g.Confine && (!errors.Is(err, ErrOutsideSecretNetworks) || !errors.Is(err, ErrBlocked) || err.Error() != ErrOutsideSecretNetworks.Error()) {
			t.Errorf("%+v CheckAddr(%s) = %q, want ErrOutsideSecretNetworks, an ErrBlocked", tc.g, tc.addr, err)
		}
	}
	if err := (Guard{AllowPrivate: true, Confine: true}).CheckHost("localhost"); err != nil {
		t.Errorf("confined to the private side, localhost: %v", err)
	}
	if err := (Guard{Allowed: nets, Confine: true}).CheckHost("localhost"); !errors.Is(err, ErrOutsideSecretNetworks) {
		t.Errorf("confined to 10.20.0.0/16, localhost: %v", err)
	}
}
