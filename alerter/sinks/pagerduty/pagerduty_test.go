package pagerduty

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/mcpmon/mcpmon/pkg/alert"
	"github.com/mcpmon/mcpmon/pkg/clock"
	"github.com/mcpmon/mcpmon/pkg/testpeers"
)

const routingKey = "R0UT1NGK3Y0123456789abcdef012345" // 32 characters, like a real integration key

var opened = time.Date(2026, 3, 4, 5, 0, 0, 0, time.UTC)

func notification(kind alert.Kind) alert.Notification {
	n := alert.Notification{
		Key:          "alert-ep1-ep1-20260304T050000Z:" + string(kind) + ":pd",
		Kind:         kind,
		EndpointID:   "ep1",
		EndpointName: "billing",
		EndpointURL:  "https://mcp.example.com/mcp",
		Labels:       map[string]string{"group": "payments"},
		IncidentID:   "ep1-20260304T050000Z",
		State:        "open",
		Class:        "timeout",
		Reason:       "initialize timed out",
		FirstFailure: opened.Add(-time.Minute),
		OpenedAt:     opened,
	}
	if kind == alert.KindResolve {
		n.State = "resolved"
		r := opened.Add(time.Hour)
		n.ResolvedAt = &r
	}
	return n
}

// eventsAPI is a local stand-in for events.pagerduty.com/v2/enqueue that
// enforces the documented request schema and answers like the real API.
type eventsAPI struct {
	mu       sync.Mutex
	events   []Event
	raw      [][]byte
	override int // answer this status instead of validating (0 = validate)
	rcv      *testpeers.Receiver
}

func newEventsAPI(t *testing.T) *eventsAPI {
	a := &eventsAPI{}
	a.rcv = testpeers.NewReceiver(t, func(http.Handler) http.Handler { return http.HandlerFunc(a.serve) })
	return a
}

func (a *eventsAPI) serve(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	a.mu.Lock()
	override := a.override
	a.mu.Unlock()
	if override != 0 {
		w.WriteHeader(override)
		_, _ = io.WriteString(w, `{"status":"throttle event","message":"Requests for this service are arriving too quickly."}`)
		return
	}
	reject := func(msg string) {
		w.WriteHeader(http.StatusBadRequest)
		_ = json.NewEncoder(w).Encode(Response{Status: "invalid event", Message: "Event object is invalid", Errors: []string{msg}})
	}
	if r.Method != http.MethodPost || r.URL.Path != "/v2/enqueue" || r.Header.Get("Content-Type") != "application/json" {
		reject("want POST /v2/enqueue with application/json")
		return
	}
	body, _ := io.ReadAll(r.Body)
	var ev Event
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&ev); err != nil {
		reject("unknown or malformed field: " + err.Error())
		return
	}
	if msg := validate(ev); msg != "" {
		reject(msg)
		return
	}
	a.mu.Lock()
	a.events = append(a.events, ev)
	a.raw = append(a.raw, body)
	a.mu.Unlock()
	w.WriteHeader(http.StatusAccepted)
	_ = json.NewEncoder(w).Encode(Response{Status: "success", Message: "Event processed", DedupKey: ev.DedupKey})
}

// validate applies the Events API v2 field rules from PagerDuty's docs.
func validate(ev Event) string {
	switch {
	case ev.RoutingKey == "":
		return "routing_key is required"
	case ev.EventAction != "trigger" && ev.EventAction != "acknowledge" && ev.EventAction != "resolve":
		return "event_action must be trigger, acknowledge or resolve"
	case ev.EventAction != "trigger" && ev.DedupKey == "":
		return "dedup_key is required for acknowledge and resolve"
	case len(ev.DedupKey) > 255:
		return "dedup_key longer than 255"
	}
	for _, l := range ev.Links {
		if l.Href == "" {
			return "links[].href is required"
		}
	}
	if ev.EventAction != "trigger" {
		return ""
	}
	p := ev.Payload
	switch {
	case p == nil:
		return "payload is required for trigger"
	case p.Summary == "" || utf8.RuneCountInString(p.Summary) > 1024:
		return "payload.summary must be 1..1024 characters"
	case p.Source == "":
		return "payload.source is required"
	case !validSeverity(p.Severity):
		return "payload.severity must be critical, error, warning or info"
	}
	if p.Timestamp != "" {
		if _, err := time.Parse(time.RFC3339, p.Timestamp); err != nil {
			return "payload.timestamp must be ISO 8601"
		}
	}
	return ""
}

func (a *eventsAPI) newSink(t *testing.T, logs io.Writer) *Sink {
	t.Helper()
	if logs == nil {
		logs = io.Discard
	}
	s, err := New(Options{Name: "pd", RoutingKey: routingKey, URL: a.rcv.URL + "/v2/enqueue", ClientURL: "https://mcpmon.example.com",
		Clock: clock.NewFake(opened), Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestTriggerAndResolveFields(t *testing.T) {
	api := newEventsAPI(t)
	var logs bytes.Buffer
	s := api.newSink(t, &logs)
	ctx := context.Background()
	for _, k := range []alert.Kind{alert.KindOpen, alert.KindReminder, alert.KindResolve} {
		if err := s.Notify(ctx, notification(k)); err != nil {
			t.Fatalf("Notify(%s): %v", k, err)
		}
	}
	if len(api.events) != 3 {
		t.Fatalf("API accepted %d events, want 3", len(api.events))
	}
	trig := api.events[0]
	if trig.RoutingKey != routingKey || trig.EventAction != "trigger" || trig.DedupKey != "ep1-20260304T050000Z" {
		t.Errorf("trigger envelope = %s/%s, want trigger with dedup_key = incident ID", trig.EventAction, trig.DedupKey)
	}
	if trig.Client != "mcpmon" || trig.ClientURL != "https://mcpmon.example.com" {
		t.Errorf("client = %q, client_url = %q", trig.Client, trig.ClientURL)
	}
	if len(trig.Links) != 1 || trig.Links[0].Href != "https://mcp.example.com/mcp" || trig.Links[0].Text != "MCP endpoint billing" {
		t.Errorf("links = %+v", trig.Links)
	}
	p := trig.Payload
	for field, got := range map[string][2]string{
		"summary":   {p.Summary, "[mcpmon] MCP endpoint billing is down (timeout: initialize timed out)"},
		"source":    {p.Source, "mcp.example.com"},
		"severity":  {p.Severity, "critical"},
		"timestamp": {p.Timestamp, "2026-03-04T05:00:00Z"},
		"component": {p.Component, "billing"},
		"group":     {p.Group, "payments"},
		"class":     {p.Class, "timeout"},
	} {
		if got[0] != got[1] {
			t.Errorf("payload.%s = %q, want %q", field, got[0], got[1])
		}
	}
	wantDetails := map[string]any{
		"endpoint_id": "ep1", "endpoint_name": "billing", "endpoint_url": "https://mcp.example.com/mcp",
		"incident_id": "ep1-20260304T050000Z", "state": "open", "class": "timeout", "reason": "initialize timed out",
		"first_failure": "2026-03-04T04:59:00Z", "opened_at": "2026-03-04T05:00:00Z",
		"labels": map[string]any{"group": "payments"},
	}
	if len(p.CustomDetails) != len(wantDetails) {
		t.Errorf("custom_details has %d keys, want %d: %v", len(p.CustomDetails), len(wantDetails), p.CustomDetails)
	}
	for k, want := range wantDetails {
		got, _ := json.Marshal(p.CustomDetails[k])
		w, _ := json.Marshal(want)
		if !bytes.Equal(got, w) {
			t.Errorf("custom_details.%s = %s, want %s", k, got, w)
		}
	}

	rem := api.events[1]
	if rem.EventAction != "trigger" || rem.DedupKey != trig.DedupKey || !strings.Contains(rem.Payload.Summary, "still down") {
		t.Errorf("reminder = %s %q %q, want a trigger on the same dedup_key", rem.EventAction, rem.DedupKey, rem.Payload.Summary)
	}

	// The documented resolve event is exactly routing_key, dedup_key, event_action.
	var res map[string]any
	if err := json.Unmarshal(api.raw[2], &res); err != nil {
		t.Fatal(err)
	}
	if len(res) != 3 || res["event_action"] != "resolve" || res["dedup_key"] != "ep1-20260304T050000Z" || res["routing_key"] != routingKey {
		t.Errorf("resolve event = %v", res)
	}
	if strings.Contains(logs.String(), routingKey) {
		t.Errorf("logs leak the routing key: %s", logs.String())
	}
}

func TestRedeliveryCarriesSameDedupKey(t *testing.T) {
	api := newEventsAPI(t)
	s := api.newSink(t, nil)
	for range 2 { // the alerter crashed after send, before marking the ledger
		if err := s.Notify(context.Background(), notification(alert.KindOpen)); err != nil {
			t.Fatal(err)
		}
	}
	if !bytes.Equal(api.raw[0], api.raw[1]) {
		t.Errorf("a redelivered trigger differs:\n%s\n%s", api.raw[0], api.raw[1])
	}
}

func TestLimits(t *testing.T) {
	api := newEventsAPI(t)
	s := api.newSink(t, nil)
	n := notification(alert.KindOpen)
	n.Reason = strings.Repeat("é", 3000)
	n.IncidentID = strings.Repeat("x", 300)
	if err := s.Notify(context.Background(), n); err != nil {
		t.Fatalf("oversized fields must be cut to the documented limits, got %v", err)
	}
	ev := api.events[0]
	if l := utf8.RuneCountInString(ev.Payload.Summary); l != MaxSummary {
		t.Errorf("summary length %d, want cut to %d", l, MaxSummary)
	}
	if len(ev.DedupKey) > MaxDedupKey || ev.DedupKey != DedupKey(n.IncidentID) {
		t.Errorf("dedup_key %q is not the stable short form", ev.DedupKey)
	}
}

func TestResponses(t *testing.T) {
	for _, tc := range []struct {
		status int
		want   string
	}{
		{400, "permanent"},
		{429, "after"},
		{500, "retry"},
		{503, "retry"},
	} {
		t.Run(http.StatusText(tc.status), func(t *testing.T) {
			api := newEventsAPI(t)
			api.override = tc.status
			err := api.newSink(t, nil).Notify(context.Background(), notification(alert.KindOpen))
			var ra *alert.RetryAfterError
			switch tc.want {
			case "permanent":
				if !errors.Is(err, alert.ErrPermanent) {
					t.Fatalf("%d: %v, want permanent", tc.status, err)
				}
			case "after":
				if !errors.As(err, &ra) || ra.After != DefaultRetryAfter {
					t.Fatalf("%d: %v, want RetryAfterError(%s)", tc.status, err, DefaultRetryAfter)
				}
			case "retry":
				if err == nil || errors.Is(err, alert.ErrPermanent) || errors.As(err, &ra) {
					t.Fatalf("%d: %v, want retryable", tc.status, err)
				}
			}
			if strings.Contains(err.Error(), routingKey) {
				t.Errorf("error leaks the routing key: %v", err)
			}
		})
	}
}

func TestRejectedEventIsPermanentAndScrubbed(t *testing.T) {
	// A receiver that echoes the request (as some relays do) in its 400.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write(b)
	}))
	defer srv.Close()
	s, err := New(Options{Name: "pd", RoutingKey: routingKey, URL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	err = s.Notify(context.Background(), notification(alert.KindResolve))
	if !errors.Is(err, alert.ErrPermanent) || strings.Contains(err.Error(), routingKey) || !strings.Contains(err.Error(), `"pd"`) {
		t.Fatalf("got %v, want a permanent error naming the sink without the routing key", err)
	}
}

func TestNewValidates(t *testing.T) {
	for _, o := range []Options{
		{RoutingKey: routingKey},
		{Name: "pd"},
		{Name: "pd", RoutingKey: routingKey, Severity: "fatal"},
	} {
		if _, err := New(o); !errors.Is(err, ErrConfig) {
			t.Errorf("New(%+v) = %v, want ErrConfig", o.Severity, err)
		}
	}
	s, err := New(Options{Name: "pd", RoutingKey: routingKey})
	if err != nil || s.o.URL != DefaultURL {
		t.Errorf("default URL = %q (%v), want %s", s.o.URL, err, DefaultURL)
	}
}
