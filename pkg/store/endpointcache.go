package store

import (
	"bytes"
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
// The zero value is not usable: NewEndpointDecoder.
type EndpointDecoder struct {
	mu   sync.Mutex
	byID map[string]decodedEndpoint
}

type decodedEndpoint struct {
	raw []byte
	ep  model.Endpoint
}

// NewEndpointDecoder returns an empty decoder.
func NewEndpointDecoder() *EndpointDecoder {
	return &EndpointDecoder{byID: map[string]decodedEndpoint{}}
}

// Decode returns the endpoint stored under id as raw. raw is only read
// during the call (a bbolt value may be passed inside its transaction).
func (d *EndpointDecoder) Decode(id string, raw []byte) (model.Endpoint, error) {
	d.mu.Lock()
	got, ok := d.byID[id]
	d.mu.Unlock()
	if ok && bytes.Equal(got.raw, raw) {
		return got.ep.Clone(), nil
	}
	var e model.Endpoint
	if err := jsonv.Unmarshal(raw, &e); err != nil {
		return model.Endpoint{}, fmt.Errorf("decode endpoint %s: %w", id, err)
	}
	d.mu.Lock()
	d.byID[id] = decodedEndpoint{raw: bytes.Clone(raw), ep: e.Clone()}
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
