package prober

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"time"
	"unicode/utf8"
)

// errTooLarge reports a response over the size cap.
var errTooLarge = errors.New("response exceeds the size cap")

// capReader reads at most n bytes and then fails with errTooLarge instead of
// a silent EOF, so a truncated JSON document is never mistaken for a short one
// and a 1 GB body costs at most n bytes of reading.
type capReader struct {
	r io.Reader
	n int64
	// drain, when set, gets a read deadline 1 ms ahead before the first
	// read of r (connBody.Close's bounded drain); armed records that.
	drain net.Conn
	armed bool
}

func (c *capReader) Read(p []byte) (int, error) {
	if c.drain != nil && !c.armed {
		c.armed = true
		_ = c.drain.SetReadDeadline(time.Now().Add(time.Millisecond))
	}
	if c.n <= 0 {
		// Probe one byte: EOF exactly at the cap is fine.
		var b [1]byte
		n, err := c.r.Read(b[:])
		if n > 0 {
			return 0, errTooLarge
		}
		return 0, err
	}
	if int64(len(p)) > c.n {
		p = p[:c.n]
	}
	n, err := c.r.Read(p)
	c.n -= int64(n)
	return n, err
}

// readCapped reads all of r, failing with errTooLarge past max bytes.
func readCapped(r io.Reader, max int64) ([]byte, error) {
	return io.ReadAll(&capReader{r: r, n: max})
}

// sseEvent is one dispatched server-sent event.
type sseEvent struct {
	Event string // "message" when the stream names none
	Data  string
	ID    string
}

// sseReader parses a text/event-stream (WHATWG HTML §9.2) with bounds: a
// line longer than maxLine, more than maxEvents events, or (through the
// capReader underneath) more than the body cap fails instead of growing.
// Lines end in CRLF, LF or a lone CR, as the spec allows.
type sseReader struct {
	br        *bufio.Reader
	maxLine   int
	maxEvents int
	events    int
	// afterCR records that the last line ended in a CR that was the last
	// byte buffered: an LF first in the next read belongs to that line
	// end. The line is returned at the CR, without waiting for the byte
	// after it, since a stream may end an event with a CR and then pause.
	afterCR bool
}

func newSSEReader(r io.Reader, maxLine, maxEvents int) *sseReader {
	return &sseReader{br: bufio.NewReaderSize(r, 4096), maxLine: maxLine, maxEvents: maxEvents}
}

var (
	errSSELineTooLong   = errors.New("SSE line exceeds the size cap")
	errSSETooManyEvents = errors.New("SSE stream exceeded the event cap without the expected message")
)

// readLine returns the next line without its line end.
func (s *sseReader) readLine() ([]byte, error) {
	var line []byte
	for {
		if _, err := s.br.Peek(1); err != nil {
			if err == io.EOF && len(line) > 0 {
				// An unterminated last line is discarded by the spec: the
				// event it belongs to is never dispatched.
				return nil, io.ErrUnexpectedEOF
			}
			return nil, err
		}
		buf, _ := s.br.Peek(s.br.Buffered())
		if s.afterCR {
			s.afterCR = false
			if buf[0] == '\n' {
				_, _ = s.br.Discard(1)
				continue
			}
		}
		i := bytes.IndexAny(buf, "\r\n")
		if i < 0 {
			if len(line)+len(buf) > s.maxLine {
				return nil, errSSELineTooLong
			}
			line = append(line, buf...)
			_, _ = s.br.Discard(len(buf))
			continue
		}
		if len(line)+i > s.maxLine {
			return nil, errSSELineTooLong
		}
		line = append(line, buf[:i]...)
		end := i + 1
		if buf[i] == '\r' {
			switch {
			case end == len(buf):
				s.afterCR = true
			case buf[end] == '\n':
				end++
			}
		}
		_, _ = s.br.Discard(end)
		return line, nil
	}
}

// Next returns the next dispatched event. Events with no data field are not
// dispatched (per spec); events whose data is empty are returned so the caller
// can skip them as priming events.
func (s *sseReader) Next() (sseEvent, error) {
	var ev sseEvent
	var data []byte
	haveData := false
	size := 0
	for {
		line, err := s.readLine()
		if err != nil {
			if err == io.ErrUnexpectedEOF {
				return sseEvent{}, io.EOF
			}
			return sseEvent{}, err
		}
		if len(line) == 0 {
			if !haveData {
				ev = sseEvent{}
				continue
			}
			s.events++
			if s.events > s.maxEvents {
				return sseEvent{}, errSSETooManyEvents
			}
			if ev.Event == "" {
				ev.Event = "message"
			}
			ev.Data = string(data)
			return ev, nil
		}
		if line[0] == ':' {
			continue // comment / keep-alive
		}
		field, value := line, []byte(nil)
		if i := bytes.IndexByte(line, ':'); i >= 0 {
			field, value = line[:i], line[i+1:]
			value = bytes.TrimPrefix(value, []byte{' '})
		}
		switch string(field) {
		case "event":
			ev.Event = string(value)
		case "data":
			size += len(value) + 1
			if size > s.maxLine {
				return sseEvent{}, errSSELineTooLong
			}
			if haveData {
				data = append(data, '\n')
			}
			data = append(data, value...)
			haveData = true
		case "id":
			if bytes.IndexByte(value, 0) < 0 {
				ev.ID = string(value)
			}
		}
	}
}

// rpcError is a JSON-RPC error object.
type rpcError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

func (e *rpcError) Error() string { return fmt.Sprintf("JSON-RPC error %d: %s", e.Code, e.Message) }

// JSON-RPC error codes the probe interprets.
const (
	codeMethodNotFound = -32601
)

// rpcMessage is any JSON-RPC 2.0 message: request, notification or response.
type rpcMessage struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *rpcError       `json:"error,omitempty"`
}

var errNotJSONRPC = errors.New("not a JSON-RPC 2.0 message")

// parseRPC decodes one JSON-RPC message or a batch. It rejects invalid UTF-8,
// invalid JSON (including nesting deeper than encoding/json allows), a wrong
// "jsonrpc" member and responses with neither or both of result and error.
func parseRPC(b []byte) ([]rpcMessage, error) {
	if !utf8.Valid(b) {
		return nil, fmt.Errorf("%w: body is not valid UTF-8", errNotJSONRPC)
	}
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return nil, fmt.Errorf("%w: empty body", errNotJSONRPC)
	}
	var msgs []rpcMessage
	if b[0] == '[' {
		if err := json.Unmarshal(b, &msgs); err != nil {
			return nil, fmt.Errorf("%w: %v", errNotJSONRPC, err)
		}
		if len(msgs) == 0 {
			return nil, fmt.Errorf("%w: empty batch", errNotJSONRPC)
		}
	} else {
		msgs = make([]rpcMessage, 1)
		if err := json.Unmarshal(b, &msgs[0]); err != nil {
			return nil, fmt.Errorf("%w: %v", errNotJSONRPC, err)
		}
	}
	for i := range msgs {
		m := &msgs[i]
		if m.JSONRPC != "2.0" {
			return nil, fmt.Errorf("%w: jsonrpc member is %q", errNotJSONRPC, m.JSONRPC)
		}
		if m.Method == "" {
			hasResult := len(m.Result) > 0
			if hasResult == (m.Error != nil) {
				return nil, fmt.Errorf("%w: a response needs exactly one of result and error", errNotJSONRPC)
			}
			if len(m.ID) == 0 {
				return nil, fmt.Errorf("%w: response without id", errNotJSONRPC)
			}
		}
	}
	return msgs, nil
}

// idOf returns the integer id of a response, or -1.
func idOf(raw json.RawMessage) int64 {
	s := string(bytes.TrimSpace(raw))
	if uq, err := strconv.Unquote(s); err == nil {
		s = uq
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return -1
	}
	return n
}

// responseFor returns the response with id among msgs.
func responseFor(msgs []rpcMessage, id int64) (*rpcMessage, bool) {
	for i := range msgs {
		if msgs[i].Method == "" && idOf(msgs[i].ID) == id {
			return &msgs[i], true
		}
	}
	return nil, false
}
