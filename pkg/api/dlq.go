package api

import (
	"errors"
	"net/http"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/go-chi/chi/v5"

	apiv1 "github.com/mcpmon/mcpmon/pkg/api/v1"
	"github.com/mcpmon/mcpmon/pkg/auth"
	"github.com/mcpmon/mcpmon/pkg/queue"
)

// dlqRoutes serves /v1/dlq: the stage queues' dead-letter queues, for the
// operator. Dead letters mix every tenant's messages, so only an admin key
// of the default tenant (the operator's) sees them; for any other tenant
// the routes answer exactly what an unknown path answers (404), so a
// tenant learns nothing about them. Without authentication (--auth none)
// every request is the default tenant's.
func (s *server) dlqRoutes(r chi.Router) {
	r.Use(s.requireScope(auth.ScopeAdmin), s.operatorOnly)
	r.Get("/", s.listDLQ)
	r.Get("/{queue}/messages", s.peekDLQ)
	r.Post("/{queue}/redrive", s.redriveDLQ)
	r.Post("/{queue}/purge", s.purgeDLQ)
}

func (s *server) operatorOnly(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if auth.TenantFrom(r.Context()) != auth.DefaultTenant {
			writeProblem(w, r, problemf(http.StatusNotFound, "", "no route for %s", r.URL.Path))
			return
		}
		next.ServeHTTP(w, r)
	})
}

type redriveRequest struct {
	IDs []string `json:"ids"`
}

// dlqOf returns the named stage's dead-letter queue or writes a 404.
func (s *server) dlqOf(w http.ResponseWriter, r *http.Request) (queue.DeadLetterQueue, bool) {
	name := chi.URLParam(r, "queue")
	d, ok := s.dlq[name]
	if !ok {
		writeProblem(w, r, problemf(http.StatusNotFound, "", "no dead-letter queue for %q: the queues are %v", name, s.dlqNames()))
		return nil, false
	}
	return d, true
}

func (s *server) dlqNames() []string {
	names := make([]string, 0, len(s.dlq))
	for n := range s.dlq {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

func (s *server) listDLQ(w http.ResponseWriter, r *http.Request) {
	out := []apiv1.DLQView{}
	for _, name := range s.dlqNames() {
		st, err := s.dlq[name].Stats(r.Context())
		if err != nil {
			writeProblem(w, r, s.queueProblem(r, err, name))
			return
		}
		v := apiv1.DLQView{Queue: name, Depth: st.Visible + st.InFlight, InFlight: st.InFlight}
		if st.OldestMessageAge > 0 {
			v.OldestAge = st.OldestMessageAge.Round(time.Second).String()
		}
		if rs, ok := s.dlq[name].(queue.RedriveStatusReader); ok {
			v.Redrive = s.redriveStatus(r, rs, name)
		}
		out = append(out, v)
	}
	writeJSON(w, http.StatusOK, map[string]any{"queues": out})
}

// redriveStatus reads a queue's redrive status for the list. A failure
// to read it does not fail the list: the depths are what an operator
// needs first.
func (s *server) redriveStatus(r *http.Request, rs queue.RedriveStatusReader, name string) *apiv1.RedriveStatusView {
	st, err := rs.RedriveStatus(r.Context())
	if err != nil {
		s.log.Warn("could not read the dead-letter queue's redrive status", "queue", name, "err", err)
		return &apiv1.RedriveStatusView{Status: "unavailable"}
	}
	v := &apiv1.RedriveStatusView{Status: st.Status, Task: st.Task, Moved: st.Moved, ToMove: st.ToMove, Failure: st.Failure}
	if !st.StartedAt.IsZero() {
		at := st.StartedAt.UTC()
		v.StartedAt = &at
	}
	return v
}

func (s *server) peekDLQ(w http.ResponseWriter, r *http.Request) {
	d, ok := s.dlqOf(w, r)
	if !ok {
		return
	}
	limit, p := limitParam(r)
	if p != nil {
		writeProblem(w, r, p)
		return
	}
	msgs, err := d.Peek(r.Context(), limit)
	if err != nil {
		writeProblem(w, r, s.queueProblem(r, err, chi.URLParam(r, "queue")))
		return
	}
	out := make([]apiv1.DeadLetterView, len(msgs))
	for i, m := range msgs {
		body := string(m.Body)
		if !utf8.ValidString(body) {
			body = "<not UTF-8>"
		}
		out[i] = apiv1.DeadLetterView{ID: m.ID, GroupID: m.GroupID, DedupID: m.DedupID, SentAt: m.SentAt.UTC(), ReceiveCount: m.ReceiveCount, Reason: m.Reason, Body: body}
	}
	writeJSON(w, http.StatusOK, map[string]any{"messages": out})
}

// redriveDLQ returns dead letters to their stage queue: all of them, or
// those named by "ids". Naming only IDs that are not there is a 404.
func (s *server) redriveDLQ(w http.ResponseWriter, r *http.Request) {
	d, ok := s.dlqOf(w, r)
	if !ok {
		return
	}
	body, p := s.readBody(w, r, true)
	if p != nil {
		writeProblem(w, r, p)
		return
	}
	var req redriveRequest
	if body != nil {
		if p := decodeStrict(body, &req); p != nil {
			writeProblem(w, r, p)
			return
		}
	}
	res, err := d.Redrive(r.Context(), req.IDs)
	if err != nil {
		writeProblem(w, r, s.queueProblem(r, err, chi.URLParam(r, "queue")))
		return
	}
	if len(req.IDs) > 0 && res.Moved == 0 && len(res.Missing) > 0 {
		writeProblem(w, r, problemf(http.StatusNotFound, "", "no message %v in the dead-letter queue of %s", res.Missing, chi.URLParam(r, "queue")))
		return
	}
	writeJSON(w, http.StatusOK, apiv1.RedriveView{Moved: res.Moved, Missing: res.Missing, Task: res.Task})
}

func (s *server) purgeDLQ(w http.ResponseWriter, r *http.Request) {
	d, ok := s.dlqOf(w, r)
	if !ok {
		return
	}
	n, err := d.Purge(r.Context())
	if err != nil {
		writeProblem(w, r, s.queueProblem(r, err, chi.URLParam(r, "queue")))
		return
	}
	writeJSON(w, http.StatusOK, map[string]int{"purged": n})
}

// queueProblem is a queue error as a problem: a missing queue is a 503 (the
// deployment lacks it), anything else a logged 500.
func (s *server) queueProblem(r *http.Request, err error, name string) *apiv1.Problem {
	if errors.Is(err, queue.ErrQueueNotFound) || errors.Is(err, queue.ErrClosed) {
		return problemf(http.StatusServiceUnavailable, "", "the dead-letter queue of %s is not available: %v", name, err)
	}
	s.log.Error("dead-letter queue operation failed", "queue", name, "method", r.Method, "path", r.URL.Path, "err", err)
	return problemf(http.StatusInternalServerError, "", "the dead-letter queue operation on %s failed", name)
}
