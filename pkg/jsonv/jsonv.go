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

import jsonv1 "github.com/go-json-experiment/json/v1"

// Unmarshal decodes data into v as encoding/json.Unmarshal does.
func Unmarshal(data []byte, v any) error { return jsonv1.Unmarshal(data, v) }
