package api_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mcpmon/mcpmon/pkg/api"
	apiv1 "github.com/mcpmon/mcpmon/pkg/api/v1"
	"github.com/mcpmon/mcpmon/pkg/auth"
	"github.com/mcpmon/mcpmon/pkg/queue"
	"github.com/mcpmon/mcpmon/pkg/queue/embedded"
)

// TestDeadLettersAreTheOperators: the default tenant's admin lists, peeks
// (with the recorded failure reason), redrives by ID and purges the
// dead-letter queues; another tenant's admin gets 404 on every route.
func TestDeadLettersAreTheOperators(t *testing.T) {
	cfg := queue.StageConfigs()[2] // verdicts
	cfg.MaxReceiveCount = 1
	b, err := embedded.Open("", []queue.Config{cfg}, embedded.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	ah := newAuthHarness(t, func(o *api.Options) {
		o.DeadLetters = map[string]queue.DeadLetterQueue{cfg.Name: b.DeadLetters(cfg.Name)}
	})
	op, _, err := ah.keyring.Create(t.Context(), auth.NewKey{Name: "operator", Tenant: auth.DefaultTenant, Scope: auth.ScopeAdmin})
	if err != nil {
		t.Fatal(err)
	}

	q := b.Queue(cfg.Name)
	res, err := q.Send(t.Context(), []queue.SendInput{{GroupID: "ep1", DedupID: "v1", Body: []byte(`{"schema":1}`)}})
	if err != nil || res[0].Err != nil {
		t.Fatal(err, res)
	}
	id := res[0].MessageID
	ms, err := q.Receive(t.Context(), queue.ReceiveInput{Max: 1})
	if err != nil || len(ms) != 1 {
		t.Fatal(err, ms)
	}
	if err := b.RecordFailure(t.Context(), cfg.Name, id, "alerter: sink config invalid"); err != nil {
		t.Fatal(err)
	}
	if err := q.ChangeVisibility(t.Context(), ms[0].ReceiptHandle, 0); err != nil {
		t.Fatal(err)
	}
	if ms, _ := q.Receive(t.Context(), queue.ReceiveInput{Max: 1}); len(ms) != 0 { // moves it to the DLQ
		t.Fatalf("received %v, want the message dead-lettered", ms)
	}

	for _, path := range []string{"/v1/dlq", "/v1/dlq/verdicts/messages"} {
		if resp, b := ah.call("GET", path, ah.keys["a/admin"], ""); resp.StatusCode != http.StatusNotFound {
			t.Errorf("tenant a's admin GET %s = %d %s, want 404", path, resp.StatusCode, b)
		}
	}
	resp, body := ah.call("GET", "/v1/dlq", op, "")
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"queue":"verdicts","depth":1`) {
		t.Fatalf("list = %d %s", resp.StatusCode, body)
	}
	resp, body = ah.call("GET", "/v1/dlq/verdicts/messages", op, "")
	var peek struct{ Messages []apiv1.DeadLetterView }
	if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &peek) != nil || len(peek.Messages) != 1 {
		t.Fatalf("peek = %d %s", resp.StatusCode, body)
	}
	if m := peek.Messages[0]; m.ID != id || m.GroupID != "ep1" || m.DedupID != "v1" || m.ReceiveCount != 1 || m.Reason != "alerter: sink config invalid" {
		t.Fatalf("peeked %+v", m)
	}
	if resp, body := ah.call("GET", "/v1/dlq/nosuch/messages", op, ""); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("unknown queue = %d %s", resp.StatusCode, body)
	}
	if resp, body := ah.call("POST", "/v1/dlq/verdicts/redrive", op, `{"ids":["nosuch"]}`); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("redrive of an unknown ID = %d %s", resp.StatusCode, body)
	}
	resp, body = ah.call("POST", "/v1/dlq/verdicts/redrive", op, `{"ids":["`+id+`"]}`)
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"moved":1`) {
		t.Fatalf("redrive = %d %s", resp.StatusCode, body)
	}
	back, err := q.Receive(t.Context(), queue.ReceiveInput{Max: 1})
	if err != nil || len(back) != 1 || back[0].ID != id || back[0].GroupID != "ep1" || back[0].DedupID != "v1" {
		t.Fatalf("after redrive the queue gives %+v, %v: want the message with its group and dedup ID", back, err)
	}
	if resp, body := ah.call("POST", "/v1/dlq/verdicts/purge", op, `{}`); resp.StatusCode != http.StatusOK || string(body) != `{"purged":0}`+"\n" {
		t.Fatalf("purge = %d %q", resp.StatusCode, body)
	}
}

// movingDLQ is a dead-letter queue whose redrive runs on the server, as
// SQS's move tasks do: it reports the status it is given.
type movingDLQ struct {
	queue.DeadLetterQueue
	status queue.RedriveStatus
	err    error
}

func (m movingDLQ) RedriveStatus(context.Context) (queue.RedriveStatus, error) {
	return m.status, m.err
}

// TestDLQListShowsTheRedriveStatus: GET /v1/dlq shows a running move
// task's progress, "unsupported" where the server has none, "unavailable"
// (not a failed list) when it cannot be read, and nothing for a queue
// whose redrive is done when it returns.
func TestDLQListShowsTheRedriveStatus(t *testing.T) {
	cfgs := queue.StageConfigs()
	b, err := embedded.Open("", cfgs, embedded.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	started := time.Date(2026, 12, 1, 1, 0, 0, 0, time.UTC)
	ah := newAuthHarness(t, func(o *api.Options) {
		o.DeadLetters = map[string]queue.DeadLetterQueue{
			"commands": movingDLQ{DeadLetterQueue: b.DeadLetters("commands"),
				status: queue.RedriveStatus{Status: "RUNNING", Task: "h1", Moved: 3, ToMove: 10, StartedAt: started}},
			"results":  movingDLQ{DeadLetterQueue: b.DeadLetters("results"), status: queue.RedriveStatus{Status: queue.RedriveUnsupported}},
			"verdicts": movingDLQ{DeadLetterQueue: b.DeadLetters("verdicts"), err: errors.New("AccessDenied")},
			"other":    b.DeadLetters("verdicts"),
		}
	})
	op, _, err := ah.keyring.Create(t.Context(), auth.NewKey{Name: "operator", Tenant: auth.DefaultTenant, Scope: auth.ScopeAdmin})
	if err != nil {
		t.Fatal(err)
	}
	resp, body := ah.call("GET", "/v1/dlq", op, "")
	var list struct{ Queues []apiv1.DLQView }
	if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &list) != nil || len(list.Queues) != 4 {
		t.Fatalf("list = %d %s", resp.StatusCode, body)
	}
	got := map[string]*apiv1.RedriveStatusView{}
	for _, v := range list.Queues {
		got[v.Queue] = v.Redrive
	}
	if r := got["commands"]; r == nil || r.Status != "RUNNING" || r.Task != "h1" || r.Moved != 3 || r.ToMove != 10 || r.StartedAt == nil || !r.StartedAt.Equal(started) {
		t.Errorf("commands redrive = %+v, want the running task's progress", r)
	}
	if r := got["results"]; r == nil || r.Status != "unsupported" {
		t.Errorf("results redrive = %+v, want unsupported", r)
	}
	if r := got["verdicts"]; r == nil || r.Status != "unavailable" || strings.Contains(string(body), "AccessDenied") {
		t.Errorf("verdicts redrive = %+v (%s), want unavailable without the error", r, body)
	}
	if r := got["other"]; r != nil {
		t.Errorf("embedded redrive = %+v, want none", r)
	}
}
