package aggregator

import (
	"fmt"
	"slices"
	"testing"
)

func endpointIDs(n int) []string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("ep_%06d", i)
	}
	return ids
}

func owners(members, eps []string) map[string]string {
	out := make(map[string]string, len(eps))
	for _, e := range eps {
		out[e] = Owner(members, e)
	}
	return out
}

// TestOwnerIsDeterministicAndOneOfTheMembers: the owner depends only on
// the member set (not its order), is always one of them, and none without
// members.
func TestOwnerIsDeterministicAndOneOfTheMembers(t *testing.T) {
	eps := endpointIDs(1000)
	tests := []struct {
		name    string
		members []string
	}{
		{"one", []string{"agg-1"}},
		{"two", []string{"agg-1", "agg-2"}},
		{"host-pid IDs", []string{"ip-10-0-1-7-1", "ip-10-0-1-7-2", "ip-10-0-2-9-1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rev := slices.Clone(tt.members)
			slices.Reverse(rev)
			for _, e := range eps {
				o := Owner(tt.members, e)
				if !slices.Contains(tt.members, o) {
					t.Fatalf("Owner(%v, %s) = %q, not a member", tt.members, e, o)
				}
				if o2 := Owner(rev, e); o2 != o {
					t.Fatalf("Owner of %s depends on member order: %q vs %q", e, o, o2)
				}
				// Exactly one member considers itself the owner.
				n := 0
				for _, m := range tt.members {
					if newOwnership(m, tt.members).owns(e) {
						n++
					}
				}
				if n != 1 {
					t.Fatalf("%s has %d owners among %v, want 1", e, n, tt.members)
				}
			}
		})
	}
	if o := Owner(nil, "ep"); o != "" {
		t.Fatalf("Owner with no members = %q, want none", o)
	}
	if !(ownership{}).owns("ep") {
		t.Fatal("a replica without a view must own every endpoint")
	}
}

// TestOwnerBalanced: over 10,000 endpoints every member owns its share
// within 10 % (about five standard deviations at five members).
func TestOwnerBalanced(t *testing.T) {
	eps := endpointIDs(10000)
	for _, n := range []int{2, 3, 5, 8} {
		t.Run(fmt.Sprint(n, " members"), func(t *testing.T) {
			var members []string
			for i := range n {
				members = append(members, fmt.Sprintf("aggregator-%d", i))
			}
			count := map[string]int{}
			for _, o := range owners(members, eps) {
				count[o]++
			}
			want := float64(len(eps)) / float64(n)
			for _, m := range members {
				if got := float64(count[m]); got < 0.9*want || got > 1.1*want {
					t.Errorf("%s owns %v endpoints, want %.0f ± 10 %% (%v)", m, got, want, count)
				}
			}
		})
	}
}

// TestOwnerMovesOnlyTheNewcomersShare: adding a member moves about 1/N of
// the endpoints, all of them to the newcomer; removing one moves only
// the endpoints it owned.
func TestOwnerMovesOnlyTheNewcomersShare(t *testing.T) {
	eps := endpointIDs(10000)
	tests := []struct {
		name          string
		before, after []string
		// gainer, when set, is the only member endpoints may move to;
		// loser, the only one they may move from.
		gainer, loser string
		share         float64 // expected fraction moved
	}{
		{"2 → 3", []string{"a", "b"}, []string{"a", "b", "c"}, "c", "", 1.0 / 3},
		{"4 → 5", []string{"a", "b", "c", "d"}, []string{"a", "b", "c", "d", "e"}, "e", "", 1.0 / 5},
		{"3 → 2 (b killed)", []string{"a", "b", "c"}, []string{"a", "c"}, "", "b", 1.0 / 3},
		{"2 → 1", []string{"a", "b"}, []string{"a"}, "", "b", 1.0 / 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before, after := owners(tt.before, eps), owners(tt.after, eps)
			moved := 0
			for _, e := range eps {
				if before[e] == after[e] {
					continue
				}
				moved++
				if tt.gainer != "" && after[e] != tt.gainer {
					t.Fatalf("%s moved %s → %s, want only moves to %s", e, before[e], after[e], tt.gainer)
				}
				if tt.loser != "" && before[e] != tt.loser {
					t.Fatalf("%s moved %s → %s, want only moves from %s", e, before[e], after[e], tt.loser)
				}
			}
			frac := float64(moved) / float64(len(eps))
			if frac < 0.9*tt.share || frac > 1.1*tt.share {
				t.Fatalf("%.3f of endpoints moved, want %.3f ± 10 %%", frac, tt.share)
			}
		})
	}
}

func BenchmarkOwner(b *testing.B) {
	members := []string{"ip-10-0-1-7-1", "ip-10-0-1-7-2", "ip-10-0-2-9-1"}
	for i := 0; b.Loop(); i++ {
		Owner(members, "ep_4f1c9a2b7d3e")
	}
}
