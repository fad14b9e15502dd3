package subscribe

import (
	"sync"

	"golang.org/x/time/rate"

	"github.com/mcpmon/mcpmon/pkg/clock"
)

// Rates of POST /status/{slug}/subscribe.
const (
	// perClient: a client (by address) may subscribe 5 times a minute,
	// 10 at once.
	perClient, perClientBurst = rate.Limit(5.0 / 60), 10
	// perPage: a page takes 60 subscribes a minute from everyone, 120 at
	// once; a flood from many addresses cannot mail past it.
	perPage, perPageBurst = rate.Limit(1), 120
	// maxTracked bounds the limiters kept; past it they are forgotten
	// (a client's bucket refills), so memory stays bounded.
	maxTracked = 10000
)

// limiter is a token bucket per client and per page.
type limiter struct {
	clk     clock.Clock
	mu      sync.Mutex
	clients map[string]*rate.Limiter
	pages   map[string]*rate.Limiter
}

func newLimiter(clk clock.Clock) *limiter {
	return &limiter{clk: clk, clients: map[string]*rate.Limiter{}, pages: map[string]*rate.Limiter{}}
}

// allow takes one subscribe of client to page, or reports it over a rate.
func (l *limiter) allow(client, page string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.clk.Now()
	c := bucket(l.clients, client, perClient, perClientBurst)
	p := bucket(l.pages, page, perPage, perPageBurst)
	if !c.AllowN(now, 1) {
		return false
	}
	return p.AllowN(now, 1)
}

func bucket(m map[string]*rate.Limiter, k string, r rate.Limit, b int) *rate.Limiter {
	lim, ok := m[k]
	if !ok {
		if len(m) >= maxTracked {
			clear(m)
		}
		lim = rate.NewLimiter(r, b)
		m[k] = lim
	}
	return lim
}
