package sqs_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/mcpmon/mcpmon/pkg/queue"
	"github.com/mcpmon/mcpmon/pkg/queue/sqs"
	"github.com/mcpmon/mcpmon/pkg/testpeers"
)

// faultProxy sits between the SDK and fauxqs on 127.0.0.1 and answers the
// first SendMessageBatch calls with a 503 and a throttling error, the two
// transient failures fauxqs cannot produce, recording every attempt's body.
type faultProxy struct {
	mu       sync.Mutex
	faults   []int // status codes to answer, in order
	attempts [][]byte
}

func (p *faultProxy) start(t *testing.T, target string) string {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &httptest.Server{Listener: l, Config: &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Amz-Target") != "AmazonSQS.SendMessageBatch" {
			rp.ServeHTTP(w, r)
			return
		}
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		p.mu.Lock()
		p.attempts = append(p.attempts, body)
		var fault int
		if len(p.faults) > 0 {
			fault, p.faults = p.faults[0], p.faults[1:]
		}
		p.mu.Unlock()
		switch fault {
		case 0:
			rp.ServeHTTP(w, r)
		case http.StatusServiceUnavailable:
			w.Header().Set("Content-Type", "application/x-amz-json-1.0")
			w.WriteHeader(fault)
			_, _ = io.WriteString(w, `{"__type":"com.amazonaws.sqs#ServiceUnavailable","message":"try again"}`)
		default:
			w.Header().Set("Content-Type", "application/x-amz-json-1.0")
			w.Header().Set("x-amzn-query-error", "AWS.SimpleQueueService.RequestThrottled;Sender")
			w.WriteHeader(fault)
			_, _ = io.WriteString(w, `{"__type":"com.amazonaws.sqs#RequestThrottled","message":"Rate exceeded"}`)
		}
	})}}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestThrottlingAnd5xxRetriedWithSameDedupID: the SDK retries a 503 and a
// throttling answer with backoff, resending the same entries (same group and
// dedup IDs), and every attempt is counted as a request.
func TestThrottlingAnd5xxRetriedWithSameDedupID(t *testing.T) {
	endpoint := testpeers.SQSEndpoint(t)
	p := &faultProxy{faults: []int{http.StatusServiceUnavailable, http.StatusBadRequest}}
	proxied := p.start(t, endpoint)

	m := sqs.NewMetrics(prometheus.NewRegistry())
	c, err := sqs.New(t.Context(), sqs.Options{
		Endpoint:    proxied,
		Region:      "us-east-1",
		Prefix:      "retry-" + time.Now().Format("150405.000000")[7:] + "-",
		Credentials: credentials.NewStaticCredentialsProvider("test", "test", ""),
		MaxBackoff:  50 * time.Millisecond,
		Metrics:     m,
	})
	if err != nil {
		t.Fatal(err)
	}
	cfg := queue.StageConfigs()[1]
	if _, err := sqs.Ensure(t.Context(), c, []queue.Config{cfg}); err != nil {
		t.Fatal(err)
	}
	q, err := c.Open(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	res, err := q.Send(t.Context(), []queue.SendInput{{GroupID: "e1", DedupID: "e1-run1", Body: []byte("r")}})
	if err != nil || res[0].Err != nil || res[0].MessageID == "" {
		t.Fatalf("send through a 503 and a throttle: %+v, %v", res, err)
	}
	if len(p.attempts) != 3 {
		t.Fatalf("%d attempts, want 3 (503, throttled, ok)", len(p.attempts))
	}
	for i, body := range p.attempts {
		var req struct {
			Entries []struct {
				MessageGroupId, MessageDeduplicationId string
			}
		}
		if err := json.Unmarshal(body, &req); err != nil {
			t.Fatal(err)
		}
		if len(req.Entries) != 1 || req.Entries[0].MessageDeduplicationId != "e1-run1" || req.Entries[0].MessageGroupId != "e1" {
			t.Fatalf("attempt %d entries = %+v, want the same group and dedup ID", i, req.Entries)
		}
	}
	if got := m.Requests("SendMessageBatch"); got != 3 {
		t.Fatalf("SendMessageBatch requests counted = %d, want 3 (each attempt is billed)", got)
	}
}
