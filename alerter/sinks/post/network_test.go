package post

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestScrubNetwork: the resolver's address and socket addresses leave a
// transport error's text; the host from the sink's URL and the cause stay.
func TestScrubNetwork(t *testing.T) {
	tcp := func(s string) net.Addr { return net.TCPAddrFromAddrPort(netip.MustParseAddrPort(s)) }
	dns := &net.DNSError{Err: "no such host", Name: "hooks.example", Server: "10.0.0.2:53", IsNotFound: true}
	cases := []struct {
		name     string
		err      error
		want     string
		mustLose []string
	}{
		{"dns", dns, "lookup hooks.example: no such host", []string{"10.0.0.2"}},
		{"dial with dns", &net.OpError{Op: "dial", Net: "tcp", Err: dns}, "dial tcp: lookup hooks.example: no such host", []string{"10.0.0.2"}},
		{"refused", &net.OpError{Op: "dial", Net: "tcp", Addr: tcp("10.1.2.3:443"), Err: errors.New("connect: connection refused")},
			"dial tcp: connect: connection refused", []string{"10.1.2.3"}},
		{"read with source", &net.OpError{Op: "read", Net: "tcp", Source: tcp("10.9.9.9:50000"), Addr: tcp("10.1.2.3:443"), Err: errors.New("connection reset by peer")},
			"read tcp: connection reset by peer", []string{"10.9.9.9", "10.1.2.3"}},
		{"wrapped", fmt.Errorf("smtp: %w", &net.OpError{Op: "dial", Net: "tcp", Addr: tcp("[fd00::5]:25"), Err: errors.New("i/o timeout")}),
			"smtp: dial tcp: i/o timeout", []string{"fd00::5"}},
		{"joined", errors.Join(errors.New("first"), dns), "first\nlookup hooks.example: no such host", []string{"10.0.0.2"}},
		{"plain", errors.New("receiver failed with HTTP 502"), "receiver failed with HTTP 502", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := ScrubNetwork(c.err.Error(), c.err)
			if got != c.want {
				t.Errorf("ScrubNetwork = %q, want %q", got, c.want)
			}
			for _, s := range c.mustLose {
				if strings.Contains(got, s) {
					t.Errorf("ScrubNetwork = %q still names %s", got, s)
				}
			}
		})
	}
}

// TestDNSFailureDoesNotNameTheResolver: a real lookup that fails (the
// resolver cannot be reached) through Do names the sink's host, never the
// resolver's address.
func TestDNSFailureDoesNotNameTheResolver(t *testing.T) {
	r := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return nil, errors.New("resolver unreachable")
	}}
	d := &net.Dialer{Resolver: r, Timeout: 2 * time.Second}
	c := Client(&http.Client{Transport: &http.Transport{DialContext: d.DialContext}}, 5*time.Second)
	_, err := Do(t.Context(), c, Request{Sink: "hook", URL: "http://hooks.mcpmon-test.example/T0/secret-token-123"})
	if err == nil {
		t.Fatal("Do succeeded without a resolver")
	}
	msg := err.Error()
	if regexp.MustCompile(`on \S+:53`).MatchString(msg) || !strings.Contains(msg, "lookup hooks.mcpmon-test.example") || strings.Contains(msg, "secret-token-123") {
		t.Fatalf("error %q: want the lookup of the sink's host, without the resolver's address or the URL's token", msg)
	}
}
