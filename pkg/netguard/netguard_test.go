package netguard

import (
	"errors"
	"net"
	"net/netip"
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
