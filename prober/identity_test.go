package prober

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/msg"
)

func TestDecideIdentity(t *testing.T) {
	t0 := testSlot
	a := Identity{Transport: TransportStreamableHTTP, ProtocolVersion: Version20250618, ServerName: "s", ServerVersion: "1"}
	b := Identity{Transport: TransportStreamableHTTP, ProtocolVersion: Version20251125, ServerName: "s", ServerVersion: "2"}
	upA := &msg.ProbeResult{Status: msg.StatusUp, Transport: a.Transport, ProtocolVersion: a.ProtocolVersion, ServerName: "s", ServerVersion: "1"}
	down := &msg.ProbeResult{Status: msg.StatusDown, Class: ClassRefused}
	tests := []struct {
		name      string
		doc       *identityDoc
		prev      *msg.ProbeResult
		slot      time.Time
		cur       Identity
		wantBase  *Identity
		wantWrite *identityDoc
	}{
		{name: "first probe ever: nothing to compare, remember it", slot: t0, cur: a, wantWrite: &identityDoc{Slot: t0, Current: a}},
		{name: "no document: a successful previous result stands in", prev: upA, slot: t0, cur: b, wantBase: &a, wantWrite: &identityDoc{Slot: t0, Current: b, Previous: &a}},
		{name: "no document: a failed previous result is no base", prev: down, slot: t0, cur: b, wantWrite: &identityDoc{Slot: t0, Current: b}},
		{name: "unchanged: compare, no write", doc: &identityDoc{Slot: t0, Current: a}, prev: down, slot: t0.Add(time.Minute), cur: a, wantBase: &a},
		{name: "changed after a failure: compared with the last success", doc: &identityDoc{Slot: t0, Current: a}, prev: down, slot: t0.Add(2 * time.Minute), cur: b,
			wantBase: &a, wantWrite: &identityDoc{Slot: t0.Add(2 * time.Minute), Current: b, Previous: &a}},
		{name: "redelivery of the changing slot compares with what it replaced", doc: &identityDoc{Slot: t0, Current: b, Previous: &a}, slot: t0, cur: b, wantBase: &a},
		{name: "straggler older than the document: no event, no write", doc: &identityDoc{Slot: t0, Current: b}, slot: t0.Add(-time.Minute), cur: a},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			base, write := decideIdentity(tc.doc, tc.prev, tc.slot, tc.cur)
			if (base == nil) != (tc.wantBase == nil) || base != nil && *base != *tc.wantBase {
				t.Errorf("base = %+v, want %+v", base, tc.wantBase)
			}
			if (write == nil) != (tc.wantWrite == nil) {
				t.Fatalf("write = %+v, want %+v", write, tc.wantWrite)
			}
			if write != nil && (!write.Slot.Equal(tc.wantWrite.Slot) || write.Current != tc.wantWrite.Current ||
				(write.Previous == nil) != (tc.wantWrite.Previous == nil) || write.Previous != nil && *write.Previous != *tc.wantWrite.Previous) {
				t.Errorf("write = %+v, want %+v", write, tc.wantWrite)
			}
		})
	}
}

func eventKinds(res msg.ProbeResult) []string {
	var out []string
	for _, e := range res.Events {
		out = append(out, e.Kind)
	}
	return out
}

func hasEvent(res msg.ProbeResult, kind string) bool {
	for _, e := range res.Events {
		if e.Kind == kind {
			return true
		}
	}
	return false
}

// TestChangesAreMeasuredAgainstTheLastSuccess walks one endpoint through
// probes against live servers: the protocol moves across a failed probe, the
// server's version moves, and a redelivered command repeats its events.
func TestChangesAreMeasuredAgainstTheLastSuccess(t *testing.T) {
	older := streamable(t, sdkServer(Version20250618), mcp.StreamableHTTPOptions{JSONResponse: true}).URL
	newer := streamable(t, sdkServer(Version20251125), mcp.StreamableHTTPOptions{JSONResponse: true}).URL
	upgraded := mcp.NewServer(&mcp.Implementation{Name: "fixture", Version: "2.0.0"}, &mcp.ServerOptions{SupportedProtocolVersions: []string{Version20251125}})
	renamed := streamable(t, upgraded, mcp.StreamableHTTPOptions{JSONResponse: true}).URL
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := "http://" + l.Addr().String() + "/mcp"
	l.Close()

	objs := &objectsFake{m: map[string][]byte{}}
	p := testProber(t, func(o *Options) { o.Catalogs = objs })
	var prev *msg.ProbeResult
	steps := []struct {
		name  string
		url   string
		slot  int // minutes after testSlot
		class string
		want  []string
	}{
		{"first success", older, 0, ClassOK, nil},
		{"refused", refused, 1, ClassRefused, nil},
		{"protocol moved while the server was down", newer, 2, ClassOK, []string{EventVersionChanged}},
		{"redelivered command raises the same event", newer, 2, ClassOK, []string{EventVersionChanged}},
		{"unchanged", newer, 3, ClassOK, nil},
		{"server version moved", renamed, 4, ClassOK, []string{EventServerChanged}},
	}
	for _, st := range steps {
		ep := model.Endpoint{ID: "ep1", URL: st.url, Transport: TransportAuto, Timeout: 5 * time.Second}
		res := p.ProbeAfter(context.Background(), ep, msg.NewProbeCommand("ep1", testSlot.Add(time.Duration(st.slot)*time.Minute)), prev)
		if res.Class != st.class {
			t.Fatalf("%s: class %s %q, want %s", st.name, res.Class, res.Error, st.class)
		}
		got := eventKinds(res)
		if len(got) != len(st.want) || (len(got) > 0 && got[0] != st.want[0]) {
			t.Fatalf("%s: events %v, want %v (%+v)", st.name, got, st.want, res.Events)
		}
		if st.name == "server version moved" {
			mustContain(t, res.Events[0].Message, `"fixture" 1.2.3 to "fixture" 2.0.0`)
		}
		prev = &res
	}
}

// TestAutoRenegotiatesTheEra: a server last seen on 2025-11-25 that now
// speaks 2026-07-28 keeps being asked for 2025-11-25 only within one
// renegotiation period; a later period, or a failed previous probe, starts
// again from the newest era.
func TestAutoRenegotiatesTheEra(t *testing.T) {
	url := streamable(t, sdkServer(), mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true}).URL
	samePeriod := testSlot.Add(-time.Second)
	for renegotiate("ep1", samePeriod, testSlot) {
		samePeriod = samePeriod.Add(time.Second) // the boundary fell in between: step over it
	}
	tests := []struct {
		name        string
		prevSlot    time.Time
		prevStatus  msg.Status
		wantVersion string
	}{
		{"same period keeps the era it found", samePeriod, msg.StatusUp, Version20251125},
		{"next period starts from the newest era", testSlot.Add(-RenegotiateEvery), msg.StatusUp, Version20260728},
		{"after a failure starts from the newest era", samePeriod, msg.StatusDown, Version20260728},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			prev := &msg.ProbeResult{EndpointID: "ep1", Slot: tc.prevSlot, Status: tc.prevStatus, ProtocolVersion: Version20251125, Transport: TransportStreamableHTTP}
			res := testProber(t, nil).ProbeAfter(context.Background(), endpoint(url), cmd(), prev)
			if res.Class != ClassOK || res.ProtocolVersion != tc.wantVersion {
				t.Fatalf("class %s %q version %s, want %s", res.Class, res.Error, res.ProtocolVersion, tc.wantVersion)
			}
			if changed := hasEvent(res, EventVersionChanged); changed != (tc.wantVersion != Version20251125 && tc.prevStatus != msg.StatusDown) {
				t.Errorf("version event %v: %+v", changed, res.Events)
			}
		})
	}
}
