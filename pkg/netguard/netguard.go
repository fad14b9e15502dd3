// Package netguard owns the SSRF guard: the rule that a connection to an
// address an API caller chose (a probe target, a sink's receiver, an SMTP
// relay) must not reach loopback, private, link-local (cloud metadata),
// CGNAT, unique-local, multicast or unspecified addresses.
//
// Data enters as a URL, a host or a dial address and leaves as nil or an
// error wrapping ErrBlocked or ErrInvalidURL. The check comes in two halves:
// CheckTarget and CheckHost vet what a caller registers, early and with a
// clear error; Control and DialContext run after DNS resolution, before
// connect(2), on every connection, and are the authoritative half, because
// only they see the address DNS actually returned (so rebinding fails) and
// every redirect hop.
package netguard

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
	"time"
)

// ErrBlocked is returned (wrapped, with the refused address) when the guard
// refuses a target.
var ErrBlocked = errors.New("target address not allowed: loopback, private, link-local, CGNAT, unique-local, multicast and unspecified addresses are refused (run with --allow-private-targets for private deployments)")

// ErrInvalidURL reports a target URL nothing may connect to at all.
var ErrInvalidURL = errors.New("invalid target URL")

// blockedPrefixes are refused unless private targets are allowed. IPv4-mapped
// IPv6 addresses are unmapped before the check, so ::ffff:127.0.0.1 is loopback.
var blockedPrefixes = func() []netip.Prefix {
	var ps []netip.Prefix
	for _, s := range []string{
		"0.0.0.0/8",       // "this network", unspecified
		"10.0.0.0/8",      // RFC 1918
		"100.64.0.0/10",   // CGNAT (RFC 6598)
		"127.0.0.0/8",     // loopback
		"169.254.0.0/16",  // link-local, incl. cloud metadata 169.254.169.254
		"172.16.0.0/12",   // RFC 1918
		"192.0.0.0/24",    // IETF protocol assignments
		"192.0.2.0/24",    // TEST-NET-1
		"192.168.0.0/16",  // RFC 1918
		"198.18.0.0/15",   // benchmarking
		"198.51.100.0/24", // TEST-NET-2
		"203.0.113.0/24",  // TEST-NET-3
		"224.0.0.0/4",     // multicast
		"240.0.0.0/4",     // reserved, incl. broadcast
		"::/128",          // unspecified
		"::1/128",         // loopback
		"64:ff9b::/96",    // NAT64 can reach IPv4 private space
		"64:ff9b:1::/48",  // local-use NAT64
		"100::/64",        // discard
		"2001:db8::/32",   // documentation
		"fc00::/7",        // unique local
		"fe80::/10",       // link-local
		"fec0::/10",       // deprecated site-local
		"ff00::/8",        // multicast
		"2002::/16",       // 6to4 can embed private IPv4
	} {
		ps = append(ps, netip.MustParsePrefix(s))
	}
	return ps
}()

// Guard decides which addresses a connection may reach. The zero Guard
// refuses every blocked address.
type Guard struct {
	// AllowPrivate turns the guard off (tests, private deployments).
	AllowPrivate bool
	// Allowed are exceptions to the block list (e.g. one internal subnet)
	// while everything else stays refused.
	Allowed []netip.Prefix
}

// CheckAddr returns nil if ip may be dialed.
func (g Guard) CheckAddr(ip netip.Addr) error {
	if g.AllowPrivate {
		return nil
	}
	ip = ip.Unmap().WithZone("")
	for _, p := range g.Allowed {
		if p.Contains(ip) {
			return nil
		}
	}
	for _, p := range blockedPrefixes {
		if p.Contains(ip) {
			return fmt.Errorf("%w: %s is in %s", ErrBlocked, ip, p)
		}
	}
	return nil
}

// CheckHost refuses a literal blocked IP or a localhost name (host without
// port). Other names are left to the dial-time check. It suits targets that
// are not http(s) URLs, such as an SMTP relay.
func (g Guard) CheckHost(host string) error {
	if g.AllowPrivate {
		return nil
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		return g.CheckAddr(ip)
	}
	h := strings.ToLower(strings.TrimSuffix(host, "."))
	if h == "localhost" || strings.HasSuffix(h, ".localhost") {
		return fmt.Errorf("%w: %s names the loopback interface", ErrBlocked, host)
	}
	return nil
}

// CheckURL validates u before any network I/O: an http(s) URL with a host
// and no user info, whose host passes CheckHost.
func (g Guard) CheckURL(u *url.URL) error {
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("%w: scheme %q (want http or https)", ErrInvalidURL, u.Scheme)
	}
	host := u.Hostname()
	if host == "" {
		return fmt.Errorf("%w: no host", ErrInvalidURL)
	}
	if u.User != nil {
		return fmt.Errorf("%w: credentials in the URL are not allowed; use endpoint headers (they are kept secret)", ErrInvalidURL)
	}
	return g.CheckHost(host)
}

// CheckTarget is CheckURL for a URL not yet parsed, as registration gets
// it. Names that resolve to blocked addresses are caught at dial time.
func (g Guard) CheckTarget(rawURL string) error {
	u, err := url.Parse(rawURL)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrInvalidURL, err)
	}
	return g.CheckURL(u)
}

// Control is a net.Dialer Control hook: it runs after DNS resolution, for
// every address tried, before connect(2), so nothing is sent to a refused
// address.
func (g Guard) Control(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("%w: cannot parse dial address %q", ErrBlocked, address)
	}
	return g.CheckAddr(ap.Addr())
}

// DialContext dials like a net.Dialer with a 30 s timeout and keep-alive,
// through Control: for an http.Transport or any other client that connects
// to addresses API callers supply (alert sinks).
func (g Guard) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	d := net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second, Control: g.Control}
	return d.DialContext(ctx, network, addr)
}
