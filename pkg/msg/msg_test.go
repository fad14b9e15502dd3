package msg

import (
	"bytes"
	"errors"
	"math"
	"testing"
	"time"
)

func TestProbeCommandDeterministic(t *testing.T) {
	slot := time.Date(2026, 11, 29, 13, 4, 30, 123, time.FixedZone("x", 3600))
	a := NewProbeCommand("ep1", slot)
	b := NewProbeCommand("ep1", slot.UTC().Truncate(time.Second))
	if !bytes.Equal(a.Body(), b.Body()) {
		t.Fatalf("bodies differ:\n%s\n%s", a.Body(), b.Body())
	}
	want := `{"schema":1,"endpointId":"ep1","slot":"2026-11-29T12:04:30Z"}`
	if got := string(a.Body()); got != want {
		t.Fatalf("Body() = %s, want %s", got, want)
	}
	if a.ProbeRunID() != b.ProbeRunID() || len(a.ProbeRunID()) != 32 {
		t.Fatalf("probe run IDs %q %q", a.ProbeRunID(), b.ProbeRunID())
	}
	if NewProbeCommand("ep1", slot.Add(time.Second)).ProbeRunID() == a.ProbeRunID() {
		t.Fatal("different slots share a probe run ID")
	}
}

func TestDedupIDs(t *testing.T) {
	w := time.Date(2026, 11, 29, 13, 4, 0, 0, time.UTC)
	r := ProbeResult{EndpointID: "ep1", ProbeRunID: "abc"}
	if got := r.DedupID(); got != "ep1-abc" {
		t.Errorf("result dedup = %q", got)
	}
	// Every region probes the same slot under the same run ID: each
	// region's result is its own message.
	r.Region = "eu"
	if got := r.DedupID(); got != "ep1-abc-eu" {
		t.Errorf("regional result dedup = %q, want ep1-abc-eu", got)
	}
	v := Verdict{EndpointID: "ep1", Window: w, WindowSecs: 60}
	if got := v.DedupID(); got != "verdict-ep1-2026-11-29T1304" {
		t.Errorf("verdict dedup = %q", got)
	}
	v2 := Verdict{EndpointID: "ep1", Window: w.Add(2 * time.Second), WindowSecs: 2}
	if got := v2.DedupID(); got != "verdict-ep1-2026-11-29T130402" {
		t.Errorf("sub-minute verdict dedup = %q", got)
	}
	inc := IncidentID("ep1", w)
	if inc != "ep1-20261129T130400Z" {
		t.Errorf("incident = %q", inc)
	}
	if got := AlertKey("ep1", inc); got != "alert-ep1-ep1-20261129T130400Z" {
		t.Errorf("alert key = %q", got)
	}
}

func TestDecodeSchema(t *testing.T) {
	var v Verdict
	if err := Decode([]byte(`{"schema":99}`), &v); !errors.Is(err, ErrSchema) {
		t.Fatalf("err = %v, want ErrSchema", err)
	}
	if err := Decode(Verdict{Schema: 1, EndpointID: "e"}.Body(), &v); err != nil || v.EndpointID != "e" {
		t.Fatalf("decode: %v %+v", err, v)
	}
	if err := Decode([]byte(`{`), &v); err == nil {
		t.Fatal("want error on bad JSON")
	}
}

func TestBlindFieldsAreOptionalOnTheWire(t *testing.T) {
	sighted := ProbeResult{Schema: SchemaVersion, EndpointID: "ep1", ProbeRunID: "abc", Status: StatusUp}
	if b := string(sighted.Body()); bytes.Contains([]byte(b), []byte("blind")) {
		t.Fatalf("a sighted result's body names blindness: %s", b)
	}
	var old ProbeResult
	if err := Decode([]byte(`{"schema":1,"endpointId":"ep1","probeRunId":"abc","status":"down"}`), &old); err != nil {
		t.Fatal(err)
	}
	if old.Blind || !old.BlindSince.IsZero() {
		t.Fatalf("a result written before blindness existed reads as blind: %+v", old)
	}
	since := time.Date(2026, 12, 1, 22, 0, 5, 0, time.UTC)
	blind := sighted
	blind.Blind, blind.BlindSince = true, since
	var back ProbeResult
	if err := Decode(blind.Body(), &back); err != nil {
		t.Fatal(err)
	}
	if !back.Blind || !back.BlindSince.Equal(since) {
		t.Fatalf("blind result round trip = %+v", back)
	}
}

func TestBlindSpellIdentity(t *testing.T) {
	since := time.Date(2026, 12, 1, 22, 0, 5, 0, time.FixedZone("x", 3600))
	s := BlindSpell{Region: "eu", Since: since}
	if got := s.ID(); got != "blind-eu-20261201T210005Z" {
		t.Errorf("ID = %q", got)
	}
	if got := (BlindSpell{Since: since}).ID(); got != "blind-_-20261201T210005Z" {
		t.Errorf("regionless ID = %q", got)
	}
	if got := s.LedgerKey("open", "webhook"); got != "blind-eu-20261201T210005Z:open:webhook" {
		t.Errorf("ledger key = %q", got)
	}
	// The end of a spell is not part of its identity: the recovered notice
	// pairs with the blind one.
	ended := s
	ended.Until = since.Add(time.Minute)
	if ended.ID() != s.ID() {
		t.Error("a spell's ID changes when it ends")
	}
	if (BlindSpell{Region: "eu", Since: since.Add(time.Second)}).ID() == s.ID() {
		t.Error("two spells share an ID")
	}
}

// A phase read back is a duration within 0 and MaxPhase whatever float a
// record stored before phases were bounded holds.
func TestPhaseDurationIsBounded(t *testing.T) {
	for _, tc := range []struct {
		secs float64
		want time.Duration
	}{
		{0.25, 250 * time.Millisecond},
		{1e308, MaxPhase},
		{math.Inf(1), MaxPhase},
		{-1, 0},
		{math.Inf(-1), 0},
		{math.NaN(), 0},
	} {
		if got := PhaseDuration(tc.secs); got != tc.want {
			t.Errorf("PhaseDuration(%g) = %v, want %v", tc.secs, got, tc.want)
		}
	}
}
