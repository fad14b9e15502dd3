package store

import (
	"fmt"
	"sync"

	"github.com/mcpmon/mcpmon/pkg/jsonv"
	"github.com/mcpmon/mcpmon/pkg/model"
)

// EndpointDecoder decodes stored endpoint records, remembering each
// endpoint's last decode beside the bytes it came from. A record that reads
// back byte for byte the same is not decoded again: the caller gets a Clone
// of the remembered endpoint. On the hot path an endpoint is read three
// times a probe (prober, aggregator, alerter) and written only when a user
// changes it, so most reads are a map lookup and a byte comparison instead
// of a JSON decode.
//
// Comparing the bytes, not a version or a stamp, keeps it right whoever
// wrote the record (an update, a delete and re-create, a migration, a
// key rotation's re-seal): a changed record is a different byte string.
// It keeps a copy (bytes and decoded) of every endpoint it decoded until
// Forget; stores pass it single-endpoint reads only, not listings.
// The zero value is not usable: NewEndpointDecoder.
type EndpointDecoder struct {
	mu   sync.Mutex
	byID map[string]*decodedEndpoint
}

type decodedEndpoint struct {
	raw string // the record's bytes
	ep  model.Endpoint
}

// NewEndpointDecoder returns an empty decoder.
func NewEndpointDecoder() *EndpointDecoder {
	return &EndpointDecoder{byID: map[string]*decodedEndpoint{}}
}

// Decode returns the endpoint stored under id as raw. raw is only read
// during the call (a bbolt value may be passed inside its transaction).
func (d *EndpointDecoder) Decode(id string, raw []byte) (model.Endpoint, error) {
	if e, ok := remembered(d, id, raw); ok {
		return e, nil
	}
	return d.decode(id, raw, string(raw))
}

// DecodeString is Decode for a record read as a string (a Redis reply).
func (d *EndpointDecoder) DecodeString(id, raw string) (model.Endpoint, error) {
	if e, ok := remembered(d, id, raw); ok {
		return e, nil
	}
	return d.decode(id, []byte(raw), raw)
}

// remembered returns a Clone of id's last decode when it came from raw.
// The comparison string(raw) does not copy raw.
func remembered[B string | []byte](d *EndpointDecoder, id string, raw B) (model.Endpoint, bool) {
	d.mu.Lock()
	got, ok := d.byID[id]
	d.mu.Unlock()
	if !ok || got.raw != string(raw) {
		return model.Endpoint{}, false
	}
	return got.ep.Clone(), true
}

// decode decodes raw (rawString is the same bytes, kept) and remembers it.
func (d *EndpointDecoder) decode(id string, raw []byte, rawString string) (model.Endpoint, error) {
	var e model.Endpoint
	if err := jsonv.Unmarshal(raw, &e); err != nil {
		return model.Endpoint{}, fmt.Errorf("decode endpoint %s: %w", id, err)
	}
	d.mu.Lock()
	d.byID[id] = &decodedEndpoint{raw: rawString, ep: e.Clone()}
	d.mu.Unlock()
	return e, nil
}

// Forget drops id's remembered decode (its record was deleted), so a
// deleted endpoint's copy does not stay in memory.
func (d *EndpointDecoder) Forget(id string) {
	d.mu.Lock()
	delete(d.byID, id)
	d.mu.Unlock()
}

// Len is the number of endpoints remembered.
func (d *EndpointDecoder) Len() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.byID)
}
