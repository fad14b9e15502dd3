// Package post owns the one HTTP exchange every HTTP alert sink makes: it
// sends a request body to a receiver and turns the answer into the error
// contract of alert.Sink (nil when delivered, alert.ErrPermanent when a retry
// cannot help, *alert.RetryAfterError on 429, a plain error otherwise).
//
// Data enters as a Request (sink name, method, URL, headers, body and the
// secrets that must never leave in an error) and leaves as a Response or an
// error. Errors name the sink, never the URL: webhook URLs embed tokens, and
// net/http's *url.Error would print them.
package post

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/mcpmon/mcpmon/pkg/alert"
	"github.com/mcpmon/mcpmon/pkg/model"
)

const (
	// DefaultRetryAfter is used for a 429 without a usable Retry-After.
	DefaultRetryAfter = 30 * time.Second
	// MaxRetryAfter caps what a receiver can ask for, so one sink cannot
	// park a message for longer than its visibility can be extended.
	MaxRetryAfter = time.Hour
	// maxBodyKeep is how much of a response body is kept for errors/tests.
	maxBodyKeep = 4 << 10
	// maxSnippet is how much of the response body an error message quotes.
	maxSnippet = 200
)

// Request is one delivery attempt.
type Request struct {
	Sink   string // sink name, used in errors
	Method string // default POST
	URL    string
	Header http.Header
	Body   []byte
	// Secrets are scrubbed from every error message (the response body of
	// a misbehaving receiver may echo them).
	Secrets []string
	// Now reads the clock for HTTP-date Retry-After values; nil is time.Now.
	Now func() time.Time
}

// Response is what the receiver answered with a 2xx.
type Response struct {
	Status int
	Header http.Header
	Body   []byte // at most 4 KiB
}

// Do sends r with c and classifies the answer. A nil c is an error: every
// sink must bring a client with a timeout.
func Do(ctx context.Context, c *http.Client, r Request) (*Response, error) {
	if c == nil {
		return nil, fmt.Errorf("sink %q: no HTTP client configured", r.Sink)
	}
	method := r.Method
	if method == "" {
		method = http.MethodPost
	}
	req, err := http.NewRequestWithContext(ctx, method, r.URL, bytes.NewReader(r.Body))
	if err != nil {
		// url.Parse errors quote the URL: do not wrap them.
		return nil, fmt.Errorf("sink %q: %w: invalid receiver URL (check the sink's url setting)", r.Sink, alert.ErrPermanent)
	}
	for k, vs := range r.Header {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	if req.Header.Get("Content-Type") == "" && len(r.Body) > 0 {
		req.Header.Set("Content-Type", "application/json")
	}
	if req.Header.Get("User-Agent") == "" {
		req.Header.Set("User-Agent", "mcpmon-alerter")
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, transportError(r, err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxBodyKeep))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20)) // let the connection be reused
	out := &Response{Status: resp.StatusCode, Header: resp.Header, Body: body}
	if err := Classify(r, resp.StatusCode, resp.Header, body); err != nil {
		return out, err
	}
	return out, nil
}

// transportError strips the URL that net/http puts into *url.Error and keeps
// the cause (dial error, timeout, context cancellation) for errors.Is.
func transportError(r Request, err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return &sinkError{sink: r.Sink, msg: "request failed: " + Scrub(ScrubNetwork(err.Error(), err), r.URL, r.Secrets), cause: err}
}

// ScrubNetwork removes from s, the text of err or of an error wrapping it,
// the network facts err carries that are not the sink owner's to see: the
// resolver's address of a *net.DNSError ("lookup x on 10.0.0.2:53: …") and
// the local and remote socket addresses of a *net.OpError ("dial tcp
// 10.1.2.3:443: …"). Sink errors are stored on deliveries that tenants
// read; what is left (the host from the sink's own URL, the operation, the
// cause) is what an owner can act on.
func ScrubNetwork(s string, err error) string {
	for e := range errorTree(err) {
		switch t := e.(type) {
		case *net.DNSError:
			if t.Server != "" {
				s = strings.ReplaceAll(s, " on "+t.Server, "")
			}
		case *net.OpError:
			if t.Source != nil {
				s = strings.ReplaceAll(s, " "+t.Source.String()+"->", " ")
			}
			if t.Addr != nil {
				s = strings.ReplaceAll(s, " "+t.Addr.String()+":", ":")
			}
		}
	}
	return s
}

// errorTree yields err and every error it wraps, depth first.
func errorTree(err error) func(yield func(error) bool) {
	return func(yield func(error) bool) {
		var walk func(error) bool
		walk = func(e error) bool {
			if e == nil {
				return true
			}
			if !yield(e) {
				return false
			}
			switch u := e.(type) {
			case interface{ Unwrap() error }:
				return walk(u.Unwrap())
			case interface{ Unwrap() []error }:
				for _, c := range u.Unwrap() {
					if !walk(c) {
						return false
					}
				}
			}
			return true
		}
		walk(err)
	}
}

// sinkError carries a scrubbed message but unwraps to the original cause so
// callers can still test errors.Is(err, context.DeadlineExceeded).
type sinkError struct {
	sink  string
	msg   string
	cause error
}

func (e *sinkError) Error() string { return fmt.Sprintf("sink %q: %s", e.sink, e.msg) }
func (e *sinkError) Unwrap() error { return e.cause }

// Classify maps an HTTP status to the alert.Sink error contract: 2xx → nil;
// 429 → *alert.RetryAfterError; 408 and 5xx → retryable; other 4xx (and
// 1xx/3xx, which a webhook receiver must not answer) → alert.ErrPermanent.
func Classify(r Request, status int, h http.Header, body []byte) error {
	switch {
	case status >= 200 && status < 300:
		return nil
	case status == http.StatusTooManyRequests:
		now := time.Now
		if r.Now != nil {
			now = r.Now
		}
		after := RetryAfter(h.Get("Retry-After"), now())
		return &alert.RetryAfterError{After: after, Err: fmt.Errorf("sink %q: receiver rate-limited the alert (HTTP 429)%s", r.Sink, snippet(r, body))}
	case status == http.StatusRequestTimeout || status >= 500:
		return fmt.Errorf("sink %q: receiver failed with HTTP %d%s; will retry", r.Sink, status, snippet(r, body))
	default:
		return fmt.Errorf("sink %q: %w: receiver rejected the alert with HTTP %d%s; fix the sink configuration or payload", r.Sink, alert.ErrPermanent, status, snippet(r, body))
	}
}

// RetryAfter parses a Retry-After header (delta-seconds or HTTP-date) into a
// wait in [1s, MaxRetryAfter]; a missing or unusable value is DefaultRetryAfter.
func RetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return DefaultRetryAfter
	}
	var d time.Duration
	if secs, err := strconv.ParseFloat(v, 64); err == nil {
		if secs < 0 {
			return DefaultRetryAfter
		}
		d = time.Duration(secs * float64(time.Second))
	} else if t, err := http.ParseTime(v); err == nil {
		d = t.Sub(now)
	} else {
		return DefaultRetryAfter
	}
	return min(max(d, time.Second), MaxRetryAfter)
}

func snippet(r Request, body []byte) string {
	s := strings.TrimSpace(string(body))
	if s == "" {
		return ""
	}
	if len(s) > maxSnippet {
		s = s[:maxSnippet] + "…"
	}
	return ": " + strings.Join(strings.Fields(Scrub(s, r.URL, r.Secrets)), " ")
}

// Scrub replaces every secret, the whole URL, and the URL's path and query
// (where tokens live) in s with "<redacted>" (model.Scrub).
func Scrub(s, rawURL string, secrets []string) string {
	candidates := append([]string(nil), secrets...)
	if rawURL != "" {
		candidates = append(candidates, rawURL)
		if u, err := url.Parse(rawURL); err == nil {
			if u.Path != "" && u.Path != "/" {
				candidates = append(candidates, u.Path, u.EscapedPath())
			}
			// Tokens are usually one path segment or one query value;
			// a receiver echoing just that must be caught too.
			for _, seg := range strings.Split(u.Path, "/") {
				if len(seg) >= 8 {
					candidates = append(candidates, seg)
				}
			}
			if u.RawQuery != "" {
				candidates = append(candidates, u.RawQuery)
				for _, vs := range u.Query() {
					for _, v := range vs {
						if len(v) >= 8 {
							candidates = append(candidates, v)
						}
					}
				}
			}
			if p, ok := u.User.Password(); ok {
				candidates = append(candidates, p)
			}
		}
	}
	kept := candidates[:0]
	for _, c := range candidates {
		if len(c) >= 4 { // short strings would redact ordinary words
			kept = append(kept, c)
		}
	}
	return model.Scrub(s, kept...)
}

// Client returns a copy of c (a new client when c is nil) whose Timeout is
// at most timeout, so no sink can hang on a receiver that never answers, and
// which does not follow redirects: a POST turned into a GET would "succeed"
// without delivering, and a redirect to another host would carry the body
// (and its secrets) somewhere the operator did not configure.
func Client(c *http.Client, timeout time.Duration) *http.Client {
	var cp http.Client
	if c != nil {
		cp = *c
	}
	if cp.Timeout <= 0 || cp.Timeout > timeout {
		cp.Timeout = timeout
	}
	cp.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &cp
}
