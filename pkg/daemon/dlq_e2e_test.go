package daemon

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	apiv1 "github.com/mcpmon/mcpmon/pkg/api/v1"
	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/msg"
	"github.com/mcpmon/mcpmon/pkg/queue"
)

// TestPoisonedVerdictIsReplayedOnce: while the alerter fails on every
// verdict, the down endpoint's verdicts walk to the verdicts DLQ after
// --max-receive-count receives and nobody is alerted; GET
// /v1/dlq/verdicts/messages tells why, and after the fix a redrive returns
// them and the incident gets exactly one alert — on the embedded queue, and
// on fauxqs with the peers set.
//
// The test runs with --max-receive-count 2 on both backends. fauxqs hands
// out at most one message per FIFO group per receive (real SQS returns
// several, and they walk to the DLQ together), so a poisoned endpoint's
// verdicts go to the DLQ one after the other, each after maxReceiveCount
// receives of at least one second (SQS visibility is whole seconds). With
// the default of 10 that is ~11 s per verdict while the endpoint produces
// one a second: the source queue would never drain.
func TestPoisonedVerdictIsReplayedOnce(t *testing.T) {
	t.Parallel() // minutes of waiting on windows: overlapped with the other long end-to-end tests
	for _, b := range e2eBackends() {
		t.Run(b.name, func(t *testing.T) { runPoisonedVerdict(t, b) })
	}
}

func runPoisonedVerdict(t *testing.T, b backend) {
	rcv, hook := newReceiver(t)
	o := fastOptions(t)
	o.WebhookURL = model.SecretURL(hook)
	o.ReplicaID = "dlq"
	o.Visibility = 200 * time.Millisecond // whole seconds on SQS: 1 s
	o.MaxReceiveCount = 2
	b.setup(t, &o)

	var broken atomic.Bool
	broken.Store(true)
	var banner bytes.Buffer
	d, err := Start(t.Context(), RoleAll, o, Deps{Logger: testLogger(t), Stdout: &banner,
		wrapHandler: func(name string, h queue.Handler) queue.Handler {
			if name != msg.QueueVerdicts {
				return h
			}
			return func(ctx context.Context, m queue.Message) error {
				if broken.Load() {
					return errors.New(`alerter: webhook sink misconfigured (test poison): Post "https://user:pw@hooks.example.com/services/T0/B0/s3cr3t?token=abc": refused`)
				}
				return h(ctx, m)
			}
		}})
	if err != nil {
		t.Fatalf("start mcpmon: %v", err)
	}
	defer func() {
		d.Stop()
		if err := d.Wait(); err != nil {
			t.Errorf("mcpmon stopped with: %v", err)
		}
	}()
	c := apiClient{addr: d.Addr(), key: bootstrapKey(t, banner.String())}
	dlq := dlqHTTP{t: t, c: c}

	start := time.Now()
	// Nothing listens on port 1: every probe is down.
	id := c.register(t, map[string]any{"name": "poisoned", "url": "http://127.0.0.1:1/mcp", "schedule": "@every 1s", "timeout": "1s"})
	// Two down windows open an incident (2 of 3): three dead letters are
	// enough for the replay to open it.
	eventually(t, 30*time.Second, "down verdicts in the verdicts DLQ", func() bool { return dlq.depth("verdicts") >= 3 })
	// Stop new verdicts, and let those queued reach the DLQ, so only a
	// replay can open the incident.
	t.Logf("%v: 3 dead letters", time.Since(start).Round(time.Millisecond))
	resp := c.do(t, "PATCH", "/v1/endpoints/"+id, strings.NewReader(`{"paused":true}`))
	resp.Body.Close()
	eventually(t, 30*time.Second, "the verdicts queue drained into the DLQ", func() bool {
		st, err := d.qs.get(msg.QueueVerdicts).(queue.StatsReader).Stats(t.Context())
		return err == nil && st.Visible+st.InFlight == 0
	})
	t.Logf("%v: verdicts queue drained", time.Since(start).Round(time.Millisecond))
	if got := rcv.all(); len(got) != 0 {
		t.Fatalf("alerts before the replay: %v", got)
	}

	v := dlq.list()["verdicts"]
	switch b.name {
	case "sqs": // fauxqs has no message move tasks
		if v.Redrive == nil || v.Redrive.Status != queue.RedriveUnsupported {
			t.Errorf("GET /v1/dlq on fauxqs: redrive %+v, want status %q", v.Redrive, queue.RedriveUnsupported)
		}
	default: // the embedded queue's redrive is synchronous: nothing runs
		if v.Redrive != nil {
			t.Errorf("GET /v1/dlq on the embedded queue: redrive %+v, want none", v.Redrive)
		}
	}
	msgs := dlq.peek("verdicts")
	if len(msgs) == 0 {
		t.Fatal("peek: no dead letters")
	}
	for _, m := range msgs {
		if m.GroupID != id {
			t.Errorf("dead letter %s in group %q, want the endpoint %s", m.ID, m.GroupID, id)
		}
		if !strings.Contains(m.Reason, "test poison") {
			t.Errorf("dead letter %s: reason %q does not say why", m.ID, m.Reason)
		}
		for _, secret := range []string{"s3cr3t", "pw@", "token=abc", "/services/"} {
			if strings.Contains(m.Reason, secret) {
				t.Errorf("dead letter %s: reason %q leaks %q", m.ID, m.Reason, secret)
			}
		}
	}
	if code, body := dlq.redrive("verdicts", `{"ids":["no-such-message"]}`); code != http.StatusNotFound {
		t.Fatalf("replay of an unknown ID = %d %s, want 404", code, body)
	}

	broken.Store(false) // the fix
	code, body := dlq.redrive("verdicts", `{}`)
	var rv apiv1.RedriveView
	if code != http.StatusOK || json.Unmarshal(body, &rv) != nil || rv.Moved+btoi(rv.Task != "") == 0 {
		t.Fatalf("replay = %d %s, want the dead letters moved", code, body)
	}
	open := rcv.wait(t, 30*time.Second)
	t.Logf("%v: alerted after the replay of %s", time.Since(start).Round(time.Millisecond), body)
	if ep, _ := open["endpoint"].(map[string]any); open["kind"] != "open" || ep["id"] != id {
		t.Fatalf("alert after the replay = %v, want the open of %s", open, id)
	}
	eventually(t, 30*time.Second, "an empty DLQ and verdicts queue", func() bool {
		st, err := d.qs.get(msg.QueueVerdicts).(queue.StatsReader).Stats(t.Context())
		return dlq.depth("verdicts") == 0 && err == nil && st.Visible+st.InFlight == 0
	})
	// Replay the (now empty) DLQ again: nothing more to say to anyone.
	if code, body := dlq.redrive("verdicts", `{}`); code != http.StatusOK || !strings.Contains(string(body), `"moved":0`) {
		t.Fatalf("replay of an empty DLQ = %d %s", code, body)
	}
	// Every replayed verdict is handled (both queues are empty); a second
	// alert could only come from a sweep, which would send within a second.
	quiet, cancel := context.WithTimeout(t.Context(), 2*time.Second)
	defer cancel()
	if a, err := rcv.Wait(quiet, 1); err == nil {
		t.Fatalf("a second alert: %s", a.Body)
	}
	if got := rcv.all(); len(got) != 1 {
		t.Fatalf("%d alerts, want exactly one: %v", len(got), got)
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// dlqHTTP drives /v1/dlq over plain HTTP, as an operator's script would.
type dlqHTTP struct {
	t *testing.T
	c apiClient
}

func (d dlqHTTP) call(method, path, body string) (int, []byte) {
	d.t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	resp := d.c.do(d.t, method, path, r)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		d.t.Fatalf("%s %s: %v", method, path, err)
	}
	if resp.StatusCode >= 400 && resp.Header.Get("Content-Type") != "application/problem+json" {
		d.t.Errorf("%s %s = %d with Content-Type %q, want problem+json", method, path, resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	return resp.StatusCode, raw
}

func (d dlqHTTP) list() map[string]apiv1.DLQView {
	d.t.Helper()
	code, raw := d.call("GET", "/v1/dlq", "")
	var out struct{ Queues []apiv1.DLQView }
	if code != http.StatusOK || json.Unmarshal(raw, &out) != nil {
		d.t.Fatalf("GET /v1/dlq = %d %s", code, raw)
	}
	m := map[string]apiv1.DLQView{}
	for _, v := range out.Queues {
		m[v.Queue] = v
	}
	return m
}

func (d dlqHTTP) depth(name string) int {
	d.t.Helper()
	v, ok := d.list()[name]
	if !ok {
		d.t.Fatalf("GET /v1/dlq lists no %q", name)
	}
	return v.Depth
}

func (d dlqHTTP) peek(name string) []apiv1.DeadLetterView {
	d.t.Helper()
	code, raw := d.call("GET", "/v1/dlq/"+name+"/messages", "")
	var out struct{ Messages []apiv1.DeadLetterView }
	if code != http.StatusOK || json.Unmarshal(raw, &out) != nil {
		d.t.Fatalf("GET /v1/dlq/%s/messages = %d %s", name, code, raw)
	}
	return out.Messages
}

func (d dlqHTTP) redrive(name, body string) (int, []byte) {
	d.t.Helper()
	return d.call("POST", "/v1/dlq/"+name+"/redrive", body)
}
