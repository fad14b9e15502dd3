package auth

import (
	"net"
	"net/netip"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Failed authentications per client. A client that presents keys the
// keyring refuses (unknown, expired, revoked, malformed, or none) spends a
// token of its address's bucket; once the bucket is empty the API refuses
// it with 429 before looking at its key, so a spray of random keys costs
// at most Burst store reads per address and then one per refill. Clients
// with good keys never touch the buckets.

// Defaults of FailureLimits.
const (
	// DefaultFailureBurst failed attempts an address may make at once: a
	// person mistyping, a script with an old key, retried a few times.
	DefaultFailureBurst = 20
	// DefaultFailureRate refills one attempt every 6 s (10 a minute).
	DefaultFailureRate = rate.Limit(1.0 / 6)
	// DefaultMaxFailureClients bounds the addresses tracked; the least
	// recently seen is forgotten first.
	DefaultMaxFailureClients = 10000
)

// FailureLimits configure a FailureLimiter. Zero values take the defaults.
type FailureLimits struct {
	Rate       rate.Limit // refill, attempts per second
	Burst      int
	MaxClients int
}

// FailureLimiter keeps a token bucket of failed authentications per client
// address, in a bounded map. It is safe for concurrent use. Time is the
// caller's (the API's injected clock), so a test steps it.
type FailureLimiter struct {
	rate  rate.Limit
	burst int

	mu      sync.Mutex
	clients *lru[string, *rate.Limiter]
}

// NewFailureLimiter returns a limiter with l's limits.
func NewFailureLimiter(l FailureLimits) *FailureLimiter {
	if l.Rate <= 0 {
		l.Rate = DefaultFailureRate
	}
	if l.Burst <= 0 {
		l.Burst = DefaultFailureBurst
	}
	if l.MaxClients <= 0 {
		l.MaxClients = DefaultMaxFailureClients
	}
	return &FailureLimiter{rate: l.Rate, burst: l.Burst, clients: newLRU[string, *rate.Limiter](l.MaxClients)}
}

// Blocked reports whether client has no failed attempt left at now, and if
// so how long until it has one.
func (f *FailureLimiter) Blocked(client string, now time.Time) (time.Duration, bool) {
	f.mu.Lock()
	lim, ok := f.clients.get(client)
	f.mu.Unlock()
	if !ok {
		return 0, false
	}
	tokens := lim.TokensAt(now)
	if tokens >= 1 {
		return 0, false
	}
	return time.Duration((1 - tokens) / float64(f.rate) * float64(time.Second)), true
}

// Failed spends one of client's attempts at now.
func (f *FailureLimiter) Failed(client string, now time.Time) {
	f.mu.Lock()
	lim, ok := f.clients.get(client)
	if !ok {
		lim = rate.NewLimiter(f.rate, f.burst)
		f.clients.put(client, lim)
	}
	f.mu.Unlock()
	lim.AllowN(now, 1)
}

// ClientAddress is the address failures are counted under, from a
// request's RemoteAddr ("ip:port"): the IP for IPv4, the /64 network for
// IPv6 (one host commonly holds a whole /64, so counting single addresses
// would let it start over 2^64 times). X-Forwarded-For is not read: any
// client can write it. Behind a proxy every client shares the proxy's
// address.
func ClientAddress(remoteAddr string) string {
	host, _, err := net.SplitHostPort(remoteAddr)
	if err != nil {
		host = remoteAddr
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return host
	}
	ip = ip.Unmap().WithZone("")
	if ip.Is4() {
		return ip.String()
	}
	p, _ := ip.Prefix(64)
	return p.String()
}
