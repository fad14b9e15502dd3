package testpeers

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/mcpmon/mcpmon/pkg/testpeers/e2e"
)

// Receiver is an e2e.Receiver owned by one test: closed at its end.
type Receiver struct {
	*e2e.Receiver
	t    testing.TB
	next int // the request Next returns next
}

// NewReceiver starts a receiver that records every request and answers it
// with what Answer set (204 until then), through middleware if not nil;
// see e2e.Receiver.
func NewReceiver(t testing.TB, middleware func(next http.Handler) http.Handler) *Receiver {
	t.Helper()
	r, err := e2e.StartReceiver(middleware)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	return &Receiver{Receiver: r, t: t}
}

// Next returns the first request that Next has not returned yet, waiting
// for it up to timeout before failing the test. Call it from the test's
// goroutine.
func (r *Receiver) Next(timeout time.Duration) e2e.Request {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(r.t.Context(), timeout)
	defer cancel()
	req, err := r.Wait(ctx, r.next)
	if err != nil {
		r.t.Fatalf("no request within %s (%d received)", timeout, len(r.Requests()))
	}
	r.next++
	return req
}

// Bodies returns the body of every request so far, in arrival order.
func (r *Receiver) Bodies() [][]byte {
	var out [][]byte
	for _, req := range r.Requests() {
		out = append(out, req.Body)
	}
	return out
}
