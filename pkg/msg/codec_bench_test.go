package msg

import (
	stdjson "encoding/json"
	"fmt"
	"testing"
	"time"

	jsonv1 "github.com/go-json-experiment/json/v1"
)

// benchResult is a result as the fleet run stores it: every phase, a
// certificate expiry, a catalog fingerprint and a full conformance block.
func benchResult() ProbeResult {
	t0 := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	exp := t0.Add(90 * 24 * time.Hour)
	r := ProbeResult{Schema: SchemaVersion, EndpointID: "ep-0123456789abcdef", ProbeRunID: "run-0123456789abcdef", Slot: t0, Region: "eu",
		StartedAt: t0, FinishedAt: t0.Add(3 * time.Millisecond), Status: StatusUp, Class: "ok", Transport: "streamable-http",
		ProtocolVersion: "2025-11-25", ServerName: "load", ServerVersion: "1.0.0", Phases: map[string]float64{}, CertExpiry: &exp,
		ToolCount: 3, CatalogFingerprint: "sha256:0123456789abcdef0123456789abcdef",
		Conformance: &Conformance{Era: "2025-11-25", CheckedAt: t0, ActiveAt: t0, ToolOrder: "sha256:aa", ToolSet: "sha256:bb", Results: "sha256:cc"}}
	for i, p := range Phases() {
		r.Phases[p] = float64(i) * 0.0003
	}
	for i := range 24 {
		r.Conformance.Rules = append(r.Conformance.Rules, RuleResult{ID: fmt.Sprintf("rule-%02d-some-name", i), Outcome: ConformancePass})
	}
	return r
}

// BenchmarkResultCodec: one result encoded and decoded with encoding/json
// (the peer) and with encoding/json's semantics on the json/v2 engine
// (github.com/go-json-experiment/json/v1), in the same run.
func BenchmarkResultCodec(b *testing.B) {
	r := benchResult()
	body, err := stdjson.Marshal(r)
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name      string
		marshal   func(any) ([]byte, error)
		unmarshal func([]byte, any) error
	}{
		{"encoding-json", stdjson.Marshal, stdjson.Unmarshal},
		{"json-v2-engine", jsonv1.Marshal, jsonv1.Unmarshal},
	} {
		b.Run("decode/"+c.name, func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				var got ProbeResult
				if err := c.unmarshal(body, &got); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("encode/"+c.name, func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				if _, err := c.marshal(r); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
