package sinks

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpmon/mcpmon/pkg/alert"
)

// TestGroupSetting: a sink's group setting is read strictly, defaulted,
// round-tripped, and reaches the built sink; without one the sink does
// not group.
func TestGroupSetting(t *testing.T) {
	cfgs, err := Parse([]byte(`{"sinks":[
		{"name":"chat","type":"slack","url":"https://hooks.slack.com/services/T0/B0/SLACKTOKEN1234567","group":{"by":["class","host"],"wait":"45s"}},
		{"name":"mail","type":"email","smtpAddr":"h:25","from":"a@b.example","to":["c@d.example"],"group":{"by":["label:team"]}},
		{"name":"hook","type":"webhook","url":"https://h/x"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if g := cfgs[0].Group; g == nil || !slices.Equal(g.By, []string{"class", "host"}) || g.Wait != 45*time.Second {
		t.Fatalf("chat group %+v", cfgs[0].Group)
	}
	if g := cfgs[1].Group.Grouping(); g.Wait != DefaultGroupWait {
		t.Fatalf("mail group wait %s, want the default %s", g.Wait, DefaultGroupWait)
	}
	b, err := json.Marshal(File{Sinks: cfgs})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"group":{"by":["class","host"],"wait":"45s"}`) || strings.Count(string(b), `"group"`) != 2 {
		t.Fatalf("marshalled: %s", b)
	}
	again, err := Parse(b)
	if err != nil || again[0].Group.Wait != 45*time.Second {
		t.Fatalf("round trip: %v %+v", err, again)
	}
	if r := cfgs[0].Redacted(); r.Group == cfgs[0].Group || !slices.Equal(r.Group.By, cfgs[0].Group.By) {
		t.Fatal("Redacted must copy the group setting, not share it")
	}
	built, err := Build(cfgs, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	g, ok := alert.GroupingOf(built[0])
	if !ok || g.Wait != 45*time.Second || !slices.Equal(g.By, []string{"class", "host"}) {
		t.Fatalf("built chat sink groups %v %+v", ok, g)
	}
	if _, ok := alert.GroupingOf(built[2]); ok {
		t.Fatal("a sink without a group setting groups")
	}
	for _, s := range built[:2] {
		if _, ok := s.(alert.GroupNotifier); !ok {
			t.Fatalf("built %s sink does not carry grouped notifications", s.Name())
		}
	}
}

// TestGroupSettingRejected: what a group setting may not be.
func TestGroupSettingRejected(t *testing.T) {
	hook := `"name":"x","type":"webhook","url":"https://h/x",`
	for _, tc := range []struct {
		name, json, field string
	}{
		{"pagerduty dedups itself", `{"name":"x","type":"pagerduty","routingKey":"pdroutingkey00000000000000000001","group":{"by":["class"]}}`, "group"},
		{"opsgenie dedups itself", `{"name":"x","type":"opsgenie","apiKey":"og-api-key-1234-5678","group":{"by":["class"]}}`, "group"},
		{"empty by", `{` + hook + `"group":{"by":[]}}`, "group.by"},
		{"unknown dimension", `{` + hook + `"group":{"by":["region"]}}`, "group.by"},
		{"label without a name", `{` + hook + `"group":{"by":["label:"]}}`, "group.by"},
		{"dimension twice", `{` + hook + `"group":{"by":["class","class"]}}`, "group.by"},
		{"too many dimensions", `{` + hook + `"group":{"by":["class","host","domain","label:a","label:b","label:c"]}}`, "group.by"},
		{"wait too short", `{` + hook + `"group":{"by":["class"],"wait":"10ms"}}`, "group.wait"},
		{"wait too long", `{` + hook + `"group":{"by":["class"],"wait":"2h"}}`, "group.wait"},
		{"wait malformed", `{` + hook + `"group":{"by":["class"],"wait":"soon"}}`, "wait"},
		{"unknown group field", `{` + hook + `"group":{"by":["class"],"interval":"5m"}}`, "interval"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(`{"sinks":[` + tc.json + `]}`))
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.field) {
				t.Fatalf("Parse = %v, want ErrInvalid naming %s", err, tc.field)
			}
		})
	}
	// A group spans endpoints: a per-endpoint sink may not have one.
	_, err := ParseEndpointSinks(json.RawMessage(`[{` + hook + `"group":{"by":["class"]}}]`))
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "per-endpoint") {
		t.Fatalf("ParseEndpointSinks = %v, want the group refused", err)
	}
}

// TestWrappersForwardGroups: a grouped notification reaches the sink
// under the notify-list, severity and group wrappers.
func TestWrappersForwardGroups(t *testing.T) {
	base := &groupRecorder{}
	s := alert.Grouped(alert.Subscribed(routed(base, []string{"critical"}), []string{"incidents"}), alert.Grouping{By: []string{"class"}, Wait: time.Second})
	if err := alert.ForwardGroup(t.Context(), s, alert.GroupNotification{Key: "k"}); err != nil || base.got != 1 {
		t.Fatalf("err %v, %d grouped notifications reached the sink", err, base.got)
	}
	if !alert.Takes(s, "critical") || alert.Takes(s, "warning") || !alert.Subscribes(s, "incidents") || s.Name() != "r" {
		t.Fatal("the group wrapper hides the sink's other settings")
	}
}

type groupRecorder struct{ got int }

func (r *groupRecorder) Name() string                                     { return "r" }
func (r *groupRecorder) Notify(context.Context, alert.Notification) error { return nil }
func (r *groupRecorder) NotifyGroup(context.Context, alert.GroupNotification) error {
	r.got++
	return nil
}
