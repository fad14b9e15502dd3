package grouping

import (
	"slices"
	"testing"
	"time"

	"github.com/mcpmon/mcpmon/pkg/alert"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

const wait = 30 * time.Second

func mem(id, url, class string, labels map[string]string) Member {
	return Member{EndpointID: id, IncidentID: id + "-inc", URL: url, Class: class, Labels: labels}
}

// TestKeyGroupsWhatSharesEveryDimension: endpoints share a key exactly
// when every dimension of by has the same value; one without a value is
// not grouped at all.
func TestKeyGroupsWhatSharesEveryDimension(t *testing.T) {
	a := mem("a", "https://gw.example.com/a", "refused", map[string]string{"team": "x"})
	for _, c := range []struct {
		name   string
		by     []string
		b      Member
		same   bool
		bNoKey bool
	}{
		{"same class and host", []string{"class", "host"}, mem("b", "https://GW.example.com:8443/b", "refused", nil), true, false},
		{"other class", []string{"class", "host"}, mem("b", "https://gw.example.com/b", "timeout", nil), false, false},
		{"other host", []string{"class", "host"}, mem("b", "https://api.example.com/b", "refused", nil), false, false},
		{"same domain, other host", []string{"domain"}, mem("b", "https://api.example.com/b", "timeout", nil), true, false},
		{"other domain", []string{"domain"}, mem("b", "https://api.example.org/b", "refused", nil), false, false},
		{"shared label", []string{"label:team"}, mem("b", "https://other.test/", "tls", map[string]string{"team": "x"}), true, false},
		{"other label value", []string{"label:team"}, mem("b", "https://other.test/", "tls", map[string]string{"team": "y"}), false, false},
		{"label missing", []string{"label:team"}, mem("b", "https://other.test/", "tls", nil), false, true},
		{"no class", []string{"class"}, mem("b", "https://gw.example.com/b", "", nil), false, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			va, ha, ok := Key(c.by, a)
			if !ok || len(va) != len(c.by) {
				t.Fatalf("a: values %v ok %v", va, ok)
			}
			_, hb, ok := Key(c.by, c.b)
			if ok == c.bNoKey {
				t.Fatalf("b: ok %v, want %v", ok, !c.bNoKey)
			}
			if ok && (ha == hb) != c.same {
				t.Fatalf("same key %v, want %v", ha == hb, c.same)
			}
		})
	}
	// Dimension names are part of the key: a class equal to a host is not
	// the same group.
	_, h1, _ := Key([]string{"class"}, Member{Class: "x.test"})
	_, h2, _ := Key([]string{"host"}, Member{URL: "https://x.test/"})
	if h1 == h2 {
		t.Fatal("class=x.test and host=x.test share a key")
	}
}

func slot(groups ...Group) Slot { return Slot{Sink: "hook", Groups: groups} }

func group(phase Phase, start time.Time, ids ...string) Group {
	g := Group{Start: start, Phase: phase}
	for _, id := range ids {
		g.Members = append(g.Members, Member{EndpointID: id, IncidentID: id})
	}
	return g
}

// TestForPending: what a pending notification does at a grouping sink,
// by the phase of its incident's group.
func TestForPending(t *testing.T) {
	now := t0.Add(10 * time.Second)
	for _, c := range []struct {
		name    string
		s       Slot
		kind    string
		created time.Time
		want    Want
	}{
		{"fresh open, no group: join", slot(), "open", now, Join},
		{"open older than the wait: alone", slot(), "open", now.Add(-wait), Alone},
		{"resolve, no group: alone", slot(), "resolve", now, Alone},
		{"reminder, no group: alone", slot(), "reminder-1", now, Alone},
		{"open, collecting: hold", slot(group(Collecting, t0, "i")), "open", now, Hold},
		{"open, opening: hold", slot(group(Opening, t0, "i")), "open", now, Hold},
		{"open, lone: alone", slot(group(Lone, t0, "i")), "open", now, Alone},
		{"open, group sent: grouped", slot(group(Open, t0, "i", "j")), "open", now, Grouped},
		{"reminder, group sent: grouped", slot(group(Open, t0, "i", "j")), "reminder-2", now, Grouped},
		{"resolve, group open: hold until all recover", slot(group(Open, t0, "i", "j")), "resolve", now, Hold},
		{"resolve, group resolving: hold", slot(group(Resolving, t0, "i", "j")), "resolve", now, Hold},
		{"resolve, group resolved: grouped", slot(group(Resolved, t0, "i", "j")), "resolve", now, Grouped},
		{"resolve, lone: alone", slot(group(Lone, t0, "i")), "resolve", now, Alone},
		{"open, only another incident's group: join", slot(group(Collecting, t0, "k")), "open", now, Join},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := c.s.ForPending("i", c.kind, c.created, now, wait); got != c.want {
				t.Fatalf("ForPending = %v, want %v", got, c.want)
			}
		})
	}
}

// TestJoinCollectsWithinTheWait: incidents opening within the wait of the
// group's first join it; one after the wait starts a new group; a repeat
// join changes nothing.
func TestJoinCollectsWithinTheWait(t *testing.T) {
	s := slot().Join(Member{IncidentID: "a"}, t0, wait)
	s = s.Join(Member{IncidentID: "b"}, t0.Add(29*time.Second), wait)
	s = s.Join(Member{IncidentID: "b"}, t0.Add(29*time.Second), wait)
	if len(s.Groups) != 1 || len(s.Groups[0].Members) != 2 || !s.Groups[0].Start.Equal(t0) {
		t.Fatalf("groups %+v, want one of a and b from t0", s.Groups)
	}
	s = s.Join(Member{IncidentID: "c"}, t0.Add(wait), wait)
	if len(s.Groups) != 2 || s.Groups[1].Members[0].IncidentID != "c" || !s.Groups[1].Start.Equal(t0.Add(wait)) {
		t.Fatalf("groups %+v, want c in a new group", s.Groups)
	}
	// A decided group takes no one, even inside its wait.
	d := slot(group(Opening, t0, "a", "b")).Join(Member{IncidentID: "c"}, t0.Add(time.Second), wait)
	if len(d.Groups) != 2 || len(d.Groups[0].Members) != 2 {
		t.Fatalf("groups %+v, want c outside the decided group", d.Groups)
	}
}

// TestDue: what a slot owes, and how its groups move, at a time.
func TestDue(t *testing.T) {
	none := func(string) bool { return false }
	all := func(string) bool { return true }
	onlyI := func(id string) bool { return id == "i" }
	for _, c := range []struct {
		name      string
		s         Slot
		at        time.Time
		recovered func(string) bool
		phases    []Phase
		owed      []Owed
	}{
		{"collecting inside its wait: nothing", slot(group(Collecting, t0, "i", "j")), t0.Add(29 * time.Second), none,
			[]Phase{Collecting}, nil},
		{"several at the wait's end: grouped open owed", slot(group(Collecting, t0, "i", "j")), t0.Add(wait), none,
			[]Phase{Opening}, []Owed{{t0, alert.KindOpen}}},
		{"one at the wait's end: alone, nothing owed", slot(group(Collecting, t0, "i")), t0.Add(wait), none,
			[]Phase{Lone}, nil},
		{"opening stays owed", slot(group(Opening, t0, "i", "j")), t0.Add(time.Hour), none,
			[]Phase{Opening}, []Owed{{t0, alert.KindOpen}}},
		{"open, some still down: nothing", slot(group(Open, t0, "i", "j")), t0.Add(time.Hour), onlyI,
			[]Phase{Open}, nil},
		{"open, all recovered: grouped resolve owed", slot(group(Open, t0, "i", "j")), t0.Add(time.Hour), all,
			[]Phase{Resolving}, []Owed{{t0, alert.KindResolve}}},
		{"resolved past retention: dropped", slot(group(Resolved, t0, "i", "j"), group(Collecting, t0.Add(2*time.Hour), "k", "l")),
			t0.Add(wait + Retention + 2*time.Hour), none, []Phase{Opening}, []Owed{{t0.Add(2 * time.Hour), alert.KindOpen}}},
		{"lone inside retention: kept", slot(group(Lone, t0, "i")), t0.Add(Retention), none, []Phase{Lone}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			next, owed := c.s.Due(c.at, wait, c.recovered)
			var phases []Phase
			for _, g := range next.Groups {
				phases = append(phases, g.Phase)
			}
			if !slices.Equal(phases, c.phases) || !slices.Equal(owed, c.owed) {
				t.Fatalf("phases %v owed %v, want %v %v", phases, owed, c.phases, c.owed)
			}
			if c.s.Busy(c.at, wait) != (len(c.owed) > 0 || !slices.Equal(phases, phasesOf(c.s)) || hasPhase(c.s, Open)) {
				t.Fatalf("Busy = %v disagrees with Due", c.s.Busy(c.at, wait))
			}
		})
	}
	// Sent moves an owed open to Open and an owed resolve to Resolved.
	t1 := t0.Add(time.Hour)
	s := slot(group(Opening, t0, "i", "j"), group(Resolving, t1, "k", "l"))
	s = s.Sent(Owed{t0, alert.KindOpen}).Sent(Owed{t1, alert.KindResolve})
	if s.Groups[0].Phase != Open || s.Groups[1].Phase != Resolved {
		t.Fatalf("after Sent: %v %v", s.Groups[0].Phase, s.Groups[1].Phase)
	}
	// Applied twice (two replicas), or to a group that moved on: no change.
	if again := s.Sent(Owed{t0, alert.KindOpen}).Sent(Owed{t0.Add(time.Minute), alert.KindOpen}); again.Groups[0].Phase != Open || len(again.Groups) != 2 {
		t.Fatalf("a repeated Sent changed the slot: %+v", again.Groups)
	}
	if due := slot(group(Open, t0, "i"), group(Collecting, t0.Add(time.Minute), "k")).NextDue(wait); !due.Equal(t0.Add(time.Minute + wait)) {
		t.Fatalf("NextDue = %s", due)
	}
}

// TestRecoverCompletesTheGroup: members' resolves mark them recovered one
// by one; the last makes the group owe its resolve without any store
// read (recovered reports none).
func TestRecoverCompletesTheGroup(t *testing.T) {
	s := slot(group(Open, t0, "i", "j"))
	s, changed, complete := s.Recover("i")
	if !changed || complete {
		t.Fatalf("first recovery: changed %v complete %v, want true false", changed, complete)
	}
	if _, changed, _ := s.Recover("i"); changed {
		t.Fatal("a repeated recovery changed the slot")
	}
	if _, owed := s.Due(t0.Add(time.Hour), wait, func(string) bool { return false }); len(owed) != 0 {
		t.Fatalf("owed %v with j still down", owed)
	}
	s, _, complete = s.Recover("j")
	if !complete {
		t.Fatal("the last recovery did not complete the group")
	}
	if _, owed := s.Due(t0.Add(time.Hour), wait, func(string) bool { return false }); !slices.Equal(owed, []Owed{{t0, alert.KindResolve}}) {
		t.Fatalf("owed %v, want the grouped resolve", owed)
	}
	if _, changed, _ := slot(group(Collecting, t0, "i", "j")).Recover("i"); changed {
		t.Fatal("a member of an unsent group was marked recovered")
	}
}

func phasesOf(s Slot) []Phase {
	var out []Phase
	for _, g := range s.Groups {
		out = append(out, g.Phase)
	}
	return out
}

func hasPhase(s Slot, p Phase) bool {
	return slices.ContainsFunc(s.Groups, func(g Group) bool { return g.Phase == p })
}
