package prober

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

// ErrBlockedTarget is returned (wrapped, with the refused address) when the
// SSRF guard refuses a target. Registration calls ValidateTarget for an early,
// clear error; the dial-time check in the probe's dialer is authoritative
// because only it sees the address DNS actually returned (so rebinding fails)
// and every redirect hop.
var ErrBlockedTarget = errors.New("target address not allowed: loopback, private, link-local, CGNAT, unique-local, multicast and unspecified addresses are refused (run with --allow-private-targets for private deployments)")

// ErrInvalidTarget reports a URL a probe cannot use at all.
var ErrInvalidTarget = errors.New("invalid target URL")

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

// guard decides which addresses a probe may connect to.
type guard struct {
	allowPrivate bool
	allowed      []netip.Prefix // exceptions to the block list
}

// check returns nil if ip may be dialed.
func (g guard) check(ip netip.Addr) error {
	if g.allowPrivate {
		return nil
	}
	ip = ip.Unmap().WithZone("")
	for _, p := range g.allowed {
		if p.Contains(ip) {
			return nil
		}
	}
	for _, p := range blockedPrefixes {
		if p.Contains(ip) {
			return fmt.Errorf("%w: %s is in %s", ErrBlockedTarget, ip, p)
		}
	}
	return nil
}

// control is a net.Dialer Control hook: it runs after DNS resolution, for
// every address tried, before connect(2), so nothing is sent to a refused
// address.
func (g guard) control(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("%w: cannot parse dial address %q", ErrBlockedTarget, address)
	}
	return g.check(ap.Addr())
}

// checkURL validates a URL before any network I/O: scheme, host, no user
// info, and literal IPs / localhost names against the block list.
func (g guard) checkURL(u *url.URL) error {
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("%w: scheme %q (want http or https)", ErrInvalidTarget, u.Scheme)
	}
	host := u.Hostname()
	if host == "" {
		return fmt.Errorf("%w: no host", ErrInvalidTarget)
	}
	if u.User != nil {
		return fmt.Errorf("%w: credentials in the URL are not allowed; use endpoint headers (they are kept secret)", ErrInvalidTarget)
	}
	return g.checkHost(host)
}

// checkHost refuses a literal blocked IP or a localhost name; other names
// are left to the dial-time check.
func (g guard) checkHost(host string) error {
	if g.allowPrivate {
		return nil
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		return g.check(ip)
	}
	h := strings.ToLower(strings.TrimSuffix(host, "."))
	if h == "localhost" || strings.HasSuffix(h, ".localhost") {
		return fmt.Errorf("%w: %s names the loopback interface", ErrBlockedTarget, host)
	}
	return nil
}

// ValidateHost is ValidateTarget's address check for a bare host (a name or
// a literal IP, without port), for targets that are not http(s) URLs, such
// as an SMTP relay: unless allowPrivate, a literal blocked IP or a localhost
// name is refused with ErrBlockedTarget.
func ValidateHost(host string, allowPrivate bool) error {
	return guard{allowPrivate: allowPrivate}.checkHost(host)
}

// GuardedDialContext returns a DialContext (for an http.Transport or any
// other client) that refuses, after DNS resolution and before connect(2),
// every address ValidateTarget's block list covers, unless allowPrivate.
// It is the dial-time half of the guard the prober itself uses, for other
// components that connect to URLs API callers supply (alert sinks).
func GuardedDialContext(allowPrivate bool) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return guard{allowPrivate: allowPrivate}.dialer(nil, net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second})
}

// ValidateTarget checks rawURL at registration time: an http(s) URL with a
// host and no user info, and — unless allowPrivate — not a literal blocked
// IP or a localhost name. Names that resolve to blocked addresses are caught
// at dial time, on every probe and every redirect.
func ValidateTarget(rawURL string, allowPrivate bool) error {
	u, err := url.Parse(rawURL)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrInvalidTarget, err)
	}
	return guard{allowPrivate: allowPrivate}.checkURL(u)
}

// dialer returns a DialContext that resolves with r and refuses blocked
// addresses after resolution.
func (g guard) dialer(r *net.Resolver, timeout net.Dialer) func(ctx context.Context, network, addr string) (net.Conn, error) {
	d := timeout
	d.Resolver = r
	d.Control = g.control
	return d.DialContext
}

// ErrInvalidProtocol reports a transport or pinned version the prober does
// not speak, or a contradictory pair.
var ErrInvalidProtocol = errors.New("invalid transport or protocol version")

// ValidateProtocol checks an endpoint's transport (auto | streamable-http |
// sse, empty = auto) and optional pinned protocol version at registration.
func ValidateProtocol(transport, version string) error {
	switch transport {
	case "", TransportAuto, TransportStreamableHTTP, TransportSSE:
	default:
		return fmt.Errorf("%w: transport %q (want %s, %s or %s)", ErrInvalidProtocol, transport, TransportAuto, TransportStreamableHTTP, TransportSSE)
	}
	if version == "" {
		return nil
	}
	known := false
	for _, v := range Versions {
		known = known || v == version
	}
	if !known {
		return fmt.Errorf("%w: protocol version %q (known: %s)", ErrInvalidProtocol, version, strings.Join(Versions, ", "))
	}
	if transport == TransportSSE && version == Version20260728 || transport == TransportStreamableHTTP && version == Version20241105 {
		return fmt.Errorf("%w: protocol %s is not spoken over transport %s", ErrInvalidProtocol, version, transport)
	}
	return nil
}
