package main

import (
	"bytes"
	"encoding/json"
	"io"
	"math/rand/v2"
	"net/http"
	"sync"
	"time"

	"github.com/mcpmon/mcpmon/alerter/sinks/webhook"
	"github.com/mcpmon/mcpmon/pkg/testpeers/e2e"
)

// delivery is one webhook request the receiver got, with what it answered.
type delivery struct {
	At         time.Time
	Status     int    // what the receiver answered: 500 means not delivered
	Key        string // Idempotency-Key header: the alert's ledger key
	Kind       string // open | resolve | reminder
	IncidentID string
	EndpointID string
}

func (d delivery) accepted() bool { return d.Status >= 200 && d.Status < 300 }

// receiver is the alerters' webhook sink: the shared test receiver,
// answering 500 to a share of the deliveries at random (a flaky receiver),
// which the alerters must retry without paging twice.
type receiver struct {
	*e2e.Receiver
	url      string
	failRate float64

	mu  sync.Mutex
	rng *rand.Rand
}

func startReceiver(failRate float64, rng *rand.Rand) (*receiver, error) {
	r := &receiver{failRate: failRate, rng: rng}
	var err error
	if r.Receiver, err = e2e.StartReceiver(func(http.Handler) http.Handler { return http.HandlerFunc(r.answer) }); err != nil {
		return nil, err
	}
	r.url = r.URL + "/hook"
	return r, nil
}

func (r *receiver) close() { r.Close() }

// answer refuses what is not a webhook payload and fails a share of the rest.
func (r *receiver) answer(w http.ResponseWriter, req *http.Request) {
	if _, ok := decode(req.Header, req.Body); !ok {
		http.Error(w, "bad payload", http.StatusBadRequest)
		return
	}
	status := http.StatusNoContent
	r.mu.Lock()
	if r.rng.Float64() < r.failRate {
		status = http.StatusInternalServerError
	}
	r.mu.Unlock()
	w.WriteHeader(status)
}

// decode reads one webhook delivery; ok is false for a body that is not a
// payload.
func decode(h http.Header, body io.Reader) (delivery, bool) {
	var p webhook.Payload
	b, err := io.ReadAll(io.LimitReader(body, 1<<20))
	if err == nil {
		err = json.Unmarshal(b, &p)
	}
	if err != nil {
		return delivery{}, false
	}
	return delivery{Key: h.Get(webhook.HeaderIdempotency), Kind: string(p.Kind), IncidentID: p.IncidentID, EndpointID: p.Endpoint.ID}, true
}

// all returns every delivery so far, in arrival order.
func (r *receiver) all() []delivery {
	var out []delivery
	for _, req := range r.Requests() {
		d, ok := decode(req.Header, bytes.NewReader(req.Body))
		if !ok {
			continue // answered 400, never counted as a delivery
		}
		d.At, d.Status = req.At, req.Status
		out = append(out, d)
	}
	return out
}

// counts returns accepted opens, accepted resolves and 500-answered deliveries.
func (r *receiver) counts() (opens, resolves, failed int) {
	for _, d := range r.all() {
		switch {
		case !d.accepted():
			failed++
		case d.Kind == "open":
			opens++
		case d.Kind == "resolve":
			resolves++
		}
	}
	return opens, resolves, failed
}
