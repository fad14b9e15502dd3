package alerter

import (
	"slices"
	"testing"
	"time"

	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/msg"
)

// TestTransitionDecidesIncidentsAndOwedNotifications drives the pure
// transition: tracker, incident, verdict, rules and time in; tracker,
// incidents to write, owed notifications and event out.
// transitionCase is one row of the transition table.
type transitionCase struct {
	name          string
	in            transitionInput
	wantEvent     string
	wantOwed      []string // kinds
	wantIncidents []model.IncidentState
	wantOpenID    string
	wantPending   int
	wantAck       bool
}

// trackerFolded is ep1's tracker after folding ss (windows 0..), pointing
// at incident open, with outbox in its data.
func trackerFolded(open string, outbox []pending, ss ...msg.State) model.Tracker {
	tr := model.Tracker{EndpointID: "ep1", LastWindow: win(len(ss) - 1), Recent: ss, OpenIncidentID: open, Version: 1}
	for _, s := range ss {
		if s == up {
			tr.ConsecutiveUp++
		} else {
			tr.ConsecutiveUp = 0
		}
	}
	setTrackerData(&tr, trackerData{Outbox: outbox})
	return tr
}

// storedIncident is ep1's incident opened at window 1.
func storedIncident(state model.IncidentState, d incidentData) *model.Incident {
	return &model.Incident{ID: msg.IncidentID("ep1", win(1)), EndpointID: "ep1", State: state, OpenedWindow: win(1), Data: encodeData(d), Version: 1}
}

func TestTransitionDecidesIncidentsAndOwedNotifications(t *testing.T) {
	now := win(10).Add(70 * time.Second)
	openID := msg.IncidentID("ep1", win(1))
	notified := incidentData{OpenNotified: true, NotifiedAt: now.Add(-time.Hour)}
	defaults := effectiveRules(model.Rules{}, nil)
	hourly := effectiveRules(model.Rules{RepeatInterval: time.Hour}, nil)
	tests := []transitionCase{
		{name: "first down opens nothing",
			in: transitionInput{Tracker: trackerFolded("", nil), Verdict: verdict("ep1", win(0), down), Rules: defaults}},
		{name: "second down of three opens and owes the open",
			in:        transitionInput{Tracker: trackerFolded("", nil, down), Verdict: verdict("ep1", win(1), down), Rules: defaults},
			wantEvent: eventOpened, wantOwed: []string{"open"}, wantIncidents: []model.IncidentState{model.IncidentOpen},
			wantOpenID: openID, wantPending: 1},
		{name: "an incident already stored is pointed at, not opened again",
			in:         transitionInput{Tracker: trackerFolded("", nil, down), Verdict: verdict("ep1", win(1), down), Rules: defaults, AlreadyOpened: true},
			wantOpenID: openID},
		{name: "degraded neither opens nor resolves",
			in:         transitionInput{Tracker: trackerFolded(openID, nil, down, down, up), Open: storedIncident(model.IncidentOpen, notified), Verdict: verdict("ep1", win(3), msg.StateDegraded), Rules: defaults},
			wantOpenID: openID},
		{name: "second up resolves and owes the resolve",
			in:        transitionInput{Tracker: trackerFolded(openID, nil, down, down, up), Open: storedIncident(model.IncidentOpen, notified), Verdict: verdict("ep1", win(3), up), Rules: defaults},
			wantEvent: eventResolved, wantOwed: []string{"resolve"}, wantIncidents: []model.IncidentState{model.IncidentResolved}, wantPending: 1},
		{name: "a resolve queues behind a pending open",
			in:        transitionInput{Tracker: trackerFolded(openID, []pending{{IncidentID: openID, Kind: "open"}}, down, down, up), Open: storedIncident(model.IncidentOpen, incidentData{}), Verdict: verdict("ep1", win(3), up), Rules: defaults},
			wantEvent: eventResolved, wantOwed: []string{"resolve"}, wantIncidents: []model.IncidentState{model.IncidentResolved}, wantPending: 2},
		{name: "an acknowledgement is counted once",
			in:            transitionInput{Tracker: trackerFolded(openID, nil, down, down), Open: storedIncident(model.IncidentAcknowledged, notified), Verdict: verdict("ep1", win(2), down), Rules: defaults},
			wantIncidents: []model.IncidentState{model.IncidentAcknowledged}, wantOpenID: openID, wantAck: true},
		{name: "a counted acknowledgement writes nothing",
			in:         transitionInput{Tracker: trackerFolded(openID, nil, down, down), Open: storedIncident(model.IncidentAcknowledged, incidentData{AckCounted: true}), Verdict: verdict("ep1", win(2), down), Rules: hourly},
			wantOpenID: openID},
		{name: "a reminder is owed once the repeat interval has passed",
			in:       transitionInput{Tracker: trackerFolded(openID, nil, down, down), Open: storedIncident(model.IncidentOpen, notified), Verdict: verdict("ep1", win(2), down), Rules: hourly},
			wantOwed: []string{"reminder-1"}, wantIncidents: []model.IncidentState{model.IncidentOpen},
			wantOpenID: openID, wantPending: 1},
		{name: "no reminder while a notification of the incident is pending",
			in:         transitionInput{Tracker: trackerFolded(openID, []pending{{IncidentID: openID, Kind: "reminder-1", Seq: 1}}, down, down), Open: storedIncident(model.IncidentOpen, notified), Verdict: verdict("ep1", win(2), down), Rules: hourly},
			wantOpenID: openID, wantPending: 1},
		{name: "an incident resolved over the API is let go; the next outage opens afresh",
			in:        transitionInput{Tracker: trackerFolded(openID, nil, down, down), Open: storedIncident(model.IncidentResolved, notified), Verdict: verdict("ep1", win(2), down), Rules: defaults},
			wantEvent: eventOpened, wantOwed: []string{"open"}, wantIncidents: []model.IncidentState{model.IncidentOpen},
			wantOpenID: msg.IncidentID("ep1", win(2)), wantPending: 1},
		{name: "no_data is not folded",
			in:         transitionInput{Tracker: trackerFolded(openID, nil, down, down), Open: storedIncident(model.IncidentOpen, notified), Verdict: verdict("ep1", win(2), msg.StateNoData), Rules: defaults},
			wantOpenID: openID},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.in.Now = now
			checkTransition(t, tt)
		})
	}
}

// checkTransition runs one row and checks its result, and that the input
// tracker was left as it was (transition is pure).
func checkTransition(t *testing.T, tt transitionCase) {
	t.Helper()
	before := slices.Clone(tt.in.Tracker.Recent)
	out, err := transition(tt.in)
	if err != nil {
		t.Fatal(err)
	}
	var owed []string
	for _, p := range out.Owed {
		owed = append(owed, p.Kind)
	}
	var states []model.IncidentState
	for _, inc := range out.Incidents {
		states = append(states, inc.State)
	}
	if out.Event != tt.wantEvent || !slices.Equal(owed, tt.wantOwed) || !slices.Equal(states, tt.wantIncidents) || out.Acknowledged != tt.wantAck {
		t.Fatalf("event %q, owed %v, incidents %v, ack %v; want %q, %v, %v, %v", out.Event, owed, states, out.Acknowledged, tt.wantEvent, tt.wantOwed, tt.wantIncidents, tt.wantAck)
	}
	if out.Tracker.OpenIncidentID != tt.wantOpenID || out.Tracker.Pending != tt.wantPending || !out.Tracker.LastWindow.Equal(tt.in.Verdict.Window) {
		t.Fatalf("tracker open %q, pending %d, last window %s; want %q, %d, %s", out.Tracker.OpenIncidentID, out.Tracker.Pending, out.Tracker.LastWindow, tt.wantOpenID, tt.wantPending, tt.in.Verdict.Window)
	}
	d, err := decodeData[trackerData](out.Tracker.Data, "")
	if err != nil || len(d.Outbox) != out.Tracker.Pending {
		t.Fatalf("outbox %v (%v), want Pending = its length %d", d.Outbox, err, out.Tracker.Pending)
	}
	if !slices.Equal(tt.in.Tracker.Recent, before) {
		t.Fatalf("input tracker changed: %v, was %v", tt.in.Tracker.Recent, before)
	}
}

// TestTransitionUnchanged: a verdict that changes nothing a later decision
// reads (the up runs, the windows' times and LastWindow aside) is marked
// Unchanged, and apply writes nothing for it; anything else is written.
func TestTransitionUnchanged(t *testing.T) {
	r := effectiveRules(model.Rules{}, nil)
	ups := func(n int) []msg.State { return slices.Repeat([]msg.State{up}, n) }
	full := trackerFolded("", nil, ups(r.openWindow)...)
	fresh := full
	fresh.Version = 0
	regional := func(open string, ss ...msg.State) model.Tracker {
		tr := full
		setTrackerData(&tr, trackerData{Regional: &regionalTrack{Recent: ss, ConsecutiveUp: len(ss), OpenIncidentID: open}})
		return tr
	}
	short := func(w time.Time) msg.Verdict { // an up in a 5-second window
		v := verdict("ep1", w, up)
		v.WindowSecs = 5
		return v
	}
	pendingNotice := full
	pendingNotice.Notices, pendingNotice.Pending = []model.UpdateNotice{{IncidentID: "i"}}, 1
	upIn := func(tr model.Tracker) transitionInput {
		return transitionInput{Tracker: tr, Verdict: verdict("ep1", win(r.openWindow), up), Rules: r}
	}
	regionsUp := func(tr model.Tracker) transitionInput {
		in := upIn(tr)
		in.Verdict.RegionStates = map[string]msg.State{"eu": up, "us": up}
		return in
	}
	for _, tc := range []struct {
		name string
		in   transitionInput
		want bool
	}{
		{"up on a full run of ups", upIn(full), true},
		{"no_data on a full run of ups", transitionInput{Tracker: full, Verdict: verdict("ep1", win(r.openWindow), msg.StateNoData), Rules: r}, true},
		{"up on a tracker never stored", upIn(fresh), false},
		{"up on a full run of ups last written ten windows before", transitionInput{Tracker: full, Verdict: verdict("ep1", full.LastWindow.Add(quietWrites*time.Minute), up), Rules: r}, false},
		{"up on a full run of ups last written nine windows before", transitionInput{Tracker: full, Verdict: verdict("ep1", full.LastWindow.Add((quietWrites-1)*time.Minute), up), Rules: r}, true},
		{"up in 5-second windows last written nine minutes before", transitionInput{Tracker: full, Verdict: short(full.LastWindow.Add(quietFor - time.Minute)), Rules: r}, true},
		{"up in 5-second windows last written ten minutes before", transitionInput{Tracker: full, Verdict: short(full.LastWindow.Add(quietFor)), Rules: r}, false},
		{"up on a run not yet full", upIn(trackerFolded("", nil, ups(r.openWindow-1)...)), false},
		{"up after a down", upIn(trackerFolded("", nil, append(ups(r.openWindow-1), down)...)), false},
		{"down on a full run of ups", transitionInput{Tracker: full, Verdict: verdict("ep1", win(r.openWindow), down), Rules: r}, false},
		{"degraded on a full run of ups", transitionInput{Tracker: full, Verdict: verdict("ep1", win(r.openWindow), msg.StateDegraded), Rules: r}, false},
		{"up with an incident open", transitionInput{Tracker: trackerFolded(msg.IncidentID("ep1", win(1)), nil, ups(r.openWindow)...), Open: storedIncident(model.IncidentOpen, incidentData{OpenNotified: true}), Verdict: verdict("ep1", win(r.openWindow), up), Rules: r}, false},
		{"up with a notification in the outbox", upIn(trackerFolded("", []pending{{IncidentID: "i", Kind: "resolve"}}, ups(r.openWindow)...)), false},
		{"up with an update notice pending", upIn(pendingNotice), false},
		{"up in every region on a full regional run of ups", regionsUp(regional("", ups(r.openWindow)...)), true},
		{"up in every region after a regional window", regionsUp(regional("", append(ups(r.openWindow-1), msg.StateRegional)...)), false},
		{"up in every region with a regional incident open", regionsUp(regional("ep1-regional", ups(r.openWindow)...)), false},
		{"up in every region on a tracker without a regional run yet", regionsUp(full), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.in.Now = win(r.openWindow).Add(70 * time.Second)
			out, err := transition(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if out.Unchanged != tc.want {
				t.Fatalf("Unchanged = %v, want %v (tracker %+v)", out.Unchanged, tc.want, out.Tracker)
			}
		})
	}
}
