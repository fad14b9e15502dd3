// Package jsonv decodes the JSON of the pipeline's hot path — queue message
// bodies and the embedded store's records — with encoding/json's semantics
// (v1: the same struct tags, case-insensitive names, the same errors for
// the same mistakes) on the json/v2 engine, which decodes a probe result
// in 0.6× the time and a quarter of the allocations of encoding/json
// (BenchmarkResultCodec in pkg/msg, side by side). Decoding a result
// several times per probe (queue, window, previous result) was a sixth of
// the pipeline's CPU at 10,000 endpoints.
//
// Encoding stays with encoding/json: the v2 engine was no faster at it.
// The engine is github.com/go-json-experiment/json, the module
// encoding/json/v2 came from; from Go 1.27 on, encoding/json itself runs on
// it and this package can go.
package jsonv

import (
	"bytes"

	"github.com/go-json-experiment/json/jsontext"
	jsonv1 "github.com/go-json-experiment/json/v1"
)

// Unmarshal decodes data into v as encoding/json.Unmarshal does.
func Unmarshal(data []byte, v any) error { return jsonv1.Unmarshal(data, v) }

// Field decodes the top-level member name of the JSON object data into v,
// as Unmarshal would decode that member, and reads no further: for a
// field near the start of a large record (a result's slot ahead of its
// phases, catalog and conformance) it costs a few tokens where Unmarshal
// parses the whole record. It reports false when data has no such member
// (with an error when the JSON breaks before one is found). Names are
// matched exactly, as encoding/json writes them, and the first match is
// taken: use it on records this program encoded itself, where neither
// case variants nor duplicates occur; Unmarshal is the decoder for
// anything else.
func Field(data []byte, name string, v any) (bool, error) {
	d := jsontext.NewDecoder(bytes.NewBuffer(data))
	if tok, err := d.ReadToken(); err != nil || tok.Kind() != '{' {
		return false, err
	}
	for d.PeekKind() == '"' {
		tok, err := d.ReadToken()
		if err != nil {
			return false, err
		}
		if tok.String() != name {
			if err := d.SkipValue(); err != nil {
				return false, err
			}
			continue
		}
		raw, err := d.ReadValue()
		if err != nil {
			return false, err
		}
		return true, jsonv1.Unmarshal(raw, v)
	}
	return false, nil
}
