package prober

// legacy.go owns the 2024-11-05 HTTP+SSE transport: the GET stream that
// carries every answer and the endpoint its requests are POSTed to. The
// handshake over it is handshake.go's.

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"net/url"
	"os"

	"github.com/mcpmon/mcpmon/pkg/msg"
)

// legacyStream is an open 2024-11-05 HTTP+SSE session: the GET stream that
// carries every answer, and the endpoint URL the requests are POSTed to.
type legacyStream struct {
	resp     *http.Response
	endpoint *url.URL
	msgs     chan rpcMessage
	done     chan struct{}
	err      error // why the stream ended; read after done is closed
	cancel   context.CancelFunc
}

// legacyProbe runs the 2024-11-05 handshake: GET for the endpoint event,
// then the initialize handshake (handshake.go), POSTed there and answered on
// the stream.
func (r *run) legacyProbe(ctx context.Context) error {
	r.res.Transport = TransportSSE
	r.version = ""
	if err := r.timed(msg.PhaseInitialize, func() error { return r.openLegacy(ctx) }); err != nil {
		return err
	}
	return r.handshake(ctx, Version20241105)
}

// openLegacy GETs the stream and waits for its endpoint event.
func (r *run) openLegacy(ctx context.Context) error {
	sctx, cancel := context.WithCancel(ctx)
	resp, err := r.client.doFast(sctx, http.MethodGet, r.u, nil, "")
	if err != nil {
		cancel()
		return r.stepFail(ctx, "GET (SSE)", err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		defer cancel()
		defer resp.Body.Close()
		return r.statusError(ctx, resp, "GET (SSE)")
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != "text/event-stream" {
		cancel()
		resp.Body.Close()
		if mt == "" {
			return failf(ClassNotMCP, resp.StatusCode, "GET (SSE): HTTP %d without a content type: not an MCP endpoint", resp.StatusCode)
		}
		return failf(ClassNotMCP, resp.StatusCode, "GET (SSE): HTTP %d with content type %q: not an MCP endpoint", resp.StatusCode, fromTarget(mt))
	}
	if pe := encodingError(resp, "GET (SSE)"); pe != nil {
		cancel()
		resp.Body.Close()
		return pe
	}
	sr := newSSEReader(&capReader{r: resp.Body, n: r.p.opts.MaxBody}, int(r.p.opts.MaxBody), r.p.opts.MaxSSEEvents)
	ls := &legacyStream{resp: resp, msgs: make(chan rpcMessage, 16), done: make(chan struct{}), cancel: cancel}
	for ls.endpoint == nil {
		ev, err := sr.Next()
		if err != nil {
			cancel()
			resp.Body.Close()
			if err == io.EOF {
				return failf(ClassProtocolError, resp.StatusCode, "GET (SSE): stream ended before the endpoint event")
			}
			pe := r.readFail(ctx, "GET (SSE)", err)
			if pe.class == ClassTimeout {
				pe.format, pe.args = "GET (SSE): no endpoint event within the timeout (%s)", []any{r.timeout}
			}
			return pe
		}
		if ev.Event != "endpoint" {
			continue
		}
		ref, err := url.Parse(ev.Data)
		if err != nil {
			cancel()
			resp.Body.Close()
			return failf(ClassProtocolError, resp.StatusCode, "GET (SSE): endpoint event is not a URL")
		}
		ep := r.u.ResolveReference(ref)
		if ep.Scheme != r.u.Scheme || ep.Host != r.u.Host {
			cancel()
			resp.Body.Close()
			return failf(ClassProtocolError, resp.StatusCode, "GET (SSE): endpoint event points to another origin (%s)", fromTarget(ep.Host))
		}
		ls.endpoint = ep
	}
	r.legacy = ls
	go ls.pump(sctx, sr)
	return nil
}

// pump reads the stream until it ends or the probe closes it, handing
// responses to the waiting call.
func (ls *legacyStream) pump(ctx context.Context, sr *sseReader) {
	defer close(ls.done)
	for {
		ev, err := sr.Next()
		if err != nil {
			ls.err = err
			return
		}
		if ev.Event != "message" || ev.Data == "" {
			continue
		}
		msgs, err := parseRPC([]byte(ev.Data))
		if err != nil {
			ls.err = err
			return
		}
		for _, m := range msgs {
			if m.Method != "" {
				continue
			}
			select {
			case ls.msgs <- m:
			case <-ctx.Done():
				ls.err = ctx.Err()
				return
			}
		}
	}
}

// close ends the stream: cancelling its context fails the pump's read (the
// connection's deadline is hooked to it), and the body is closed only after
// the pump has returned, so the two never touch it at once.
func (ls *legacyStream) close() {
	ls.cancel()
	<-ls.done
	ls.resp.Body.Close()
}

func (ls *legacyStream) post(ctx context.Context, r *run, method string, body []byte) error {
	resp, err := r.client.doFast(ctx, http.MethodPost, ls.endpoint, body, method)
	if err != nil {
		return r.stepFail(ctx, method, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotFound {
		return failf(ClassSessionBroken, resp.StatusCode, "%s: HTTP 404 for the session the SSE stream announced: the server that answered does not know it (load balancer without sticky sessions?)", method)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return r.statusError(ctx, resp, method)
	}
	return nil
}

func (ls *legacyStream) call(ctx context.Context, r *run, method string, id int64, body []byte) (json.RawMessage, error) {
	if err := ls.post(ctx, r, method, body); err != nil {
		return nil, err
	}
	for {
		select {
		case m := <-ls.msgs:
			if idOf(m.ID) != id {
				continue
			}
			return resultOf(&m)
		case <-ls.done:
			if ctx.Err() != nil || errors.Is(ls.err, os.ErrDeadlineExceeded) {
				// The stream hit the same deadline: still no answer.
				return nil, failf(ClassSSEDeaf, 0, "%s: the server accepted the POST but never answered on the SSE stream within the timeout", method)
			}
			if errors.Is(ls.err, errNotJSONRPC) {
				return nil, failf(ClassProtocolError, 0, "%s: SSE stream: %v", method, ls.err)
			}
			if ls.err == io.EOF {
				return nil, failf(ClassProtocolError, 0, "%s: SSE stream closed before the answer", method)
			}
			return nil, r.readFail(ctx, method, ls.err)
		case <-ctx.Done():
			return nil, failf(ClassSSEDeaf, 0, "%s: the server accepted the POST but never answered on the SSE stream within the timeout", method)
		}
	}
}
