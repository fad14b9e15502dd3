package prober

// trace.go owns the probe's phase durations (msg.Phase*): the httptrace
// hooks for dns, connect and tls of the first connection, and the timing of
// each handshake step.

import (
	"context"
	"crypto/tls"
	"net/http/httptrace"
	"time"

	"github.com/mcpmon/mcpmon/pkg/msg"
)

// trace records dns, connect and tls of the first connection.
func (r *run) trace(ctx context.Context) context.Context {
	mark := func(k string) {
		r.mu.Lock()
		if r.markAt(k) < 0 && r.nMarks < len(r.marks) {
			r.marks[r.nMarks] = timeMark{k, time.Now()}
			r.nMarks++
		}
		r.mu.Unlock()
	}
	done := func(phase, startKey string) {
		r.mu.Lock()
		defer r.mu.Unlock()
		if r.phaseAt(phase) >= 0 {
			return
		}
		if i := r.markAt(startKey); i >= 0 {
			r.addPhase(phase, r.marks[i].at, time.Now())
		}
	}
	return httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		DNSStart:          func(httptrace.DNSStartInfo) { mark("dns") },
		DNSDone:           func(httptrace.DNSDoneInfo) { done(msg.PhaseDNS, "dns") },
		ConnectStart:      func(string, string) { mark("connect") },
		ConnectDone:       func(string, string, error) { done(msg.PhaseConnect, "connect") },
		TLSHandshakeStart: func() { mark("tls") },
		TLSHandshakeDone:  func(tls.ConnectionState, error) { done(msg.PhaseTLS, "tls") },
	})
}

// phaseDur is one recorded phase; timeMark the start of a traced one. A
// probe has at most eleven phases and three traced starts: small arrays
// searched in order instead of two maps per probe. start and end bound the
// phase's span (otel.go): a phase timed more than once runs from its first
// start to its last end, while d adds up the times actually spent in it.
type phaseDur struct {
	name       string
	d          time.Duration
	start, end time.Time
}

type timeMark struct {
	name string
	at   time.Time
}

// phaseAt and markAt return the index of name, or -1. r.mu is held.
func (r *run) phaseAt(name string) int {
	for i := range r.nPhases {
		if r.phases[i].name == name {
			return i
		}
	}
	return -1
}

func (r *run) markAt(name string) int {
	for i := range r.nMarks {
		if r.marks[i].name == name {
			return i
		}
	}
	return -1
}

// addPhase adds the time from start to end to phase, recording it if new.
// r.mu is held.
func (r *run) addPhase(phase string, start, end time.Time) {
	if i := r.phaseAt(phase); i >= 0 {
		r.phases[i].d += end.Sub(start)
		r.phases[i].end = end
		return
	}
	if r.nPhases < len(r.phases) {
		r.phases[r.nPhases] = phaseDur{phase, end.Sub(start), start, end}
		r.nPhases++
	}
}

func (r *run) timed(phase string, f func() error) error {
	t := time.Now()
	err := f()
	end := time.Now()
	r.mu.Lock()
	r.addPhase(phase, t, end)
	r.mu.Unlock()
	return err
}

func (r *run) copyPhases() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, p := range r.phases[:r.nPhases] {
		r.res.Phases[p.name] = p.d.Seconds()
	}
}

// dropAttemptPhases forgets the handshake phases of an attempt the probe
// falls back from, so that initialize and the rest time the era that
// decided the result. The failed attempt's time stays in total; discover
// keeps its own phase (it is always the first attempt) and dns, connect and
// tls time the first connection, whichever attempt made it.
func (r *run) dropAttemptPhases() {
	r.mu.Lock()
	defer r.mu.Unlock()
	kept := r.phases[:0]
	for _, p := range r.phases[:r.nPhases] {
		switch p.name {
		case msg.PhaseInitialize, msg.PhaseInitialized, msg.PhasePing, msg.PhaseToolsList, msg.PhaseToolCall, msg.PhaseClose:
			continue
		}
		kept = append(kept, p)
	}
	r.nPhases = len(kept)
}
