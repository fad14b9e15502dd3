package prober

// streamable.go owns the exchange of one JSON-RPC message with the server:
// call and notify POST to the endpoint (Streamable HTTP) or, once a legacy
// stream is open, hand over to legacy.go; answers are read as JSON or from
// an SSE stream. deleteSession ends a Streamable HTTP session.

import (
	"context"
	"encoding/json"
	"io"
	"mime"
	"net/http"
	"strings"

	"github.com/mcpmon/mcpmon/pkg/msg"
)

// call sends one request and returns its result, or a probeError (with rpc
// set and no class when the server answered a JSON-RPC error).
func (r *run) call(ctx context.Context, method string, params any) (json.RawMessage, error) {
	r.nextID++
	id := r.nextID
	body := r.body(method, id, params)
	if r.legacy != nil {
		return r.legacy.call(ctx, r, method, id, body)
	}
	resp, err := r.client.doFast(ctx, http.MethodPost, r.u, body, method)
	if err != nil {
		return nil, r.stepFail(ctx, method, err)
	}
	defer resp.Body.Close()
	if method == "initialize" {
		r.sessionID = resp.Header.Get("Mcp-Session-Id")
		if len(r.sessionID) > 1024 {
			return nil, failf(ClassProtocolError, resp.StatusCode, "Mcp-Session-Id header is over 1 KiB")
		}
	} else {
		r.sessionHeaderSeen(resp.Header)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, r.statusError(ctx, resp, method)
	}
	if resp.StatusCode == http.StatusAccepted || resp.StatusCode == http.StatusNoContent {
		return nil, failf(ClassProtocolError, resp.StatusCode, "%s: HTTP %d without a JSON-RPC response", method, resp.StatusCode)
	}
	return r.readResponse(ctx, resp, method, id)
}

// readResponse reads a 2xx answer: JSON, or an SSE stream carrying it.
func (r *run) readResponse(ctx context.Context, resp *http.Response, method string, id int64) (json.RawMessage, error) {
	mt := resp.Header.Get("Content-Type")
	if mt != "application/json" && mt != "text/event-stream" {
		mt, _, _ = mime.ParseMediaType(mt)
	}
	switch mt {
	case "application/json":
		if pe := encodingError(resp, method); pe != nil {
			return nil, pe
		}
		b, err := r.readBody(resp.Body, r.p.opts.MaxBody)
		if err != nil {
			return nil, r.readFail(ctx, method, err)
		}
		msgs, err := parseRPC(b)
		if err != nil {
			return nil, failf(ClassProtocolError, resp.StatusCode, "%s: %v", method, err)
		}
		m, ok := responseFor(msgs, id)
		if !ok {
			return nil, failf(ClassProtocolError, resp.StatusCode, "%s: JSON body holds no response with id %d", method, id)
		}
		return resultOf(m)
	case "text/event-stream":
		if pe := encodingError(resp, method); pe != nil {
			return nil, pe
		}
		br := r.p.getReader(&capReader{r: resp.Body, n: r.p.opts.MaxBody})
		defer r.p.putReader(br)
		sr := &sseReader{br: br, maxLine: int(r.p.opts.MaxBody), maxEvents: r.p.opts.MaxSSEEvents}
		asked := "" // the first request of the server's on the stream
		for {
			ev, err := sr.Next()
			if err == io.EOF {
				return nil, unanswered(failf(ClassProtocolError, resp.StatusCode, "%s: SSE stream ended without the response", method), asked)
			}
			if err != nil {
				return nil, unanswered(r.readFail(ctx, method, err), asked)
			}
			if ev.Data == "" || ev.Event != "message" {
				continue // priming event, or an event type the probe does not read
			}
			msgs, err := parseRPC([]byte(ev.Data))
			if err != nil {
				return nil, failf(ClassProtocolError, resp.StatusCode, "%s: SSE event: %v", method, err)
			}
			if m, ok := responseFor(msgs, id); ok {
				return resultOf(m)
			}
			// Server notifications and requests ahead of the answer are skipped.
			for i := 0; i < len(msgs) && asked == ""; i++ {
				if msgs[i].Method != "" && len(msgs[i].ID) > 0 {
					asked = msgs[i].Method
				}
			}
		}
	case "":
		return nil, failf(ClassNotMCP, resp.StatusCode, "%s: HTTP %d without a content type: not an MCP endpoint", method, resp.StatusCode)
	default:
		return nil, failf(ClassNotMCP, resp.StatusCode, "%s: HTTP %d with content type %q: not an MCP endpoint", method, resp.StatusCode, fromTarget(mt))
	}
}

// unanswered notes on pe, a failure to get an answer, the request the
// server sent on the answer's stream before failing (method; none when
// ""): the prober answers none, since it declares no sampling,
// elicitation or roots capability, so a server that waits for the reply
// before its own answer never answers, and the timeout alone would not
// say why.
func unanswered(pe *probeError, method string) *probeError {
	if method == "" {
		return pe
	}
	pe.format += "; the server sent a request (%s), which the prober does not answer"
	pe.args = append(pe.args, fromTarget(method))
	return pe
}

// encodingError fails an answer of step with a Content-Encoding: the
// prober sends no Accept-Encoding, so a compressed body is one it did not
// ask for (and would otherwise fail as invalid UTF-8, or as SSE with no
// answer in it). It is never decompressed: no gzip bomb to bound.
func encodingError(resp *http.Response, step string) *probeError {
	ce := resp.Header.Get("Content-Encoding")
	if ce == "" || strings.EqualFold(ce, "identity") {
		return nil
	}
	return failf(ClassProtocolError, resp.StatusCode, "%s: response is Content-Encoding %s, which the prober did not ask for", step, fromTarget(ce))
}

// readBody reads all of body into the run's buffer, failing with
// errTooLarge past max bytes. The bytes are valid until the next readBody:
// parseRPC copies what it keeps.
func (r *run) readBody(body io.Reader, max int64) ([]byte, error) {
	cr := capReader{r: body, n: max}
	b := r.buf[:0]
	if cap(b) == 0 {
		b = make([]byte, 0, 1024)
	}
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := cr.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err != nil {
			r.buf = b
			if err == io.EOF {
				return b, nil
			}
			return nil, err
		}
	}
}

func resultOf(m *rpcMessage) (json.RawMessage, error) {
	if m.Error != nil {
		return nil, &probeError{rpc: m.Error, format: "%v", args: []any{m.Error}}
	}
	return m.Result, nil
}

// notify sends a notification and expects 202 (any 2xx is accepted).
func (r *run) notify(ctx context.Context, method string) error {
	body := r.body(method, 0, nil)
	if r.legacy != nil {
		return r.legacy.post(ctx, r, method, body)
	}
	resp, err := r.client.doFast(ctx, http.MethodPost, r.u, body, method)
	if err != nil {
		return r.stepFail(ctx, method, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return r.statusError(ctx, resp, method)
	}
	return nil
}

// deleteSession ends the session; its outcome does not change the result.
func (r *run) deleteSession(ctx context.Context) {
	if r.sessionID == "" || ctx.Err() != nil {
		return
	}
	_ = r.timed(msg.PhaseClose, func() error {
		resp, err := r.client.doFast(ctx, http.MethodDelete, r.u, nil, "")
		if err != nil {
			return err
		}
		return resp.Body.Close()
	})
}
