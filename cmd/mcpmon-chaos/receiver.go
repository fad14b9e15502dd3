package main

import (
	"encoding/json"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/mcpmon/mcpmon/alerter/sinks/webhook"
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

// receiver is the alerters' webhook sink: it records every delivery and
// answers 500 to a share of them at random (a flaky receiver), which the
// alerters must retry without paging twice.
type receiver struct {
	srv      *http.Server
	url      string
	failRate float64

	mu         sync.Mutex
	rng        *rand.Rand
	deliveries []delivery
}

func startReceiver(failRate float64, rng *rand.Rand) (*receiver, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r := &receiver{url: "http://" + ln.Addr().String() + "/hook", failRate: failRate, rng: rng}
	r.srv = &http.Server{Handler: r, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = r.srv.Serve(ln) }()
	return r, nil
}

func (r *receiver) close() { _ = r.srv.Close() }

func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(io.LimitReader(req.Body, 1<<20))
	var p webhook.Payload
	if err == nil {
		err = json.Unmarshal(body, &p)
	}
	if err != nil {
		http.Error(w, "bad payload", http.StatusBadRequest)
		return
	}
	d := delivery{At: time.Now(), Status: http.StatusNoContent, Key: req.Header.Get(webhook.HeaderIdempotency),
		Kind: string(p.Kind), IncidentID: p.IncidentID, EndpointID: p.Endpoint.ID}
	r.mu.Lock()
	if r.rng.Float64() < r.failRate {
		d.Status = http.StatusInternalServerError
	}
	r.deliveries = append(r.deliveries, d)
	r.mu.Unlock()
	w.WriteHeader(d.Status)
}

// all returns every delivery so far, in arrival order.
func (r *receiver) all() []delivery {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]delivery(nil), r.deliveries...)
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
