package prober

// conformance.go captures what pkg/conformance's rules judge while the
// handshake runs (the results of initialize or server/discover and
// tools/list, the session header, ping's answer), sends the active rules'
// extra requests when they are due, and turns it all into the result's
// Conformance and its regressed/restored events. None of it changes the
// probe's class: a server that answers is up however it conforms.

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"strings"
	"time"

	"github.com/mcpmon/mcpmon/pkg/conformance"
	"github.com/mcpmon/mcpmon/pkg/msg"
)

// confCapture is one run's conformance state.
type confCapture struct {
	obs conformance.Observation
	// prev is the previous result's conformance; slot the probe's; every
	// the period of the active requests (Options.ConformanceEvery).
	prev  *msg.Conformance
	slot  time.Time
	every time.Duration
	// activeTime is how long the active requests took: left out of the
	// probe's total, so they never make a probe degraded.
	activeTime time.Duration
}

// reset forgets what an attempt at one era saw, before the next era's.
func (c *confCapture) reset() {
	c.obs = conformance.Observation{}
}

// page keeps a tools/list result for the rules, up to conformance.MaxToolPages.
func (c *confCapture) page(res []byte) {
	if len(c.obs.ToolPages) < conformance.MaxToolPages {
		c.obs.ToolPages = append(c.obs.ToolPages, res)
	}
}

// heldBack notes that tools/list page n (1-based) lists more tools than
// a probe reads (max) and was not handed to the rules.
func (c *confCapture) heldBack(n, max int) {
	c.obs.ToolPageHeldBack = fmt.Sprintf("tools/list page %d lists more than %d tools, more than a probe reads", n, max)
}

// conformanceOf is the result's conformance and its events: evaluated when
// the probe negotiated an era and read its first result, otherwise the
// previous result's carried as it is (a probe that saw nothing says
// nothing new, and an outage between a pass and a fail must not hide the
// regression).
func (p *Prober) conformanceOf(r *run, res *msg.ProbeResult, secrets scrubber) (*msg.Conformance, []msg.Event) {
	o := r.conf.obs
	if r.conf.every < 0 {
		return nil, nil
	}
	if res.Status == msg.StatusDown || o.Era == "" || (o.Initialize == nil && o.Discover == nil) {
		return r.conf.prev, nil
	}
	o.Prev = r.conf.prev
	c := conformance.Evaluate(o, r.conf.slot)
	conformance.Bound(&c, func(s string) string { return clean(secrets.scrub(s)) })
	return &c, conformance.Events(res.ProbeRunID, r.conf.prev, &c)
}

// activeChecks sends the active rules' requests of the negotiated era, when
// due, inside the session the handshake opened (before its DELETE). Their
// failures are the rules' outcomes, never the probe's.
func (r *run) activeChecks(ctx context.Context) {
	c := &r.conf
	era := r.version
	c.obs.Era = era
	if r.legacy != nil || c.every < 0 || !conformance.Due(r.ep.ID, c.prev, era, conformance.ResultsDigest(c.obs), c.slot, c.every) {
		return
	}
	start := time.Now()
	defer func() { c.activeTime = time.Since(start) }()
	a := &conformance.Active{}
	c.obs.Active = a
	applies := func(id string) bool { return conformance.RuleApplies(id, era) }
	// A cheap request of the era: ping, which 2026-07-28 has no use for,
	// or tools/list there.
	rpc, params := "ping", any(emptyParams)
	if era == Version20260728 {
		rpc, params = "tools/list", map[string]any{}
	}
	if applies(conformance.RuleBatchRefused) {
		r.nextID++
		one := r.body(rpc, r.nextID, params)
		a.Batch = r.extra(ctx, append(append([]byte{'['}, one...), ']'), rpc, nil)
	}
	if applies(conformance.RuleForeignOrigin) {
		r.nextID++
		a.ForeignOrigin = r.extra(ctx, r.body(rpc, r.nextID, params), rpc, map[string]string{"Origin": conformance.ForeignOrigin})
	}
	if applies(conformance.RuleVersionHeader) {
		r.nextID++
		a.BadVersion = r.extra(ctx, r.body(rpc, r.nextID, params), rpc, map[string]string{"Mcp-Protocol-Version": conformance.UnsupportedVersion})
	}
	if applies(conformance.RuleHeaderMismatch) || applies(conformance.RuleHeaderMismatchCode) {
		r.nextID++
		a.HeaderMismatch = r.extra(ctx, r.body("tools/list", r.nextID, map[string]any{}), "tools/list", map[string]string{"Mcp-Method": conformance.MismatchedMethod})
	}
	if applies(conformance.RulePingRemoved) {
		r.nextID++
		a.Ping = r.extra(ctx, r.body("ping", r.nextID, map[string]any{}), "ping", nil)
	}
	if applies(conformance.RuleSetLevelRemoved) {
		r.nextID++
		a.SetLevel = r.extra(ctx, r.body("logging/setLevel", r.nextID, map[string]any{"level": "info"}), "logging/setLevel", nil)
	}
	if applies(conformance.RuleUnsupportedVersion) {
		r.nextID++
		a.BadMetaVersion = r.extra(ctx, r.futureVersionBody(r.nextID), "tools/list", map[string]string{"Mcp-Protocol-Version": conformance.FutureVersion})
	}
}

// futureVersionBody is a 2026-07-28 tools/list whose _meta asks for
// conformance.FutureVersion, the header saying the same (a mismatch would
// be answered -32020 instead); the rest of _meta is the run's, trace
// context included.
func (r *run) futureVersionBody(id int64) []byte {
	meta := maps.Clone(r.meta())
	meta["io.modelcontextprotocol/protocolVersion"] = conformance.FutureVersion
	return marshalRequest("tools/list", id, map[string]any{"_meta": meta})
}

// extra sends one active request, the probe's own headers with set
// replacing theirs, and reads the status and the start of the answer: at
// most conformance.MaxAnswerBody bytes, and of an SSE stream only up to its
// first data line, so a stream left open costs no more than its first event.
func (r *run) extra(ctx context.Context, body []byte, rpc string, set map[string]string) conformance.Answer {
	req := r.httpRequest(ctx, http.MethodPost, r.u, body, rpc)
	for k, v := range set {
		req.Header[k] = []string{v}
	}
	resp, err := r.client.Do(req)
	if err != nil {
		return conformance.Answer{Sent: true, Err: classify(ctx, err).Error()}
	}
	defer resp.Body.Close()
	a := conformance.Answer{Sent: true, Status: resp.StatusCode, ContentType: resp.Header.Get("Content-Type")}
	lr := io.LimitReader(resp.Body, conformance.MaxAnswerBody)
	if !strings.HasPrefix(a.ContentType, "text/event-stream") {
		a.Body, _ = io.ReadAll(lr)
		return a
	}
	var b bytes.Buffer
	sc := bufio.NewScanner(lr)
	sc.Buffer(make([]byte, 0, 1024), conformance.MaxAnswerBody)
	for sc.Scan() {
		b.Write(sc.Bytes())
		b.WriteByte('\n')
		if d, ok := bytes.CutPrefix(sc.Bytes(), []byte("data:")); ok && len(bytes.TrimSpace(d)) > 0 {
			break
		}
	}
	a.Body = b.Bytes()
	return a
}

// sessionHeaderSeen notes an Mcp-Session-Id on an answer where the era has
// no sessions (rule no-session-id).
func (r *run) sessionHeaderSeen(h http.Header) {
	if r.version == Version20260728 && h.Get("Mcp-Session-Id") != "" {
		r.conf.obs.SessionHeader = true
	}
}
