package agent

import (
	"context"
	"strings"
	"sync"
)

// servers are the API base URLs an agent may talk to, the replicas of one
// deployment, and the one in use. The agent is sticky: it keeps to one
// server until a request to it fails in a way another replica may not
// (retryable: the network, 5xx, 429, 408), then moves to the next, round
// the list. Sticky rather than round robin, so a healthy deployment sees
// each agent's polls and posts on one replica, whose location buffer
// leases its commands; a command leased on a replica that died is handed
// out by the next one (every replica schedules every endpoint), and a
// result posted twice is kept once by its deduplication ID.
type servers struct {
	mu   sync.Mutex
	urls []string
	cur  int
}

func newServers(first string, more []string) *servers {
	s := &servers{}
	for _, u := range append([]string{first}, more...) {
		s.urls = append(s.urls, strings.TrimRight(u, "/"))
	}
	return s
}

func (s *servers) len() int { return len(s.urls) }

// current is the base URL in use.
func (s *servers) current() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.urls[s.cur]
}

// failed moves on from base to the next server and returns it, unless
// another request has moved on from base already (then "": polls and
// posts fail together when a replica dies, and the list is stepped once).
func (s *servers) failed(base string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.urls) == 1 || s.urls[s.cur] != base {
		return ""
	}
	s.cur = (s.cur + 1) % len(s.urls)
	return s.urls[s.cur]
}

// failedOver moves the agent off base after err, if another server may
// answer differently.
func (a *agent) failedOver(ctx context.Context, base string, err error) {
	if ctx.Err() != nil || a.isRefused() || !retryable(err) {
		return
	}
	if next := a.srv.failed(base); next != "" {
		a.log.Warn("server failed; switching to the next", "failed", base, "next", next, "err", err)
	}
}
