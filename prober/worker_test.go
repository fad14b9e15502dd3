package prober

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/msg"
	"github.com/mcpmon/mcpmon/pkg/queue"
)

// Hand-written fakes: the worker's collaborators are consumer-side
// interfaces; the queue and store implementations have their own suites.
type endpointsFake map[string]model.Endpoint

func (f endpointsFake) GetEndpoint(_ context.Context, id string) (model.Endpoint, error) {
	ep, ok := f[id]
	if !ok {
		return model.Endpoint{}, model.ErrNotFound
	}
	return ep, nil
}

type publisherFake struct {
	mu   sync.Mutex
	sent []queue.SendInput
	err  error
}

func (p *publisherFake) Publish(_ context.Context, in queue.SendInput) (string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.err != nil {
		return "", p.err
	}
	p.sent = append(p.sent, in)
	return "m" + in.DedupID, nil
}

type latestFake struct {
	mu sync.Mutex
	m  map[string]msg.ProbeResult
}

func (l *latestFake) LatestResult(_ context.Context, id string) (msg.ProbeResult, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	r, ok := l.m[id]
	if !ok {
		return msg.ProbeResult{}, model.ErrNotFound
	}
	return r, nil
}

func (l *latestFake) PutLatestResult(_ context.Context, r msg.ProbeResult) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.m[r.EndpointID] = r
	return nil
}

func message(c msg.ProbeCommand) queue.Message {
	return queue.Message{ID: "q1", GroupID: c.GroupID(), Body: c.Body(), ReceiveCount: 1}
}

func TestWorkerPublishesResultWithDedupID(t *testing.T) {
	ts := streamable(t, sdkServer(), mcp.StreamableHTTPOptions{JSONResponse: true})
	eps := endpointsFake{"ep1": endpoint(ts.URL)}
	pub := &publisherFake{}
	latest := &latestFake{m: map[string]msg.ProbeResult{}}
	w := NewWorker(testProber(t, nil), eps, pub, WorkerOptions{Latest: latest})

	c := cmd()
	if err := w.Handle(context.Background(), message(c)); err != nil {
		t.Fatal(err)
	}
	// A redelivered command republishes under the same dedup ID.
	if err := w.Handle(context.Background(), message(c)); err != nil {
		t.Fatal(err)
	}
	if len(pub.sent) != 2 {
		t.Fatalf("sent %d results", len(pub.sent))
	}
	for _, in := range pub.sent {
		if in.GroupID != "ep1" || in.DedupID != "ep1-"+c.ProbeRunID() {
			t.Errorf("group %q dedup %q", in.GroupID, in.DedupID)
		}
		var r msg.ProbeResult
		if err := msg.Decode(in.Body, &r); err != nil {
			t.Fatal(err)
		}
		if r.Status != msg.StatusUp || r.Slot != c.Slot || r.ProbeRunID != c.ProbeRunID() {
			t.Errorf("result %+v", r)
		}
	}
	if got := latest.m["ep1"]; got.ProbeRunID != c.ProbeRunID() {
		t.Errorf("latest result not stored: %+v", got)
	}
}

func TestWorkerDropsCommandOfDeletedEndpoint(t *testing.T) {
	pub := &publisherFake{}
	var logs bytes.Buffer
	w := NewWorker(testProber(t, nil), endpointsFake{}, pub, WorkerOptions{Logger: testLogger(&logs)})
	if err := w.Handle(context.Background(), message(cmd())); err != nil {
		t.Fatalf("Handle = %v, want nil (drop)", err)
	}
	if len(pub.sent) != 0 {
		t.Fatal("published a result for a deleted endpoint")
	}
	mustContain(t, logs.String(), "endpoint deleted")
}

func TestWorkerLeavesCommandWhenPublishFails(t *testing.T) {
	ts := streamable(t, sdkServer(), mcp.StreamableHTTPOptions{JSONResponse: true})
	boom := errors.New("queue down")
	w := NewWorker(testProber(t, nil), endpointsFake{"ep1": endpoint(ts.URL)}, &publisherFake{err: boom}, WorkerOptions{})
	if err := w.Handle(context.Background(), message(cmd())); !errors.Is(err, boom) {
		t.Fatalf("Handle = %v, want %v", err, boom)
	}
	if err := w.Handle(context.Background(), queue.Message{ID: "bad", Body: []byte(`{"schema":99}`)}); !errors.Is(err, msg.ErrSchema) {
		t.Fatalf("Handle(bad schema) = %v", err)
	}
}

// TestWorkerVersionChangeEvent: the previous result's version differs from
// this probe's, so the result carries a protocol_version_changed event.
func TestWorkerVersionChangeEvent(t *testing.T) {
	ts := streamable(t, sdkServer(Version20250618), mcp.StreamableHTTPOptions{JSONResponse: true})
	prev := msg.ProbeResult{EndpointID: "ep1", Slot: testSlot.Add(-60e9), Status: msg.StatusUp, ProtocolVersion: Version20251125, Transport: TransportStreamableHTTP}
	latest := &latestFake{m: map[string]msg.ProbeResult{"ep1": prev}}
	pub := &publisherFake{}
	w := NewWorker(testProber(t, nil), endpointsFake{"ep1": endpoint(ts.URL)}, pub, WorkerOptions{Latest: latest})
	if err := w.Handle(context.Background(), message(cmd())); err != nil {
		t.Fatal(err)
	}
	var r msg.ProbeResult
	if err := msg.Decode(pub.sent[0].Body, &r); err != nil {
		t.Fatal(err)
	}
	if r.ProtocolVersion != Version20250618 || len(r.Events) != 1 || r.Events[0].Kind != EventVersionChanged {
		t.Fatalf("version %s events %+v", r.ProtocolVersion, r.Events)
	}
	mustContain(t, r.Events[0].Message, "from 2025-11-25 to 2025-06-18")
}

// TestSecretsNeverLeak: a configured token reaches the server but never the
// result, its error text (even when the server echoes it), or the logs.
func TestSecretsNeverLeak(t *testing.T) {
	const token = "s3cr3t-T0KEN-value"
	var seen []string
	var mu sync.Mutex
	echo := func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Header.Get("Authorization")+"|"+r.Header.Get("X-Api-Key"))
		mu.Unlock()
		var req struct {
			ID json.RawMessage `json:"id"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		writeJSON(w, 200, map[string]any{"jsonrpc": "2.0", "id": req.ID, "error": map[string]any{
			"code": -32603, "message": "bad token " + r.Header.Get("Authorization") + " key " + r.Header.Get("X-Api-Key")}})
	}
	for _, tc := range []struct {
		name string
		h    http.HandlerFunc
	}{
		{"echoing rpc error", echo},
		{"401", status(401, "WWW-Authenticate", `Bearer error="invalid_token"`)},
		{"redirect elsewhere", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var logs bytes.Buffer
			h := tc.h
			if h == nil {
				other := serve(t, http.HandlerFunc(echo))
				h = func(w http.ResponseWriter, r *http.Request) {
					http.Redirect(w, r, strings.Replace(other.URL, "127.0.0.1", "localhost", 1)+"/mcp", http.StatusTemporaryRedirect)
				}
			}
			ep := endpoint(serve(t, h).URL + "/mcp?api_key=" + token)
			ep.Headers = map[string]string{"Authorization": "Bearer " + token, "X-Api-Key": token}
			reg := newRegistry()
			p := testProber(t, func(o *Options) { o.Logger = testLogger(&logs); o.Metrics = NewMetrics(reg) })
			res := p.Probe(context.Background(), ep, cmd())
			if res.Status == msg.StatusUp {
				t.Fatalf("want a failure, got %+v", res)
			}
			if tc.name == "echoing rpc error" {
				mustContain(t, res.Error, "[REDACTED]")
			}
			if strings.Contains(string(res.Body()), token) {
				t.Errorf("token in result: %s", res.Body())
			}
			if strings.Contains(logs.String(), token) {
				t.Errorf("token in logs: %s", logs.String())
			}
			if strings.Contains(gatherText(t, reg), token) {
				t.Error("token in metrics")
			}
		})
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) == 0 || !strings.Contains(seen[0], token) {
		t.Fatalf("server never received the configured headers: %q", seen)
	}
	redirected := 0
	for _, s := range seen[1:] {
		if strings.HasPrefix(s, "|") {
			redirected++
			if strings.Contains(s, token) {
				t.Errorf("custom header forwarded across origins on redirect: %q", s)
			}
		}
	}
	if redirected == 0 {
		t.Error("the redirect case never reached the other origin")
	}
}

// TestWorkerPublishesWithoutConformance: the worker stores the result with
// its conformance as the latest and publishes it without (no verdict reads
// it); a worker whose receiver stores the latest from the body (an agent)
// publishes it whole.
func TestWorkerPublishesWithoutConformance(t *testing.T) {
	ts := streamable(t, sdkServer(), mcp.StreamableHTTPOptions{JSONResponse: true})
	for _, keep := range []bool{false, true} {
		pub := &publisherFake{}
		latest := &latestFake{m: map[string]msg.ProbeResult{}}
		w := NewWorker(testProber(t, nil), endpointsFake{"ep1": endpoint(ts.URL)}, pub, WorkerOptions{Latest: latest, KeepConformance: keep})
		if err := w.Handle(context.Background(), message(cmd())); err != nil {
			t.Fatal(err)
		}
		if latest.m["ep1"].Conformance == nil || len(latest.m["ep1"].Conformance.Rules) == 0 {
			t.Fatalf("keep=%v: latest result without conformance: %+v", keep, latest.m["ep1"])
		}
		var r msg.ProbeResult
		if len(pub.sent) != 1 || msg.Decode(pub.sent[0].Body, &r) != nil {
			t.Fatalf("keep=%v: sent %+v", keep, pub.sent)
		}
		if (r.Conformance != nil) != keep {
			t.Errorf("keep=%v: published conformance %+v", keep, r.Conformance)
		}
		if r.Status != msg.StatusUp || r.ProbeRunID != latest.m["ep1"].ProbeRunID {
			t.Errorf("keep=%v: published %+v", keep, r)
		}
	}
}
