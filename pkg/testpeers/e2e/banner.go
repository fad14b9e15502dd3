package e2e

import (
	"bytes"
	"context"
	"fmt"
	"regexp"
	"sync"
)

var (
	listenLine = regexp.MustCompile(`listening on (127\.0\.0\.1:\d+)`)
	tokenLine  = regexp.MustCompile(`export MCPMON_TOKEN=(mcpmon_[a-z0-9]+)`)
)

// Banner is the stdout of an mcpmon process started with --listen
// 127.0.0.1:0: it keeps what was written and finds the address the process
// bound and the admin key it printed at its first start, so a test learns
// both from the process rather than choosing a port that may be taken.
type Banner struct {
	mu      sync.Mutex
	b       bytes.Buffer
	addr    string
	token   string
	scanned int           // bytes of b already scanned for the two lines
	changed chan struct{} // closed and replaced when addr or token is found
}

// NewBanner returns an empty Banner.
func NewBanner() *Banner { return &Banner{changed: make(chan struct{})} }

func (b *Banner) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	n, _ := b.b.Write(p)
	// Only complete lines not yet read are scanned: a chatty child costs
	// linear time, and a line split across writes is still found.
	all := b.b.Bytes()
	end := bytes.LastIndexByte(all, '\n') + 1
	if end <= b.scanned {
		return n, nil
	}
	lines := all[b.scanned:end]
	b.scanned = end
	found := false
	if m := listenLine.FindSubmatch(lines); m != nil && b.addr == "" {
		b.addr, found = string(m[1]), true
	}
	if m := tokenLine.FindSubmatch(lines); m != nil && b.token == "" {
		b.token, found = string(m[1]), true
	}
	if found {
		close(b.changed)
		b.changed = make(chan struct{})
	}
	return n, nil
}

// String is everything written so far.
func (b *Banner) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// Addr waits until the listen address has been printed, or until ctx is
// done or exited (if not nil) is closed.
func (b *Banner) Addr(ctx context.Context, exited <-chan struct{}) (string, error) {
	return b.wait(ctx, exited, "listen address", func() string { return b.addr })
}

// Token waits like Addr for the admin key printed at the first start.
func (b *Banner) Token(ctx context.Context, exited <-chan struct{}) (string, error) {
	return b.wait(ctx, exited, "admin key", func() string { return b.token })
}

func (b *Banner) wait(ctx context.Context, exited <-chan struct{}, what string, get func() string) (string, error) {
	for {
		b.mu.Lock()
		v, changed := get(), b.changed
		b.mu.Unlock()
		if v != "" {
			return v, nil
		}
		select {
		case <-changed:
		case <-exited:
			return "", fmt.Errorf("exited before printing its %s:\n%s", what, b.String())
		case <-ctx.Done():
			return "", fmt.Errorf("no %s printed (%w):\n%s", what, ctx.Err(), b.String())
		}
	}
}
