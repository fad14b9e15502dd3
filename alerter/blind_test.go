package alerter

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mcpmon/mcpmon/pkg/alert"
	"github.com/mcpmon/mcpmon/pkg/msg"
)

func TestBlindnessNoticesGoOutOncePerSpell(t *testing.T) {
	e := newEnv(t)
	a := e.alerter("a1")
	spell := msg.BlindSpell{Region: "eu", Since: t0}

	e.rcv.failNext(http.StatusBadGateway, http.StatusBadGateway, http.StatusBadGateway, http.StatusBadGateway)
	if err := a.NotifyBlindness(e.ctx, spell); err == nil {
		t.Fatal("a notice the sink refused past its retry budget reported delivered")
	}
	for range 3 { // the caller's retries, another replica's call, a restart
		if err := a.NotifyBlindness(e.ctx, spell); err != nil {
			t.Fatal(err)
		}
	}
	other := e.alerter("a2")
	if err := other.NotifyBlindness(e.ctx, spell); err != nil {
		t.Fatal(err)
	}
	ended := spell
	ended.Until = t0.Add(5 * time.Minute)
	for range 2 {
		if err := a.NotifyBlindness(e.ctx, ended); err != nil {
			t.Fatal(err)
		}
	}
	got := e.rcv.notifications()
	if len(got) != 2 {
		t.Fatalf("received %d notices, want one blind and one recovered: %+v", len(got), got)
	}
	blind, back := got[0], got[1]
	if blind.Kind != alert.KindOpen || blind.IncidentKind != IncidentKindBlind || blind.IncidentID != spell.ID() ||
		!strings.Contains(blind.Reason, "mcpmon is blind in region eu since 2026-03-01T12:00:00Z") {
		t.Fatalf("blind notice = %+v", blind)
	}
	if back.Kind != alert.KindResolve || back.IncidentID != spell.ID() || back.ResolvedAt == nil || !back.ResolvedAt.Equal(ended.Until) ||
		!strings.Contains(back.Reason, "sees again in region eu") {
		t.Fatalf("recovered notice = %+v", back)
	}
	if blind.Key != spell.LedgerKey("open", "hook") || back.Key != spell.LedgerKey("resolve", "hook") {
		t.Fatalf("ledger keys %q %q", blind.Key, back.Key)
	}

	// The next spell is a spell of its own.
	next := msg.BlindSpell{Region: "eu", Since: t0.Add(time.Hour)}
	if err := a.NotifyBlindness(e.ctx, next); err != nil {
		t.Fatal(err)
	}
	if got := e.rcv.notifications(); len(got) != 3 || got[2].IncidentID != next.ID() {
		t.Fatalf("notices after a second spell = %+v", got)
	}
}

// warningsOnly takes only warning notifications.
type warningsOnly struct{ httpSink }

func (warningsOnly) TakesSeverity(s string) bool { return s == "warning" }

func TestBlindnessNoticesSkipSinksThatRefuseCritical(t *testing.T) {
	e := newEnv(t)
	a := e.alerter("a1", func(o *Options) { o.Sinks = []alert.Sink{warningsOnly{e.sink.(httpSink)}} })
	if err := a.NotifyBlindness(e.ctx, msg.BlindSpell{Since: t0}); err != nil {
		t.Fatal(err)
	}
	if got := e.rcv.notifications(); len(got) != 0 {
		t.Fatalf("a warnings-only sink got %+v", got)
	}
}
