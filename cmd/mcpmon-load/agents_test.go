package main

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

// The agents run counts what the agents saw: results accepted and refused
// from the posts' answers, commands and their lateness from the polls',
// 429s apart, nothing outside the measured window.
func TestExchangeStatsCountWhatTheAgentsSaw(t *testing.T) {
	var st exchangeStats
	now := time.Date(2026, 12, 2, 6, 0, 0, 0, time.UTC)
	st.measure(true)
	st.record(true, http.StatusOK, 20*time.Millisecond, []byte(`{"accepted":5,"refused":[{"index":0,"status":400,"detail":"x"}]}`), now)
	st.record(true, http.StatusTooManyRequests, time.Millisecond, nil, now)
	st.record(false, http.StatusOK, time.Second, []byte(`{"commands":[{"endpointId":"e1","slot":"2026-12-02T05:59:58Z","endpoint":{}},{"endpointId":"e2","slot":"2026-12-02T06:00:00Z","endpoint":{}}],"withheld":1}`), now)
	st.record(false, http.StatusServiceUnavailable, time.Millisecond, nil, now)
	s := st.snapshot()
	if s.accepted != 5 || s.refused != 1 || s.posts != 1 || s.polls != 1 || s.commands != 2 || s.withheld != 1 ||
		s.status429["post"] != 1 || s.statusElse["poll"] != 1 || countOver(s.lateness, time.Second) != 1 {
		t.Fatalf("snapshot = %+v", s)
	}
	rows := agentsRows(agentsOptions{agents: 1, perAgent: 10, schedule: "@every 2s", interval: 2 * time.Second}, s,
		agentsSample{verdicts: map[string]float64{"up": 1}}, agentsSample{verdicts: map[string]float64{"up": 4, "no_data": 1}}, time.Second)
	var text strings.Builder
	writeTable(&text, rows)
	for _, want := range []string{"| results accepted / s (expected) | 5.0 (5.0) → 1.000 |", "| 429 answers: polls, posts | 0, 1 |", "| windows no_data | 25.0 % (1 of 4 verdicts) |"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, text.String())
		}
	}
}
