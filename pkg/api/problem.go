package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"reflect"
	"strings"

	apiv1 "github.com/mcpmon/mcpmon/pkg/api/v1"
	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/store"
)

func problemf(status int, typ, format string, args ...any) *apiv1.Problem {
	if typ == "" {
		typ = "about:blank"
	}
	return &apiv1.Problem{Type: typ, Title: http.StatusText(status), Status: status, Detail: fmt.Sprintf(format, args...)}
}

// invalid is a 400 listing field problems.
func invalid(errs ...apiv1.FieldError) *apiv1.Problem {
	p := problemf(http.StatusBadRequest, apiv1.TypeInvalidRequest, "the request is invalid; see errors")
	p.Title = "Invalid request"
	p.Errors = errs
	return p
}

func writeProblem(w http.ResponseWriter, r *http.Request, p *apiv1.Problem) {
	if p.Instance == "" {
		p.Instance = r.URL.Path
	}
	w.Header().Set("Content-Type", apiv1.ProblemContentType)
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(p.Status)
	_ = json.NewEncoder(w).Encode(p)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}

// storeProblem maps a store error to a problem and logs what the client
// should not see. what names the resource ("endpoint abc").
func (s *server) storeProblem(r *http.Request, err error, what string) *apiv1.Problem {
	switch {
	case errors.Is(err, model.ErrNotFound):
		return problemf(http.StatusNotFound, "", "%s not found", what)
	case errors.Is(err, store.ErrConflict):
		return problemf(http.StatusConflict, apiv1.TypeVersionConflict, "%s was changed concurrently; reload it and retry", what)
	case errors.Is(err, store.ErrUnavailable):
		s.log.Error("store unavailable", "method", r.Method, "path", r.URL.Path, "err", err)
		p := problemf(http.StatusServiceUnavailable, "", "the store is unavailable; retry later")
		return p
	default:
		s.log.Error("store error", "method", r.Method, "path", r.URL.Path, "err", err)
		return problemf(http.StatusInternalServerError, "", "internal error while accessing %s", what)
	}
}

// readBody reads a JSON request body up to the size cap, enforcing the
// content type, and passes it through checkJSON (bodycheck.go) within
// bodyLimits before anything else reads it: every handler that takes a
// body comes through here. An empty body returns nil when allowEmpty.
func (s *server) readBody(w http.ResponseWriter, r *http.Request, allowEmpty bool) (checkedJSON, *apiv1.Problem) {
	return s.readBodyWithin(w, r, allowEmpty, bodyLimits)
}

// readNoInput reads the body of a route that takes no input (an action
// such as probe now or verify host): none, or an empty JSON object; any
// other body is the problem returned.
func (s *server) readNoInput(w http.ResponseWriter, r *http.Request) *apiv1.Problem {
	body, p := s.readBody(w, r, true)
	if p != nil || body == nil {
		return p
	}
	return decodeStrict(body, &struct{}{})
}

// readBodyWithin is readBody held to caps of the route's own.
func (s *server) readBodyWithin(w http.ResponseWriter, r *http.Request, allowEmpty bool, caps bodyCaps) (checkedJSON, *apiv1.Problem) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.maxBody))
	if err != nil {
		if mbe := (*http.MaxBytesError)(nil); errors.As(err, &mbe) {
			return nil, problemf(http.StatusRequestEntityTooLarge, "", "request body exceeds %d bytes", mbe.Limit)
		}
		return nil, problemf(http.StatusBadRequest, "", "reading request body: %v", err)
	}
	if len(bytes.TrimSpace(body)) == 0 {
		if allowEmpty {
			return nil, nil
		}
		return nil, problemf(http.StatusBadRequest, apiv1.TypeInvalidRequest, "the request body is empty; send a JSON object")
	}
	if p := checkJSONContentType(r); p != nil {
		return nil, p
	}
	return checkJSON(body, caps)
}

// checkJSONContentType accepts application/json and any +json type
// (application/merge-patch+json for PATCH).
func checkJSONContentType(r *http.Request) *apiv1.Problem {
	ct := r.Header.Get("Content-Type")
	mt, _, err := mime.ParseMediaType(ct)
	if err == nil && (mt == "application/json" || strings.HasSuffix(mt, "+json")) {
		return nil
	}
	if ct == "" {
		ct = "none"
	}
	return problemf(http.StatusUnsupportedMediaType, "", "content type %q is not supported; send application/json", ct)
}

// decodeStrict decodes exactly one JSON value into dst, refusing unknown
// fields, member names that match a field only in another case
// (inexactName) and trailing data; checkJSON has refused duplicate keys,
// deep and wide bodies and invalid UTF-8. Problems never quote values
// from the body: they may be secrets.
func decodeStrict(body checkedJSON, dst any) *apiv1.Problem {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return jsonProblem(err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return invalid(apiv1.FieldError{Pointer: "#", Detail: "unexpected data after the JSON value"})
	}
	return inexactName(body, reflect.TypeOf(dst))
}

func jsonProblem(err error) *apiv1.Problem {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return invalid(apiv1.FieldError{Pointer: "#", Detail: fmt.Sprintf("invalid JSON at byte %d", syn.Offset)})
	case errors.Is(err, io.ErrUnexpectedEOF):
		return invalid(apiv1.FieldError{Pointer: "#", Detail: "invalid JSON: unexpected end of input"})
	case errors.As(err, &typ):
		ptr := "#"
		if typ.Field != "" {
			ptr = "#/" + strings.ReplaceAll(typ.Field, ".", "/")
		}
		return invalid(apiv1.FieldError{Pointer: ptr, Detail: fmt.Sprintf("must be %s, not %s", jsonKind(typ.Type.String()), typ.Value)})
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		name := strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
		return invalid(apiv1.FieldError{Pointer: "#/" + name, Detail: "unknown field"})
	default:
		return invalid(apiv1.FieldError{Pointer: "#", Detail: "invalid JSON"})
	}
}

func jsonKind(goType string) string {
	switch {
	case goType == "string":
		return "a string"
	case goType == "bool":
		return "a boolean"
	case strings.HasPrefix(goType, "int") || strings.HasPrefix(goType, "uint") || strings.HasPrefix(goType, "float"):
		return "a number"
	case strings.HasPrefix(goType, "map[") || strings.HasPrefix(strings.TrimPrefix(goType, "*"), "api.") ||
		strings.HasPrefix(strings.TrimPrefix(goType, "*"), "apiv1."):
		return "an object"
	case strings.HasPrefix(goType, "[]"):
		return "an array"
	}
	return goType
}
