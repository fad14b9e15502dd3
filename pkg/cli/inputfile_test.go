package cli

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// TestInputMembersDropsWhatTheServerSets: a view as get printed it is an
// input once its read-only members are gone; its id must be the one
// being updated; anything else is left for the decoder to refuse.
func TestInputMembersDropsWhatTheServerSets(t *testing.T) {
	for _, tc := range []struct {
		name, doc, id string
		want          map[string]any // nil: the doc unchanged
		err           string
	}{
		{name: "view on update", doc: `{"id":"p1","tenant":"default","slug":"a","title":"A","createdAt":"2026-01-01T00:00:00Z","updatedAt":"2026-01-02T00:00:00Z"}`,
			id: "p1", want: map[string]any{"slug": "a", "title": "A"}},
		{name: "view on create", doc: `{"id":"p1","slug":"a"}`, want: map[string]any{"slug": "a"}},
		{name: "input alone", doc: `{"slug":"a","colour":"red"}`, id: "p1"},
		{name: "another page's id", doc: `{"id":"p2","slug":"a"}`, id: "p1", err: `"id": "p2" is another status page than the one being updated (p1)`},
		{name: "id not a string", doc: `{"id":7}`, id: "p1", err: `"id": 7 is another status page`},
		{name: "not an object", doc: `[1]`, id: "p1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := statusPageInput.inputMembers([]byte(tc.doc), tc.id)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.want == nil {
				if string(got) != tc.doc {
					t.Fatalf("got %s, want the doc unchanged", got)
				}
				return
			}
			var m map[string]any
			if err := json.Unmarshal(got, &m); err != nil || !reflect.DeepEqual(m, tc.want) {
				t.Fatalf("got %s (%v), want %v", got, err, tc.want)
			}
		})
	}
}
