package opsgenie

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/mcpmon/mcpmon/pkg/alert"
	"github.com/mcpmon/mcpmon/pkg/testpeers"
)

const apiKey = "eb243592-faa2-4ba2-a551q-1afdf565c889"

var opened = time.Date(2026, 3, 4, 5, 0, 0, 0, time.UTC)

func notification(kind alert.Kind) alert.Notification {
	n := alert.Notification{
		Key:          "alert-ep1-ep1-20260304T050000Z:" + string(kind) + ":og",
		Kind:         kind,
		EndpointID:   "ep1",
		EndpointName: "billing",
		EndpointURL:  "https://mcp.example.com/mcp",
		Labels:       map[string]string{"team": "payments"},
		IncidentID:   "ep1-20260304T050000Z",
		State:        "open",
		Class:        "refused",
		Reason:       "connect: connection refused",
		FirstFailure: opened.Add(-time.Minute),
		OpenedAt:     opened,
	}
	switch kind {
	case alert.KindResolve:
		n.State = "resolved"
		r := opened.Add(90 * time.Minute)
		n.ResolvedAt = &r
	case alert.KindReminder:
		n.Sequence = 1
	}
	return n
}

type ogAlert struct {
	create CreateAlert
	count  int
	status string
	closes []CloseAlert
}

// alertAPI is a local stand-in for api.opsgenie.com that enforces the
// documented authentication, paths, field limits and alias deduplication.
type alertAPI struct {
	mu       sync.Mutex
	alerts   map[string]*ogAlert
	requests int
	override int
	rcv      *testpeers.Receiver
}

func newAlertAPI(t *testing.T) *alertAPI {
	a := &alertAPI{alerts: map[string]*ogAlert{}}
	a.rcv = testpeers.NewReceiver(t, func(http.Handler) http.Handler { return http.HandlerFunc(a.serve) })
	return a
}

func (a *alertAPI) serve(w http.ResponseWriter, r *http.Request) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.requests++
	w.Header().Set("Content-Type", "application/json")
	fail := func(status int, msg string) {
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(map[string]any{"message": msg, "took": 0.001, "requestId": "r-err"})
	}
	if a.override != 0 {
		fail(a.override, "overridden")
		return
	}
	if r.Header.Get("Authorization") != "GenieKey "+apiKey {
		fail(http.StatusUnauthorized, "Could not authenticate")
		return
	}
	if r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/json" {
		fail(http.StatusBadRequest, "want POST application/json")
		return
	}
	body, _ := io.ReadAll(r.Body)
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	path := r.URL.EscapedPath()
	switch {
	case path == "/v2/alerts":
		var c CreateAlert
		if err := dec.Decode(&c); err != nil {
			fail(http.StatusUnprocessableEntity, err.Error())
			return
		}
		if msg := validateCreate(c); msg != "" {
			fail(http.StatusUnprocessableEntity, msg)
			return
		}
		if al, ok := a.alerts[c.Alias]; ok && al.status == "open" {
			al.count++ // Opsgenie de-duplication on alias
		} else {
			a.alerts[c.Alias] = &ogAlert{create: c, count: 1, status: "open"}
		}
	case strings.HasPrefix(path, "/v2/alerts/") && strings.HasSuffix(path, "/close"):
		id, err := url.PathUnescape(strings.TrimSuffix(strings.TrimPrefix(path, "/v2/alerts/"), "/close"))
		if err != nil || r.URL.Query().Get("identifierType") != "alias" {
			fail(http.StatusBadRequest, "close by alias needs identifierType=alias")
			return
		}
		var c CloseAlert
		if err := dec.Decode(&c); err != nil || utf8.RuneCountInString(c.Note) > MaxNote || utf8.RuneCountInString(c.Source) > MaxSource {
			fail(http.StatusUnprocessableEntity, "bad close body")
			return
		}
		al, ok := a.alerts[id]
		if !ok {
			fail(http.StatusNotFound, "Alert does not exist")
			return
		}
		al.status = "closed"
		al.closes = append(al.closes, c)
	default:
		fail(http.StatusNotFound, "no such API")
		return
	}
	w.WriteHeader(http.StatusAccepted)
	_ = json.NewEncoder(w).Encode(Response{Result: "Request will be processed", Took: 0.302, RequestID: "43a29c5c-3dbf-4fa4-9c26-f4f71023e120"})
}

func validateCreate(c CreateAlert) string {
	n := utf8.RuneCountInString
	switch {
	case c.Message == "" || n(c.Message) > MaxMessage:
		return "message must be 1..130 characters"
	case n(c.Alias) > MaxAlias:
		return "alias longer than 512"
	case n(c.Description) > MaxDescription:
		return "description longer than 15000"
	case len(c.Tags) > MaxTags:
		return "more than 20 tags"
	case n(c.Entity) > MaxEntity:
		return "entity longer than 512"
	case n(c.Source) > MaxSource:
		return "source longer than 100"
	case c.Priority != "" && !slices.Contains(Priorities, c.Priority):
		return "priority must be P1..P5"
	}
	for _, t := range c.Tags {
		if n(t) > MaxTag {
			return "tag longer than 50"
		}
	}
	total := 0
	for k, v := range c.Details {
		total += n(k) + n(v)
	}
	if total > MaxDetails {
		return "details longer than 8000"
	}
	return ""
}

func (a *alertAPI) newSink(t *testing.T, logs io.Writer) *Sink {
	t.Helper()
	if logs == nil {
		logs = io.Discard
	}
	s, err := New(Options{Name: "og", APIKey: apiKey, URL: a.rcv.URL + "/", Tags: []string{"prod"},
		Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestCreateAndCloseByAlias(t *testing.T) {
	api := newAlertAPI(t)
	var logs bytes.Buffer
	s := api.newSink(t, &logs)
	ctx := context.Background()
	// open, a redelivered open (crash after send), a reminder, then resolve.
	for _, k := range []alert.Kind{alert.KindOpen, alert.KindOpen, alert.KindReminder, alert.KindResolve} {
		if err := s.Notify(ctx, notification(k)); err != nil {
			t.Fatalf("Notify(%s): %v", k, err)
		}
	}
	if len(api.alerts) != 1 {
		t.Fatalf("Opsgenie holds %d alerts, want exactly 1 (alias dedup)", len(api.alerts))
	}
	al := api.alerts["ep1-20260304T050000Z"]
	if al == nil || al.count != 3 || al.status != "closed" || len(al.closes) != 1 {
		t.Fatalf("alert = %+v, want count 3 and closed once", al)
	}
	c := al.create
	want := CreateAlert{
		Message: "MCP endpoint billing is down: refused",
		Alias:   "ep1-20260304T050000Z",
		Description: "mcpmon opened incident ep1-20260304T050000Z for MCP endpoint billing (https://mcp.example.com/mcp).\n" +
			"Reason: connect: connection refused\nFirst failure: 2026-03-04T04:59:00Z\nOpened: 2026-03-04T05:00:00Z\n",
		Tags: []string{"mcpmon", "endpoint:ep1", "class:refused", "prod"},
		Details: map[string]string{
			"endpointId": "ep1", "endpointName": "billing", "endpointUrl": "https://mcp.example.com/mcp",
			"incidentId": "ep1-20260304T050000Z", "state": "open", "class": "refused", "reason": "connect: connection refused",
			"firstFailure": "2026-03-04T04:59:00Z", "openedAt": "2026-03-04T05:00:00Z", "label.team": "payments",
		},
		Entity:   "billing",
		Source:   "mcpmon",
		Priority: "P2",
	}
	gotJSON, _ := json.MarshalIndent(c, "", " ")
	wantJSON, _ := json.MarshalIndent(want, "", " ")
	if !bytes.Equal(gotJSON, wantJSON) {
		t.Errorf("create body field mismatch:\ngot  %s\nwant %s", gotJSON, wantJSON)
	}
	if cl := al.closes[0]; cl.Source != "mcpmon" || cl.Note != "Resolved by mcpmon at 2026-03-04T06:30:00Z after 1h30m0s: the endpoint is up again." {
		t.Errorf("close body = %+v", cl)
	}
	if strings.Contains(logs.String(), apiKey) {
		t.Errorf("logs leak the API key: %s", logs.String())
	}
}

func TestAliasIsPathEscaped(t *testing.T) {
	api := newAlertAPI(t)
	s := api.newSink(t, nil)
	n := notification(alert.KindOpen)
	n.IncidentID = "team a/ep?1#x"
	if err := s.Notify(context.Background(), n); err != nil {
		t.Fatal(err)
	}
	n.Kind = alert.KindResolve
	if err := s.Notify(context.Background(), n); err != nil {
		t.Fatalf("close of an alias with /, ? and #: %v", err)
	}
	if al := api.alerts["team a/ep?1#x"]; al == nil || al.status != "closed" {
		t.Errorf("alert not closed by its alias: %+v", al)
	}
}

func TestLimits(t *testing.T) {
	api := newAlertAPI(t)
	s := api.newSink(t, nil)
	n := notification(alert.KindOpen)
	n.EndpointName = strings.Repeat("ü", 600)
	n.Reason = strings.Repeat("r", 20000)
	n.IncidentID = strings.Repeat("i", 600)
	n.Labels = map[string]string{}
	for i := range 40 {
		n.Labels[strings.Repeat("k", 10)+string(rune('a'+i))] = strings.Repeat("v", 900)
	}
	s.o.Tags = []string{strings.Repeat("t", 80), "a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l", "m", "n", "o", "p", "q", "r", "s"}
	if err := s.Notify(context.Background(), n); err != nil {
		t.Fatalf("oversized notification must be cut to the documented limits: %v", err)
	}
	if _, ok := api.alerts[Alias(n.IncidentID)]; !ok || len(Alias(n.IncidentID)) > MaxAlias {
		t.Errorf("long incident ID not mapped to a stable alias")
	}
}

func TestErrors(t *testing.T) {
	for _, tc := range []struct {
		status int
		key    string
		want   string
	}{
		{0, "wrong-key", "permanent"}, // 401 from the API
		{http.StatusUnprocessableEntity, apiKey, "permanent"},
		{http.StatusTooManyRequests, apiKey, "after"},
		{http.StatusInternalServerError, apiKey, "retry"},
	} {
		t.Run(tc.want+http.StatusText(tc.status), func(t *testing.T) {
			api := newAlertAPI(t)
			api.override = tc.status
			s, err := New(Options{Name: "og", APIKey: tc.key, URL: api.rcv.URL})
			if err != nil {
				t.Fatal(err)
			}
			err = s.Notify(context.Background(), notification(alert.KindOpen))
			var ra *alert.RetryAfterError
			switch tc.want {
			case "permanent":
				if !errors.Is(err, alert.ErrPermanent) {
					t.Fatalf("%v, want permanent", err)
				}
			case "after":
				if !errors.As(err, &ra) {
					t.Fatalf("%v, want RetryAfterError", err)
				}
			case "retry":
				if err == nil || errors.Is(err, alert.ErrPermanent) {
					t.Fatalf("%v, want retryable", err)
				}
			}
			if strings.Contains(err.Error(), tc.key) {
				t.Errorf("error leaks the API key: %v", err)
			}
		})
	}
}

func TestNewValidates(t *testing.T) {
	for _, o := range []Options{{APIKey: apiKey}, {Name: "og"}, {Name: "og", APIKey: apiKey, Priority: "P9"}} {
		if _, err := New(o); !errors.Is(err, ErrConfig) {
			t.Errorf("New(%q,%q) = %v, want ErrConfig", o.Name, o.Priority, err)
		}
	}
	s, err := New(Options{Name: "og", APIKey: apiKey, URL: EUURL})
	if err != nil || s.base != "https://api.eu.opsgenie.com" {
		t.Errorf("EU base = %q, %v", s.base, err)
	}
}
