package e2e

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"sync"
	"time"
)

// MaxReceivedBody bounds what the Receiver reads of one request; a larger
// body is cut there (a sink's payload is far smaller).
const MaxReceivedBody = 8 << 20

// Request is one request a Receiver got, with the status it answered.
type Request struct {
	At       time.Time
	Method   string
	Path     string // URL.Path
	RawQuery string
	Header   http.Header
	Body     []byte
	Status   int // what the receiver answered
}

// Receiver is an HTTP server on 127.0.0.1 that stands in for whatever an
// alert sink or webhook talks to: it records every request, in arrival
// order, with the status it answered. It answers with what Answer set (204
// with no body until then), through a middleware if it has one: a stand-in
// that checks the request (and may answer itself) in front of that answer,
// or replaces it (an API stand-in with its own state). The middleware reads
// the body again from the start.
type Receiver struct {
	URL string // http://127.0.0.1:PORT, without a trailing slash

	srv     *http.Server
	handler http.Handler // the middleware around reply

	mu      sync.Mutex
	reqs    []Request
	status  int
	header  http.Header
	body    string
	arrived chan struct{} // closed and replaced on every request
}

// StartReceiver listens on a free loopback port and serves until Close.
// middleware may be nil.
func StartReceiver(middleware func(next http.Handler) http.Handler) (*Receiver, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r := &Receiver{URL: "http://" + ln.Addr().String(), status: http.StatusNoContent, arrived: make(chan struct{})}
	r.handler = http.HandlerFunc(r.reply)
	if middleware != nil {
		r.handler = middleware(r.handler)
	}
	r.srv = &http.Server{Handler: http.HandlerFunc(r.serve), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = r.srv.Serve(ln) }()
	return r, nil
}

// Close stops the server and ends requests in flight.
func (r *Receiver) Close() { _ = r.srv.Close() }

// Answer sets what later requests are answered (past a middleware that
// passes them on).
func (r *Receiver) Answer(status int, header http.Header, body string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.status, r.header, r.body = status, header, body
}

// Requests returns every request so far, in arrival order.
func (r *Receiver) Requests() []Request {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Request(nil), r.reqs...)
}

// Wait returns the n-th request (counting from 0) once it has arrived, or
// ctx's error.
func (r *Receiver) Wait(ctx context.Context, n int) (Request, error) {
	for {
		r.mu.Lock()
		reqs, arrived := r.reqs, r.arrived
		r.mu.Unlock()
		if n < len(reqs) {
			return reqs[n], nil
		}
		select {
		case <-arrived:
		case <-ctx.Done():
			return Request{}, ctx.Err()
		}
	}
}

func (r *Receiver) serve(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(req.Body, MaxReceivedBody))
	got := Request{At: time.Now(), Method: req.Method, Path: req.URL.Path, RawQuery: req.URL.RawQuery,
		Header: req.Header.Clone(), Body: body}
	req.Body = io.NopCloser(bytes.NewReader(body))
	sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
	r.handler.ServeHTTP(sw, req)
	// Recorded before serve returns, which is before the answer is sent
	// (unless a handler flushes): a client that has its answer finds its
	// request in Requests.
	got.Status = sw.status
	r.record(got)
}

// reply answers with what Answer set.
func (r *Receiver) reply(w http.ResponseWriter, _ *http.Request) {
	r.mu.Lock()
	status, header, answer := r.status, r.header, r.body
	r.mu.Unlock()
	for k, vs := range header {
		w.Header()[k] = vs
	}
	w.WriteHeader(status)
	_, _ = io.WriteString(w, answer)
}

func (r *Receiver) record(got Request) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reqs = append(r.reqs, got)
	close(r.arrived)
	r.arrived = make(chan struct{})
}

// statusWriter remembers the status a handler answered.
type statusWriter struct {
	http.ResponseWriter
	status int
	wrote  bool
}

func (s *statusWriter) WriteHeader(code int) {
	if !s.wrote {
		s.status, s.wrote = code, true
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusWriter) Write(p []byte) (int, error) {
	s.wrote = true
	return s.ResponseWriter.Write(p)
}
