package store_test

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/store"
)

func TestEndpointDecoder(t *testing.T) {
	d := store.NewEndpointDecoder()
	in := model.Endpoint{ID: "ep", Name: "one", Headers: map[string]string{"X-A": "1"}, Rules: &model.Rules{OpenAfter: 2}}
	raw, _ := json.Marshal(in)

	first, err := d.Decode("ep", raw)
	if err != nil || !reflect.DeepEqual(first, in) {
		t.Fatalf("first decode = %+v, %v; want %+v", first, err, in)
	}
	first.Headers["X-A"], first.Rules.OpenAfter = "changed", 9 // the caller's copy
	second, err := d.Decode("ep", raw)
	if err != nil || !reflect.DeepEqual(second, in) {
		t.Fatalf("second decode (remembered) = %+v, %v; want %+v", second, err, in)
	}
	if d.Len() != 1 {
		t.Fatalf("remembered %d endpoints, want 1", d.Len())
	}

	in.Name = "two" // a new record under the same ID: decoded again
	raw2, _ := json.Marshal(in)
	if got, err := d.Decode("ep", raw2); err != nil || got.Name != "two" {
		t.Fatalf("decode of a changed record = %+v, %v; want name two", got, err)
	}
	if _, err := d.Decode("ep", []byte(`{"id":`)); err == nil {
		t.Fatal("a truncated record decoded")
	}
	if got, err := d.Decode("ep", raw2); err != nil || got.Name != "two" {
		t.Fatalf("after a bad record, decode = %+v, %v; want name two", got, err)
	}
	// A Redis reply: the same bytes as a string are remembered the same way.
	if got, err := d.DecodeString("ep", string(raw2)); err != nil || got.Name != "two" {
		t.Fatalf("DecodeString of the remembered record = %+v, %v; want name two", got, err)
	}
	if got, err := d.DecodeString("ep", string(raw)); err != nil || got.Name != "one" {
		t.Fatalf("DecodeString of a changed record = %+v, %v; want name one", got, err)
	}
	d.Forget("ep")
	if d.Len() != 0 {
		t.Fatalf("after Forget %d endpoints remembered, want 0", d.Len())
	}
}

// TestEndpointDecoderCurrent: an entry answers Current only at the
// generation it was read at; a later read of the same bytes moves it
// forward, an earlier one (a reader that began before a write) never moves
// it back, and gen 0 (a store without generations) never answers.
func TestEndpointDecoderCurrent(t *testing.T) {
	d := store.NewEndpointDecoder()
	in := model.Endpoint{ID: "ep", Name: "one", Labels: map[string]string{"team": "a"}}
	raw, _ := json.Marshal(in)
	if _, ok := d.Current("ep", 1); ok {
		t.Fatal("Current answered before any read")
	}
	if _, err := d.DecodeAt("ep", raw, 5); err != nil {
		t.Fatal(err)
	}
	got, ok := d.Current("ep", 5)
	if !ok || !reflect.DeepEqual(got, in) {
		t.Fatalf("Current at the read's generation = %+v, %v; want %+v", got, ok, in)
	}
	got.Labels["team"] = "changed" // the caller's copy
	if again, _ := d.Current("ep", 5); again.Labels["team"] != "a" {
		t.Fatalf("Current handed out the remembered endpoint itself: %v", again.Labels)
	}
	if _, ok := d.Current("ep", 6); ok {
		t.Fatal("Current answered at a later generation (an endpoint was written since the read)")
	}
	if _, err := d.DecodeAt("ep", raw, 6); err != nil {
		t.Fatal(err)
	}
	if _, ok := d.Current("ep", 6); !ok {
		t.Fatal("the same record read at a later generation did not move the entry forward")
	}
	if _, err := d.DecodeAt("ep", raw, 4); err != nil {
		t.Fatal(err)
	}
	if _, ok := d.Current("ep", 6); !ok {
		t.Fatal("a read that began earlier moved the entry back")
	}
	in.Name = "two" // an older reader's record after a newer one: stored, stale-tagged
	raw2, _ := json.Marshal(in)
	if _, err := d.DecodeAt("ep", raw2, 3); err != nil {
		t.Fatal(err)
	}
	if _, ok := d.Current("ep", 6); ok {
		t.Fatal("Current answered with a record read at an older generation")
	}
	if _, err := d.Decode("ep", raw); err != nil {
		t.Fatal(err)
	}
	if _, ok := d.Current("ep", 0); ok {
		t.Fatal("Current answered at generation 0")
	}
}
