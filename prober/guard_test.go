package prober

import (
	"errors"
	"net"
	"net/netip"
	"testing"
)

func TestGuardBlocksSpecialAddresses(t *testing.T) {
	g := guard{}
	for _, s := range []string{
		"127.0.0.1", "127.9.9.9", "10.1.2.3", "172.16.0.1", "172.31.255.255", "192.168.1.1",
		"169.254.169.254", "100.64.0.1", "100.127.255.254", "0.0.0.0", "224.0.0.1", "255.255.255.255",
		"::1", "::", "fe80::1", "fc00::1", "fd12:3456::1", "ff02::1",
		"::ffff:127.0.0.1", "::ffff:169.254.169.254", "::ffff:10.0.0.1", "64:ff9b::a9fe:a9fe",
	} {
		if err := g.check(netip.MustParseAddr(s)); !errors.Is(err, ErrBlockedTarget) {
			t.Errorf("%s allowed, want blocked", s)
		}
	}
	for _, s := range []string{"93.184.216.34", "8.8.8.8", "100.128.0.1", "172.32.0.1", "2606:4700::1111", "::ffff:8.8.8.8"} {
		if err := g.check(netip.MustParseAddr(s)); err != nil {
			t.Errorf("%s blocked: %v", s, err)
		}
	}
	if err := (guard{allowPrivate: true}).check(netip.MustParseAddr("127.0.0.1")); err != nil {
		t.Errorf("allowPrivate still blocks: %v", err)
	}
	ex := guard{allowed: []netip.Prefix{netip.MustParsePrefix("10.1.0.0/16")}}
	if ex.check(netip.MustParseAddr("10.1.2.3")) != nil || ex.check(netip.MustParseAddr("10.2.0.1")) == nil {
		t.Error("AllowedNetworks exception wrong")
	}
}

func TestValidateTarget(t *testing.T) {
	tests := []struct {
		url          string
		allowPrivate bool
		want         error
	}{
		{"https://mcp.example.com/mcp", false, nil},
		{"http://127.0.0.1:8080/mcp", false, ErrBlockedTarget},
		{"http://127.0.0.1:8080/mcp", true, nil},
		{"http://localhost:3000/mcp", false, ErrBlockedTarget},
		{"http://api.localhost/mcp", false, ErrBlockedTarget},
		{"http://[::1]/mcp", false, ErrBlockedTarget},
		{"http://[::ffff:169.254.169.254]/", false, ErrBlockedTarget},
		{"http://169.254.169.254/latest/meta-data/", false, ErrBlockedTarget},
		{"ftp://example.com/", false, ErrInvalidTarget},
		{"https://user:pw@example.com/mcp", false, ErrInvalidTarget},
		{"https:///mcp", false, ErrInvalidTarget},
		{"::not a url", false, ErrInvalidTarget},
	}
	for _, tc := range tests {
		err := ValidateTarget(tc.url, tc.allowPrivate)
		if tc.want == nil && err != nil || tc.want != nil && !errors.Is(err, tc.want) {
			t.Errorf("ValidateTarget(%q, %v) = %v, want %v", tc.url, tc.allowPrivate, err, tc.want)
		}
	}
}

func TestValidateProtocol(t *testing.T) {
	for _, ok := range [][2]string{{"", ""}, {"auto", ""}, {"streamable-http", "2025-06-18"}, {"sse", "2024-11-05"}, {"auto", "2026-07-28"}} {
		if err := ValidateProtocol(ok[0], ok[1]); err != nil {
			t.Errorf("%v: %v", ok, err)
		}
	}
	for _, bad := range [][2]string{{"websocket", ""}, {"auto", "2099-01-01"}, {"sse", "2026-07-28"}, {"streamable-http", "2024-11-05"}} {
		if err := ValidateProtocol(bad[0], bad[1]); !errors.Is(err, ErrInvalidProtocol) {
			t.Errorf("%v: %v, want ErrInvalidProtocol", bad, err)
		}
	}
}

func TestValidateHost(t *testing.T) {
	for _, tc := range []struct {
		host         string
		allowPrivate bool
		want         error
	}{
		{"smtp.example.com", false, nil},
		{"93.184.216.34", false, nil},
		{"127.0.0.1", false, ErrBlockedTarget},
		{"169.254.169.254", false, ErrBlockedTarget},
		{"::1", false, ErrBlockedTarget},
		{"LocalHost.", false, ErrBlockedTarget},
		{"mail.localhost", false, ErrBlockedTarget},
		{"10.0.0.5", true, nil},
		{"localhost", true, nil},
	} {
		err := ValidateHost(tc.host, tc.allowPrivate)
		if tc.want == nil && err != nil || tc.want != nil && !errors.Is(err, tc.want) {
			t.Errorf("ValidateHost(%q, %v) = %v, want %v", tc.host, tc.allowPrivate, err, tc.want)
		}
	}
}

// TestGuardedDialContext: a name resolving to loopback is refused before
// connect (the listener never sees a connection); allowPrivate connects.
func TestGuardedDialContext(t *testing.T) {
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
		c, err := GuardedDialContext(false)(t.Context(), "tcp", addr)
		if !errors.Is(err, ErrBlockedTarget) {
			if c != nil {
				c.Close()
			}
			t.Fatalf("dial %s: %v, want ErrBlockedTarget", addr, err)
		}
	}
	c, err := GuardedDialContext(true)(t.Context(), "tcp", ln.Addr().String())
	if err != nil {
		t.Fatalf("allowPrivate: %v", err)
	}
	c.Close()
	<-accepted
	select {
	case <-accepted:
		t.Fatal("a refused dial reached the listener")
	default:
	}
}
