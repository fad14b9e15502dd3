// Package netguard owns the SSRF guard: the rule that a connection to an
// address an API caller chose (a probe target, a sink's receiver, an SMTP
// relay) must not reach loopback, private, link-local (cloud metadata),
// CGNAT, unique-local, multicast or unspecified addresses.
//
// Data enters as a URL, a host or a dial address and leaves as nil or an
// error wrapping ErrBlocked or ErrInvalidURL. A refusal's message is
// ErrBlocked's alone: the address a name resolved to and the range it fell
// in are facts of the operator's network, so they travel only inside
// BlockedError, for the operator's log (Detail), never in the text a
// tenant is shown. The check comes in two halves:
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
	"strconv"
	"strings"
	"syscall"
	"time"
)

// ErrBlocked is what every refusal says (as a *BlockedError).
var ErrBlocked = errors.New("the target resolves to a private or reserved address; mcpmon refuses those (an operator may allow its network with --allow-target-networks, or every address with --allow-private-targets)")

// ErrOutsideSecretNetworks is what a confined guard (Guard.Confine) says of
// an address outside the networks it confines to: the sentence a tenant is
// shown, wrapping ErrBlocked so every caller that knows a refusal knows
// this one.
var ErrOutsideSecretNetworks = fmt.Errorf("%w; this endpoint carries agent-side secrets (${agent:NAME}), which the agent sends only to its allowed networks (--allow-target-networks, or any private address with --allow-private-targets), and the target resolves outside them", ErrBlocked)

// BlockedError is a refusal. Its Error is ErrBlocked's text whatever was
// refused; Detail names what and why, for the operator's log only.
type BlockedError struct {
	// Addr is the refused address (invalid when a name was refused).
	Addr netip.Addr
	// Range is the blocked range Addr is in (invalid when none applies).
	Range netip.Prefix
	// Reason says why, when it is not Range (a localhost name, an
	// address spelled non-canonically, an unparsable dial address).
	Reason string
	// Confined: a confined guard refused an address outside its networks
	// (ErrOutsideSecretNetworks).
	Confined bool
}

func (e *BlockedError) Error() string {
	if e.Confined {
		return ErrOutsideSecretNetworks.Error()
	}
	return ErrBlocked.Error()
}

func (e *BlockedError) Unwrap() error {
	if e.Confined {
		return ErrOutsideSecretNetworks
	}
	return ErrBlocked
}

// Detail is the refusal in full: the address and its range, or the reason.
func (e *BlockedError) Detail() string {
	var parts []string
	if e.Addr.IsValid() {
		parts = append(parts, e.Addr.String())
	}
	if e.Range.IsValid() {
		parts = append(parts, "is in "+e.Range.String())
	}
	if e.Reason != "" {
		parts = append(parts, e.Reason)
	}
	return strings.Join(parts, " ")
}

// Detail is err's refusal in full when err is (or wraps) a *BlockedError,
// and "" otherwise: what the operator's log may record of a refusal.
func Detail(err error) string {
	if be, ok := errors.AsType[*BlockedError](err); ok {
		return be.Detail()
	}
	return ""
}

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
		"192.88.99.0/24",  // 6to4 relay anycast (RFC 7526)
		"198.18.0.0/15",   // benchmarking
		"198.51.100.0/24", // TEST-NET-2
		"203.0.113.0/24",  // TEST-NET-3
		"224.0.0.0/4",     // multicast
		"240.0.0.0/4",     // reserved, incl. broadcast
		"::/128",          // unspecified
		"::1/128",         // loopback
		"::/96",           // IPv4-compatible IPv6 (deprecated): [::127.0.0.1] is ::7f00:1
		"64:ff9b::/96",    // NAT64 can reach IPv4 private space
		"64:ff9b:1::/48",  // local-use NAT64 (RFC 8215)
		"::ffff:0:0:0/96", // IPv4-translated (RFC 2765): ::ffff:0:a.b.c.d
		"2001::/32",       // Teredo: the client's IPv4 address travels inside
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
	// Confine turns the guard inside out: only Allowed (and, with
	// AllowPrivate, the blocked ranges) may be dialed, every public
	// address refused. An agent probes an endpoint that carries its
	// agent-side secrets through a confined guard, so whoever may register
	// endpoints cannot have those secrets sent to a host of theirs.
	Confine bool
}

// ParseNetworks parses Guard.Allowed from what an operator writes: CIDR
// prefixes ("10.20.0.0/16", "fd00:1::/64") or single addresses
// ("10.20.0.7"), each held to its network's bits. An empty list is none. A
// value that is neither is an error naming it.
func ParseNetworks(list []string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, v := range list {
		v = strings.TrimSpace(v)
		if v == "" {
			continue
		}
		if p, err := netip.ParsePrefix(v); err == nil {
			out = append(out, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(v)
		if err != nil || a.Zone() != "" {
			return nil, fmt.Errorf("%q is not a network (CIDR such as 10.20.0.0/16) or an address", v)
		}
		a = a.Unmap()
		out = append(out, netip.PrefixFrom(a, a.BitLen()))
	}
	return out, nil
}

// CheckAddr returns nil if ip may be dialed.
func (g Guard) CheckAddr(ip netip.Addr) error {
	if g.AllowPrivate && !g.Confine {
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
			if g.AllowPrivate { // confined to the private side
				return nil
			}
			return &BlockedError{Addr: ip, Range: p, Confined: g.Confine}
		}
	}
	if g.Confine {
		return &BlockedError{Addr: ip, Reason: "is outside the networks the agent's secrets may reach", Confined: true}
	}
	return nil
}

// CheckHost refuses a literal blocked IP or a localhost name (host without
// port). Other names are left to the dial-time check. It suits targets that
// are not http(s) URLs, such as an SMTP relay.
func (g Guard) CheckHost(host string) error {
	if g.AllowPrivate && !g.Confine {
		return nil
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		return g.CheckAddr(ip)
	}
	if ip, numeric, err := parseLooseIPv4(host); numeric {
		// 2130706433, 0x7f000001, 127.1, 0177.0.0.1: getaddrinfo and
		// browsers read these as IPv4 addresses, Go's resolver as names
		// that do not resolve. Whichever reader wins, the registration
		// must not hide an address from the check.
		switch {
		case err != nil:
			return fmt.Errorf("%w: host %q looks numeric but is not an IPv4 address", ErrInvalidURL, host)
		case g.CheckAddr(ip) != nil:
			return &BlockedError{Addr: ip, Reason: fmt.Sprintf("(spelled %q, a non-canonical form)", host), Confined: g.Confine}
		default:
			return fmt.Errorf("%w: host %q is a non-canonical IPv4 form; write it as %s", ErrInvalidURL, host, ip)
		}
	}
	h := strings.ToLower(strings.TrimSuffix(host, "."))
	if (h == "localhost" || strings.HasSuffix(h, ".localhost")) && !g.AllowPrivate {
		return &BlockedError{Reason: fmt.Sprintf("%s names the loopback interface", host), Confined: g.Confine}
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
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return fmt.Errorf("%w: port %s is outside 1-65535", ErrInvalidURL, p)
		}
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
		return &BlockedError{Reason: fmt.Sprintf("cannot parse dial address %q", address)}
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

// parseLooseIPv4 reads host the way inet_aton(3) and the WHATWG URL
// standard do: a host whose last dot-separated part is a number (decimal,
// 0x hex or 0-prefixed octal) is an IPv4 address of one to four parts, the
// last filling the remaining bytes ("127.1" is 127.0.0.1, "2130706433" is
// 127.0.0.1). numeric is false for a DNS name; err is set when host is
// numeric but no valid address.
func parseLooseIPv4(host string) (ip netip.Addr, numeric bool, err error) {
	parts := strings.Split(strings.TrimSuffix(strings.ToLower(host), "."), ".")
	if !endsInNumber(parts[len(parts)-1]) {
		return netip.Addr{}, false, nil
	}
	if len(parts) > 4 {
		return netip.Addr{}, true, errors.New("too many parts")
	}
	var v uint64
	for i, p := range parts {
		n, ok := parseIPv4Part(p)
		if !ok {
			return netip.Addr{}, true, fmt.Errorf("part %q", p)
		}
		if i < len(parts)-1 {
			if n > 255 {
				return netip.Addr{}, true, fmt.Errorf("part %q over 255", p)
			}
			v = v<<8 | n
			continue
		}
		rest := uint(8 * (4 - i))
		if n >= 1<<rest {
			return netip.Addr{}, true, fmt.Errorf("last part %q too large", p)
		}
		v = v<<rest | n
	}
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}), true, nil
}

// endsInNumber is the WHATWG URL test on a host's last part: all decimal
// digits, or 0x followed by hex digits only. Such a host is an IPv4
// address (or invalid), never a DNS name.
func endsInNumber(p string) bool {
	if rest, ok := strings.CutPrefix(p, "0x"); ok {
		return strings.Trim(rest, "0123456789abcdef") == ""
	}
	return p != "" && strings.Trim(p, "0123456789") == ""
}

// parseIPv4Part parses one part: 0x hex, 0-prefixed octal, or decimal.
func parseIPv4Part(p string) (uint64, bool) {
	base := 10
	switch {
	case p == "":
		return 0, false
	case strings.HasPrefix(p, "0x"):
		base, p = 16, p[2:]
		if p == "" {
			return 0, true
		}
	case len(p) > 1 && p[0] == '0':
		base, p = 8, p[1:]
	}
	n, err := strconv.ParseUint(p, base, 32)
	if err != nil {
		return 0, false
	}
	return n, true
}
