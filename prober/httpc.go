package prober

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/netip"
	"net/url"
	"sync"
	"time"
)

// httpClient is the probe's minimal HTTP/1.1 client: the calling goroutine
// writes the request and reads the answer on the connection itself, with no
// transport goroutines, no shared pool and no connection kept past the probe.
// It exists because a probe is a handful of requests on one fresh connection,
// where net/http.Transport's per-connection read and write goroutines and
// their hand-offs cost more CPU than the requests (see BenchmarkProbe). It
// reuses the standard library's wire code (Request.Write, ReadResponse) and
// adds what a probe needs: the SSRF-guarded dialer, bounded reads, the
// deadline from the probe's context, httptrace hooks for dns / connect / tls,
// and redirects re-validated hop by hop.
type httpClient struct {
	r *run

	mu   sync.Mutex
	idle *hconn
	all  []*hconn

	// lastURL and lastKey remember connKey of the URL requested last
	// (nearly always the endpoint's). Only the probe's goroutine dials.
	lastURL *url.URL
	lastKey string
}

// hconn is one connection of a probe.
type hconn struct {
	c      net.Conn
	ctx    context.Context
	stop   func() bool // unhooks the context's cancellation
	key    string
	budget *capReader
	br     *bufio.Reader
	bw     *bufio.Writer
}

// aLongTimeAgo is a deadline that fails pending I/O at once.
var aLongTimeAgo = time.Unix(1, 0)

// headerBudget bounds the status line and headers of one response.
const headerBudget = 64 << 10

func (h *httpClient) closeAll() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, c := range h.all {
		c.stop()
		c.c.Close()
		h.recycle(c)
	}
	h.all, h.idle = nil, nil
}

func connKey(u *url.URL) string {
	port := u.Port()
	if port == "" {
		port = "80"
		if u.Scheme == "https" {
			port = "443"
		}
	}
	return u.Scheme + "://" + net.JoinHostPort(u.Hostname(), port)
}

func (h *httpClient) getConn(ctx context.Context, u *url.URL) (*hconn, error) {
	key := h.lastKey
	if u != h.lastURL {
		key = connKey(u)
		h.lastURL, h.lastKey = u, key
	}
	h.mu.Lock()
	if h.idle != nil && h.idle.key == key && h.idle.ctx == ctx {
		c := h.idle
		h.idle = nil
		h.mu.Unlock()
		return c, nil
	}
	h.mu.Unlock()

	p := h.r.p
	d := net.Dialer{KeepAlive: -1, Resolver: p.opts.Resolver, Control: p.guard.Control}
	dl, hasDL := ctx.Deadline()
	dctx := ctx
	if _, err := netip.ParseAddr(u.Hostname()); err == nil && hasDL {
		// A cancellable context makes net start a watcher goroutine per
		// connect, which costs more CPU than a loopback connect. With a
		// literal address (no resolver that might ignore the deadline) the
		// probe's deadline alone bounds the dial, through the socket's write
		// deadline.
		dctx = deadlineOnly{ctx}
	} else if !hasDL {
		d.Timeout = p.opts.DefaultTimeout
	}
	addr := key[len(u.Scheme)+3:]
	c, err := d.DialContext(dctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	if u.Scheme == "https" {
		cfg := h.r.tlsConfig()
		cfg.ServerName = u.Hostname()
		tc := tls.Client(c, cfg)
		trace := httptrace.ContextClientTrace(ctx)
		if trace != nil && trace.TLSHandshakeStart != nil {
			trace.TLSHandshakeStart()
		}
		err := tc.HandshakeContext(ctx)
		if trace != nil && trace.TLSHandshakeDone != nil {
			trace.TLSHandshakeDone(tc.ConnectionState(), err)
		}
		if err != nil {
			c.Close()
			return nil, err
		}
		c = tc
	}
	// One deadline and one cancellation hook per connection: every request
	// of a probe shares the probe's context.
	if hasDL {
		_ = c.SetDeadline(dl)
	}
	hc := &hconn{c: c, ctx: ctx, key: key, budget: &capReader{r: c}}
	hc.stop = context.AfterFunc(ctx, func() { _ = c.SetDeadline(aLongTimeAgo) })
	hc.br = p.getReader(hc.budget)
	hc.bw = p.getWriter(c)
	h.mu.Lock()
	h.all = append(h.all, hc)
	h.mu.Unlock()
	return hc, nil
}

func (h *httpClient) drop(hc *hconn) {
	hc.stop()
	hc.c.Close()
	h.mu.Lock()
	defer h.mu.Unlock()
	for i, c := range h.all {
		if c == hc {
			h.all = append(h.all[:i], h.all[i+1:]...)
			h.recycle(hc)
			break
		}
	}
}

// recycle hands a closed connection's buffers back for the next one. Only
// a connection still in h.all is recycled, and only once: closing a
// response body after closeAll finds nothing to recycle.
func (h *httpClient) recycle(hc *hconn) {
	h.r.p.putReader(hc.br)
	h.r.p.putWriter(hc.bw)
	hc.br, hc.bw = nil, nil
}

func (h *httpClient) release(hc *hconn) {
	h.mu.Lock()
	old := h.idle
	h.idle = hc
	h.mu.Unlock()
	if old != nil {
		h.drop(old)
	}
}

// roundTrip sends req on a connection and returns the response; its body
// hands the connection back when read to the end.
func (h *httpClient) roundTrip(req *http.Request) (*http.Response, error) {
	return h.exchange(req.Context(), req.URL, req, req.Write)
}

// exchange writes a request for u with write on a connection and reads the
// answer to req (whose method decides how the body is framed).
func (h *httpClient) exchange(ctx context.Context, u *url.URL, req *http.Request, write func(io.Writer) error) (*http.Response, error) {
	hc, err := h.getConn(ctx, u)
	if err != nil {
		return nil, err
	}
	hc.budget.n = headerBudget + h.r.p.opts.MaxBody
	if err := write(hc.bw); err == nil {
		err = hc.bw.Flush()
	}
	if err != nil {
		h.drop(hc)
		return nil, err
	}
	resp, err := h.readFinal(hc, req)
	if err != nil {
		h.drop(hc)
		if errors.Is(err, errTooLarge) {
			return nil, fmt.Errorf("response headers: %w", err)
		}
		return nil, err
	}
	resp.Body = &connBody{rc: resp.Body, h: h, hc: hc, reuse: !resp.Close, eof: resp.Body == http.NoBody}
	return resp, nil
}

// Bounds on the interim (1xx) responses skipped before the final one:
// the count net/http.Transport allows, and the bytes of their status
// lines and headers together (on top of the final response's own
// headerBudget). The probe's deadline bounds the time they take.
const (
	max1xxResponses = 5
	max1xxBytes     = headerBudget
)

// readFinal reads the final response to req, skipping interim 1xx
// responses (103 Early Hints from a CDN, 100 Continue, 102 Processing), as
// RFC 9110 §15.2 asks of a client: taken for the answer, one would leave
// the real answer in the buffer to be read as the next request's. 101
// Switching Protocols is final (the probe never asks for an upgrade, so it
// is an unexpected status).
func (h *httpClient) readFinal(hc *hconn, req *http.Request) (*http.Response, error) {
	interimBytes := int64(0)
	for n := 0; ; n++ {
		before := hc.budget.n + int64(hc.br.Buffered())
		resp, err := http.ReadResponse(hc.br, req)
		if err != nil || resp.StatusCode < 100 || resp.StatusCode > 199 || resp.StatusCode == http.StatusSwitchingProtocols {
			return resp, err
		}
		if n == max1xxResponses {
			return nil, failf(ClassProtocolError, resp.StatusCode, "more than %d interim (1xx) responses before the final one", max1xxResponses)
		}
		// What the interim response took off the connection goes back
		// into the budget, so the final response keeps all of its own;
		// max1xxBytes bounds the interim ones together.
		used := before - (hc.budget.n + int64(hc.br.Buffered()))
		if interimBytes += used; interimBytes > max1xxBytes {
			return nil, failf(ClassProtocolError, resp.StatusCode, "interim (1xx) responses exceed %d KiB of headers", max1xxBytes>>10)
		}
		hc.budget.n += used
	}
}

// doFast sends one of the probe's own requests (see reqwire.go) and follows
// redirects as Do does.
func (h *httpClient) doFast(ctx context.Context, method string, u *url.URL, body []byte, rpc string) (*http.Response, error) {
	r := h.r
	uri := r.requestURI(u)
	if !fastWritable(u.Host, uri) {
		return h.Do(r.httpRequest(ctx, method, u, body, rpc))
	}
	resp, err := h.exchange(ctx, u, &http.Request{Method: method, URL: u}, func(w io.Writer) error {
		return r.writeRequest(w.(*bufio.Writer), method, u.Host, uri, body, rpc)
	})
	if err != nil || !isRedirect(resp) {
		return resp, err
	}
	return h.follow(r.httpRequest(ctx, method, u, body, rpc), resp)
}

func isRedirect(resp *http.Response) bool {
	switch resp.StatusCode {
	case http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther, http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
		return resp.Header.Get("Location") != ""
	}
	return false
}

// connBody returns its connection for reuse once the body hit EOF; closed
// early, it drains for at most a moment (the rest of an SSE answer is often
// already in flight) and otherwise drops the connection.
type connBody struct {
	rc    io.ReadCloser
	h     *httpClient
	hc    *hconn
	reuse bool
	eof   bool
	done  bool
}

func (b *connBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	if err == io.EOF {
		b.eof = true
	}
	return n, err
}

func (b *connBody) Close() error {
	if b.done {
		return nil
	}
	b.done = true
	if !b.eof && b.reuse {
		// The 1 ms read deadline is armed by the first read that reaches
		// the connection: the rest of an SSE answer (its closing chunk)
		// is usually buffered already, and arming and disarming a deadline
		// costs timer updates and often a poller wake-up.
		b.hc.budget.drain = b.hc.c
		if n, err := io.CopyN(io.Discard, b.rc, 4<<10); err == io.EOF && n < 4<<10 {
			b.eof = true
		}
		armed := b.hc.budget.armed
		b.hc.budget.drain, b.hc.budget.armed = nil, false
		if armed {
			if dl, hasDL := b.hc.ctx.Deadline(); hasDL {
				_ = b.hc.c.SetReadDeadline(dl)
			} else {
				_ = b.hc.c.SetReadDeadline(time.Time{})
			}
		}
	}
	b.rc.Close()
	if b.eof && b.reuse {
		b.h.release(b.hc)
	} else {
		b.h.drop(b.hc)
	}
	return nil
}

// Do sends req, following up to DefaultMaxRedirects redirects. Every hop is
// re-checked against the guard before any dial, and the endpoint's secret
// headers are dropped when a hop leaves the original origin.
func (h *httpClient) Do(req *http.Request) (*http.Response, error) {
	resp, err := h.roundTrip(req)
	if err != nil {
		return nil, err
	}
	return h.follow(req, resp)
}

// follow handles resp, the answer to req: a redirect is followed (see Do),
// anything else returned.
func (h *httpClient) follow(req *http.Request, resp *http.Response) (*http.Response, error) {
	origin := connKey(req.URL)
	for hops := 0; ; hops++ {
		if hops > 0 {
			var err error
			if resp, err = h.roundTrip(req); err != nil {
				return nil, err
			}
		}
		switch resp.StatusCode {
		case http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther, http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
		default:
			return resp, nil
		}
		loc := resp.Header.Get("Location")
		if loc == "" {
			return resp, nil
		}
		resp.Body.Close()
		if hops >= DefaultMaxRedirects {
			return nil, failf(ClassProtocolError, resp.StatusCode, "stopped after %d redirects", hops+1)
		}
		u, err := req.URL.Parse(loc)
		if err != nil {
			return nil, failf(ClassProtocolError, resp.StatusCode, "redirect Location is not a URL")
		}
		if err := h.r.p.guard.CheckURL(u); err != nil {
			pe := failf(ClassBlockedTarget, resp.StatusCode, "redirect to %s refused: %v", fromTarget(u.Host), err)
			pe.cause = err // what was refused, for the operator's log (blockedDetail)
			return nil, pe
		}
		method := req.Method
		var body io.ReadCloser
		if resp.StatusCode == http.StatusTemporaryRedirect || resp.StatusCode == http.StatusPermanentRedirect {
			if req.GetBody != nil {
				if body, err = req.GetBody(); err != nil {
					return nil, err
				}
			}
		} else if method != http.MethodGet && method != http.MethodHead {
			method = http.MethodGet
		}
		next, err := http.NewRequestWithContext(req.Context(), method, u.String(), body)
		if err != nil {
			return nil, failf(ClassProtocolError, resp.StatusCode, "redirect: %v", err)
		}
		next.ContentLength, next.GetBody = req.ContentLength, req.GetBody
		if body == nil {
			next.ContentLength, next.GetBody = 0, nil
		}
		next.Header = req.Header.Clone()
		if method != req.Method {
			next.Header.Del("Content-Type")
		}
		if connKey(u) != origin {
			for k := range h.r.ep.Headers {
				next.Header.Del(k)
			}
			next.Header.Del("Authorization")
			next.Header.Del("Cookie")
		}
		req = next
	}
}

// deadlineOnly is its parent's deadline and values without its
// cancellation: Done is nil, so net.Dialer bounds the connect with the
// deadline alone instead of watching the context from another goroutine.
type deadlineOnly struct{ parent context.Context }

func (c deadlineOnly) Deadline() (time.Time, bool) { return c.parent.Deadline() }
func (deadlineOnly) Done() <-chan struct{}         { return nil }
func (deadlineOnly) Err() error                    { return nil }
func (c deadlineOnly) Value(key any) any           { return c.parent.Value(key) }
