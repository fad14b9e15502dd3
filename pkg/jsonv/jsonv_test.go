package jsonv_test

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/mcpmon/mcpmon/pkg/jsonv"
	"github.com/mcpmon/mcpmon/pkg/msg"
)

// seeds are bodies a hostile or broken writer could put on a queue or in a
// record: duplicate and differently cased names, wrong types, bad UTF-8,
// trailing data, deep nesting, huge numbers, nulls where values belong.
var seeds = []string{
	`{"schema":1,"endpointId":"ep","probeRunId":"r","slot":"2026-12-02T10:00:00Z","status":"up","class":"ok","phases":{"total":0.01}}`,
	`{"schema":1,"endpointId":"a","endpointId":"b"}`,
	`{"Schema":1,"ENDPOINTID":"ep","probeRunID":"r"}`,
	`{"schema":"1"}`,
	`{"schema":1,"slot":"not a time"}`,
	`{"schema":1,"endpointId":"\xff\xfe"}`,
	`{"schema":1} trailing`,
	`{"schema":1}{"schema":2}`,
	`{"schema":1e400}`,
	`{"schema":1,"phases":{"total":"fast"}}`,
	`{"schema":1,"phases":null,"events":null,"conformance":null}`,
	`{"schema":1,"events":[{"kind":"x","details":{"a":[[[[[[[[[[1]]]]]]]]]]}}]}`,
	`{"schema":1,"conformance":{"rules":[{"id":"r","outcome":"pass"}],"checkedAt":"2026-12-02T10:00:00.123456789+01:00"}}`,
	`{"schema":1,"certExpiry":null,"blindSince":"0001-01-01T00:00:00Z"}`,
	`[1,2,3]`, `null`, ``, `{`, `{"schema":1,}`, `{"schema":01}`, `"\ud800"`,
}

// FuzzUnmarshalMatchesEncodingJSON: for any input, jsonv.Unmarshal into a
// probe result fails exactly when encoding/json's does, and otherwise
// yields the same value.
func FuzzUnmarshalMatchesEncodingJSON(f *testing.F) {
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var want, got msg.ProbeResult
		werr := json.Unmarshal(data, &want)
		gerr := jsonv.Unmarshal(data, &got)
		if (werr == nil) != (gerr == nil) {
			t.Fatalf("%q: encoding/json error %v, jsonv error %v", data, werr, gerr)
		}
		if werr == nil && !reflect.DeepEqual(want, got) {
			t.Fatalf("%q: values differ:\nencoding/json %+v\njsonv         %+v", data, want, got)
		}
	})
}

// FuzzField: on any input Field returns without panicking, and on a
// record encoding/json wrote (any input that decodes as a probe result,
// encoded again) it finds each top-level member and decodes the value
// Unmarshal gives, however far into the record the member sits.
func FuzzField(f *testing.F) {
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var anything any
		_, _ = jsonv.Field(data, "slot", &anything)

		var r msg.ProbeResult
		if json.Unmarshal(data, &r) != nil {
			return
		}
		// A nested member of the same name, ahead of the top-level one.
		r.Phases = map[string]float64{"toolCount": 7}
		r.ToolCount = 3
		enc, err := json.Marshal(r)
		if err != nil {
			return
		}
		var slot time.Time
		if found, err := jsonv.Field(enc, "slot", &slot); !found || err != nil || !slot.Equal(r.Slot) {
			t.Fatalf("%s: Field(slot) = %v, %v, %v; want %v", enc, slot, found, err, r.Slot)
		}
		var class string
		if found, err := jsonv.Field(enc, "class", &class); !found || err != nil || class != r.Class {
			t.Fatalf("%s: Field(class) = %q, %v, %v; want %q", enc, class, found, err, r.Class)
		}
		var tools int
		if found, err := jsonv.Field(enc, "toolCount", &tools); !found || err != nil || tools != 3 {
			t.Fatalf("%s: Field(toolCount) = %d, %v, %v; want the top-level 3, not the phase's 7", enc, tools, found, err)
		}
		if found, err := jsonv.Field(enc, "nosuchmember", &class); found || err != nil {
			t.Fatalf("%s: Field(nosuchmember) = %v, %v; want not found, no error", enc, found, err)
		}
	})
}
