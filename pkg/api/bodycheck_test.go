package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	apiv1 "github.com/mcpmon/mcpmon/pkg/api/v1"
	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/msg"
)

// nested is n arrays nested inside each other around inner.
func nested(n int, inner string) string {
	return strings.Repeat("[", n) + inner + strings.Repeat("]", n)
}

// members is an object of n members; elements an array of n strings.
func members(n int) string {
	var b strings.Builder
	b.WriteString("{")
	for i := range n {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `"k%d":"v"`, i)
	}
	return b.String() + "}"
}

func elements(n int) string {
	return "[" + strings.TrimSuffix(strings.Repeat(`"e",`, n), ",") + "]"
}

// TestCheckJSON: the door refuses nesting past 64 levels at "#", more
// than 1024 members in one object or array and 4096 values in all, text
// that is not valid UTF-8 and a duplicate member, each at its pointer,
// at any depth, and lets everything else through (invalid JSON included:
// the decoder names its byte offset).
func TestCheckJSON(t *testing.T) {
	for _, tc := range []struct {
		name, body, pointer, detail string // pointer "" = accepted
	}{
		{"flat object", `{"a":1,"b":"x"}`, "", ""},
		{"64 levels", nested(64, "1"), "", ""},
		{"65 levels", nested(65, "1"), "#", "nested more than 64"},
		{"10,000 levels", `{"sinks":` + nested(9990, "") + `}`, "#", "nested more than 64"},
		{"unclosed 10,000 levels", strings.Repeat("[", 10000), "#", "nested more than 64"},
		{"brackets in strings do not count", `{"a":"` + strings.Repeat("[", 100) + `"}`, "", ""},
		{"escaped quote in string", `{"a":"\"[[[[","b":1}`, "", ""},
		{"invalid JSON passes to the decoder", `{"a":}`, "", ""},
		{"duplicate at the top", `{"url":"https://a","url":"http://b"}`, "#/url", "duplicate key"},
		{"duplicate deep inside", `{"sinks":[{"type":"x"},{"cfg":[[{"k":1,"k":2}]]}]}`, "#/sinks/1/cfg/0/0/k", "duplicate key"},
		{"escaped duplicate", `{"url":1,"\u0075rl":2}`, "#/url", "duplicate key"},
		{"invalid UTF-8 in a name", "{\"a\":{\"\xff\":1}}", "#/a", "member names must be valid UTF-8"},
		{"invalid UTF-8 in a value", "{\"labels\":{\"team\":\"a\xffb\"}}", "#/labels/team", "must be valid UTF-8"},
		{"invalid UTF-8 in an element", "{\"regions\":[\"eu\",\"\xc3\"]}", "#/regions/1", "must be valid UTF-8"},
		{"a lone high surrogate", `{"name":"x\ud800"}`, "#/name", "must be valid UTF-8"},
		{"a lone low surrogate", `{"name":"\udc00x"}`, "#/name", "must be valid UTF-8"},
		{"a high surrogate before a non-surrogate", `{"name":"\ud800\u0041"}`, "#/name", "must be valid UTF-8"},
		{"a surrogate pair", `{"name":"\ud83d\ude00 \u00e9 \\ud800"}`, "", ""},
		{"valid UTF-8", `{"name":"café ☃"}`, "", ""},
		{"1024 members", `{"labels":` + members(1024) + `}`, "", ""},
		{"1025 members", `{"labels":` + members(1025) + `}`, "#/labels", "at most 1024 members"},
		{"1025 elements", `{"a":{"endpointIds":` + elements(1025) + `}}`, "#/a/endpointIds", "at most 1024 elements"},
		{"4096 values", `[` + strings.Repeat(elements(1000)+",", 4) + elements(90) + `]`, "", ""},
		{"4097 values", `[` + strings.Repeat(elements(1000)+",", 4) + elements(91) + `]`, "#/4/90", "at most 4096 JSON values"},
		{"caps before validity", `{"labels":` + members(1025) + `,}`, "#/labels", "at most 1024 members"},
		{"a close with nothing open passes to the decoder", `]]]`, "", ""},
		{"an unclosed string passes to the decoder", "{\"a\":\"\xff", "", ""},
		{"pointer escapes", `{"a/b":{"~":1,"~":2}}`, "#/a~1b/~0", "duplicate key"},
		{"same name in sibling objects", `{"a":{"x":1},"b":{"x":1}}`, "", ""},
		{"same name at two depths", `{"x":{"x":{"x":1}}}`, "", ""},
		{"name equal to a value", `{"a":"b","b":"a"}`, "", ""},
		{"strings after empty objects in an array are values", `[{},"a",{},"a"]`, "", ""},
		{"strings after empty objects in a member", `{"s":[{},"x",{},"x"],"t":1}`, "", ""},
		{"duplicate after an empty object", `{"a":{},"b":1,"b":2}`, "#/b", "duplicate key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, p := checkJSON([]byte(tc.body), bodyLimits)
			if tc.pointer == "" {
				if p != nil {
					t.Fatalf("refused: %+v", p.Errors)
				}
				return
			}
			if p == nil || p.Status != 400 || len(p.Errors) != 1 {
				t.Fatalf("got %+v, want one 400 field problem at %s", p, tc.pointer)
			}
			if fe := p.Errors[0]; fe.Pointer != tc.pointer || !strings.Contains(fe.Detail, tc.detail) {
				t.Fatalf("problem %+v, want pointer %q and a detail with %q", fe, tc.pointer, tc.detail)
			}
		})
	}
}

// TestDuplicateKeyAgreesWithTheDecoderWalk: the linear walk finds the
// same duplicate, at the same pointer, as a walk of the decoder's tokens.
func TestDuplicateKeyAgreesWithTheDecoderWalk(t *testing.T) {
	for _, body := range []string{
		`{"a":[1,{"b":2,"c":[{"d":1,"d":2}]}]}`,
		`[{"a":1},{"a":1,"a":2}]`,
		`{"a":{"b":1},"a":{"b":2}}`,
		`{"":1,"":2}`,
		`{"x\"y":1,"x\"y":2}`,
		`[[[],[[],{"q":{},"q":[]}]]]`,
	} {
		got := ""
		if _, p := checkJSON([]byte(body), bodyLimits); p != nil {
			got = p.Errors[0].Pointer
		}
		if want := oldDuplicateKey([]byte(body)); got != want {
			t.Errorf("%s: checkJSON refuses at %q, the decoder walk finds the duplicate at %q", body, got, want)
		}
	}
}

// ---- the peer: the decoder-token walk the API used, building a pointer
// string per value (quadratic in depth), kept as the benchmark's baseline.

func oldDuplicateKey(body []byte) string {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if ptr, err := oldDupValue(dec, "#"); errors.Is(err, errOldDuplicate) {
		return ptr
	}
	return ""
}

var errOldDuplicate = errors.New("duplicate key")

func oldDupValue(dec *json.Decoder, ptr string) (string, error) {
	tok, err := dec.Token()
	if err != nil {
		return "", err
	}
	d, ok := tok.(json.Delim)
	if !ok {
		return "", nil
	}
	switch d {
	case '{':
		seen := map[string]bool{}
		for dec.More() {
			kt, err := dec.Token()
			if err != nil {
				return "", err
			}
			k, _ := kt.(string)
			kp := ptr + "/" + pointerEscape(k)
			if seen[k] {
				return kp, errOldDuplicate
			}
			seen[k] = true
			if p, err := oldDupValue(dec, kp); err != nil {
				return p, err
			}
		}
	case '[':
		for i := 0; dec.More(); i++ {
			if p, err := oldDupValue(dec, ptr+"/"+strconv.Itoa(i)); err != nil {
				return p, err
			}
		}
	}
	_, err = dec.Token()
	if errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF
	}
	return "", err
}

// benchBodies builds the three shapes at about size bytes: flat (one
// object of many string members), wide (an array of many small objects)
// and deep (objects nested 64 levels, repeated side by side).
func benchBodies(size int) map[string][]byte {
	var flat, wide, deep bytes.Buffer
	flat.WriteString("{")
	for i := 0; flat.Len() < size; i++ {
		if i > 0 {
			flat.WriteString(",")
		}
		fmt.Fprintf(&flat, `"member%d":"a value of some length"`, i)
	}
	flat.WriteString("}")
	wide.WriteString("[")
	for i := 0; wide.Len() < size; i++ {
		if i > 0 {
			wide.WriteString(",")
		}
		fmt.Fprintf(&wide, `{"id":%d,"name":"n","on":true}`, i)
	}
	wide.WriteString("]")
	one := strings.Repeat(`{"k":`, maxBodyDepth-1) + "1" + strings.Repeat("}", maxBodyDepth-1)
	deep.WriteString("[")
	for i := 0; deep.Len() < size; i++ {
		if i > 0 {
			deep.WriteString(",")
		}
		deep.WriteString(one)
	}
	deep.WriteString("]")
	return map[string][]byte{"flat": flat.Bytes(), "wide": wide.Bytes(), "deep64": deep.Bytes()}
}

// BenchmarkBodyCheck measures the door (checkJSON) against the decoder
// walk it replaced (old) on the same bodies, per shape and size: ns/op
// and B/op grow linearly with the size for checkJSON; MB/s is its cost
// per byte. Compare with benchstat, or read the ratio off the old/new
// pairs.
//
// The flat and wide shapes hold more members than a request may, so the
// pass runs without the count caps here: what is measured is its cost per
// byte over the whole size.
func BenchmarkBodyCheck(b *testing.B) {
	uncapped := bodyCaps{depth: maxBodyDepth, members: math.MaxInt, values: math.MaxInt}
	for _, size := range []int{1 << 10, 16 << 10, 256 << 10, 1 << 20} {
		bodies := benchBodies(size)
		for _, shape := range []string{"flat", "wide", "deep64"} {
			body := bodies[shape]
			if _, p := checkJSON(body, uncapped); p != nil {
				b.Fatalf("%s %d: refused: %+v", shape, size, p.Errors)
			}
			name := fmt.Sprintf("%s/%dKiB", shape, size>>10)
			b.Run("new/"+name, func(b *testing.B) {
				b.SetBytes(int64(len(body)))
				b.ReportAllocs()
				for b.Loop() {
					_, _ = checkJSON(body, uncapped)
				}
			})
			b.Run("old/"+name, func(b *testing.B) {
				b.SetBytes(int64(len(body)))
				b.ReportAllocs()
				for b.Loop() {
					_ = oldDuplicateKey(body)
				}
			})
		}
	}
	// The attack: 20 KB of arrays nested 9,990 deep (within encoding/json's
	// own limit), which checkJSON refuses at the 65th bracket.
	attack := []byte(`{"sinks":` + nested(9990, "") + `}`)
	b.Run("new/attack-9990-deep", func(b *testing.B) {
		b.SetBytes(int64(len(attack)))
		b.ReportAllocs()
		for b.Loop() {
			_, _ = checkJSON(attack, bodyLimits)
		}
	})
	b.Run("old/attack-9990-deep", func(b *testing.B) {
		b.SetBytes(int64(len(attack)))
		b.ReportAllocs()
		for b.Loop() {
			_ = oldDuplicateKey(attack)
		}
	})
}

// wideLabels is the wide-object attack: an endpoint whose labels object
// has n members, about 1 MiB at 80,000.
func wideLabels(n int) []byte {
	return []byte(`{"name":"x","url":"https://a.example.com/mcp","labels":` + members(n) + `}`)
}

// BenchmarkBodyCheckWideObject puts the refusal of a 1 MiB body of
// 80,000 label members beside the decode of a valid endpoint and beside
// what the same body cost before the count caps (checked without them,
// then decoded, then refused by the 32-label cap). Each reports its
// time and bytes allocated as a multiple of the valid body's
// (x-valid-ns, x-valid-B): the refusal should cost about what a valid
// body does, not a hundred times more.
func BenchmarkBodyCheckWideObject(b *testing.B) {
	valid := []byte(`{"name":"search","url":"https://mcp.example.com/mcp","schedule":"@every 30s",` +
		`"headers":{"Authorization":"Bearer t0k3n"},"labels":{"team":"search","env":"prod","tier":"1"},` +
		`"rules":{"openAfter":3,"resolveAfter":2},"regions":["eu-west-1","us-east-1"]}`)
	attack := wideLabels(80000)
	uncapped := bodyCaps{depth: maxBodyDepth, members: math.MaxInt, values: math.MaxInt}
	decode := func(body []byte, caps bodyCaps) {
		checked, p := checkJSON(body, caps)
		if p != nil {
			return
		}
		var in apiv1.EndpointInput
		_ = decodeStrict(checked, &in)
	}
	if _, p := checkJSON(attack, bodyLimits); p == nil || p.Errors[0].Pointer != "#/labels" {
		b.Fatalf("%d-byte attack: %+v, want a refusal at #/labels", len(attack), p)
	}
	// The valid body runs first; its last run's cost per op is the unit
	// of the others' x-valid metrics.
	var refNs, refBytes float64
	for _, bc := range []struct {
		name string
		body []byte
		caps bodyCaps
	}{
		{"valid-endpoint", valid, bodyLimits},
		{"labels-80k-refused", attack, bodyLimits},
		{"labels-80k-uncapped-decoded", attack, uncapped},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(len(bc.body)))
			b.ReportAllocs()
			var m0, m1 runtime.MemStats
			runtime.ReadMemStats(&m0)
			for b.Loop() {
				decode(bc.body, bc.caps)
			}
			runtime.ReadMemStats(&m1)
			ns, bytes := float64(b.Elapsed().Nanoseconds())/float64(b.N), float64(m1.TotalAlloc-m0.TotalAlloc)/float64(b.N)
			if bc.name == "valid-endpoint" {
				refNs, refBytes = ns, max(bytes, 1)
			}
			b.ReportMetric(ns/refNs, "x-valid-ns")
			b.ReportMetric(bytes/refBytes, "x-valid-B")
		})
	}
}

// TestLargestBodiesPass: the largest body each route accepts is within
// its caps, so the count caps refuse only what the field caps would
// refuse after decoding: a maintenance window at every cap, and an
// agent's batch of apiv1.MaxAgentResults results, each with every phase,
// a few events and msg.MaxConformanceRules rule outcomes.
func TestLargestBodiesPass(t *testing.T) {
	ids := make([]string, model.MaxWindowEndpointIDs)
	for i := range ids {
		ids[i] = fmt.Sprintf("%016d", i)
	}
	sel := map[string]string{}
	for i := range model.MaxWindowSelector {
		sel[fmt.Sprintf("k%d", i)] = "v"
	}
	window, _ := json.Marshal(apiv1.MaintenanceInput{Name: "all", EndpointIDs: ids, Selector: sel, Cron: "0 2 * * *", Duration: "2h"})

	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	r := msg.ProbeResult{Schema: msg.SchemaVersion, EndpointID: "e", ProbeRunID: "r", Slot: at, Region: "eu", StartedAt: at, FinishedAt: at,
		Status: msg.StatusUp, Class: "ok", Error: "e", HTTPStatus: 200, Transport: "t", ProtocolVersion: "v", ServerName: "s", ServerVersion: "v",
		Phases: map[string]float64{}, CertExpiry: &at, ToolCount: 1, CatalogFingerprint: "f", CatalogTruncated: true, Blind: true, BlindSince: at,
		Conformance: &msg.Conformance{Era: "e", CheckedAt: at, ActiveAt: at, ToolOrder: "o", ToolSet: "s", Results: "r"}}
	for _, p := range []string{msg.PhaseDNS, msg.PhaseConnect, msg.PhaseTLS, msg.PhaseDiscover, msg.PhaseInitialize, msg.PhaseInitialized,
		msg.PhasePing, msg.PhaseToolsList, msg.PhaseClose, msg.PhaseTotal, msg.PhaseToolCall, msg.PhaseAuthToken} {
		r.Phases[p] = 0.1
	}
	for range 4 {
		r.Events = append(r.Events, msg.Event{Kind: "k", Severity: "info", Message: "m", Fingerprint: "f",
			Details: map[string]any{"tools": []string{"a", "b", "c"}, "from": "x", "to": "y"}})
	}
	for i := range msg.MaxConformanceRules {
		r.Conformance.Rules = append(r.Conformance.Rules, msg.RuleResult{ID: fmt.Sprint(i), Outcome: msg.ConformanceFail, Detail: "d"})
	}
	results := apiv1.AgentResults{}
	for range apiv1.MaxAgentResults {
		results.Results = append(results.Results, r)
	}
	batch, _ := json.Marshal(results)

	for _, tc := range []struct {
		name string
		body []byte
		caps bodyCaps
	}{
		{"maintenance window", window, bodyLimits},
		{"agent results", batch, agentResultsLimits},
	} {
		// The fewest values the body passes within: how many it holds.
		values := sort.Search(1<<20, func(v int) bool {
			_, p := checkJSON(tc.body, bodyCaps{depth: tc.caps.depth, members: tc.caps.members, values: v})
			return p == nil
		})
		if _, p := checkJSON(tc.body, tc.caps); p != nil {
			t.Errorf("%s (%d bytes, %d values): refused %+v", tc.name, len(tc.body), values, p.Errors)
		}
		t.Logf("%s: %d bytes, %d values of %d", tc.name, len(tc.body), values, tc.caps.values)
	}
}
