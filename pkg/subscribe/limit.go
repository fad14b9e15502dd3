package subscribe

import (
	"crypto/sha256"
	"net/netip"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/mcpmon/mcpmon/pkg/clock"
)

// Rates of POST /status/{slug}/subscribe.
const (
	// perClient: a client may subscribe 5 times a minute, 10 at once. A
	// client is its IPv4 address, or its IPv6 /64: one host is commonly
	// given a whole /64, and counted by address it had 2^64 buckets.
	perClient, perClientBurst = rate.Limit(5.0 / 60), 10
	// perPage: a page takes 60 subscribes a minute from everyone, 120 at
	// once; a flood from many addresses cannot mail past it.
	perPage, perPageBurst = rate.Limit(1), 120
	// perAddress: one address is sent at most 5 confirmation mails at
	// once and one an hour after that, whatever page and client asked:
	// subscribing a stranger to every page of the deployment, from many
	// clients, mails them no more often. A subscribe past it is answered
	// as any other and mails nothing (the address is not stored either,
	// so a later subscribe mails).
	perAddress, perAddressBurst = rate.Limit(1.0 / 3600), 5
	// maxTracked bounds the limiters kept per kind. Past it, the buckets
	// that are full again (a client or address idle long enough, which a
	// new bucket equals) are dropped; if none is, all are, so memory
	// stays bounded.
	maxTracked = 10000
)

// limiter is a token bucket per client, per page and per address mailed.
type limiter struct {
	clk       clock.Clock
	mu        sync.Mutex
	clients   map[string]*rate.Limiter
	pages     map[string]*rate.Limiter
	addresses map[[sha256.Size]byte]*rate.Limiter
}

func newLimiter(clk clock.Clock) *limiter {
	return &limiter{clk: clk, clients: map[string]*rate.Limiter{}, pages: map[string]*rate.Limiter{},
		addresses: map[[sha256.Size]byte]*rate.Limiter{}}
}

// allow takes one subscribe of client (a remote address, without its
// port) to page, or reports it over a rate.
func (l *limiter) allow(client, page string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.clk.Now()
	c := bucket(l.clients, clientKey(client), perClient, perClientBurst, now)
	p := bucket(l.pages, page, perPage, perPageBurst, now)
	if !c.AllowN(now, 1) {
		return false
	}
	return p.AllowN(now, 1)
}

// allowMail takes one confirmation mail to the normalised address, or
// reports the address over its rate. The map holds a hash of it, never
// the address.
func (l *limiter) allowMail(address string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.clk.Now()
	return bucket(l.addresses, sha256.Sum256([]byte(address)), perAddress, perAddressBurst, now).AllowN(now, 1)
}

// clientKey is the bucket of a remote address: an IPv4 address (an
// IPv4-mapped IPv6 one unmapped), an IPv6 address's /64, or the text as
// it is when it is not an address.
func clientKey(client string) string {
	a, err := netip.ParseAddr(client)
	if err != nil {
		return client
	}
	a = a.Unmap().WithZone("")
	if a.Is4() {
		return a.String()
	}
	return netip.PrefixFrom(a, 64).Masked().String()
}

func bucket[K comparable](m map[K]*rate.Limiter, k K, r rate.Limit, b int, now time.Time) *rate.Limiter {
	lim, ok := m[k]
	if !ok {
		if len(m) >= maxTracked {
			for key, l := range m {
				if l.TokensAt(now) >= float64(l.Burst()) {
					delete(m, key)
				}
			}
			if len(m) >= maxTracked {
				clear(m)
			}
		}
		lim = rate.NewLimiter(r, b)
		m[k] = lim
	}
	return lim
}
