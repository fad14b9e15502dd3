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
// Current is the exception: it answers without the bytes, so it is only
// as right as the store's generation, which must move after every write of
// an endpoint record (the bolt store's three endpoint writers; a re-seal
// goes through UpdateEndpoint).
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
	// gen is the store generation the record was read at (DecodeAt),
	// 0 when the store keeps none (Decode).
	gen uint64
}

// NewEndpointDecoder returns an empty decoder.
func NewEndpointDecoder() *EndpointDecoder {
	return &EndpointDecoder{byID: map[string]*decodedEndpoint{}}
}

// Decode returns the endpoint stored under id as raw. raw is only read
// during the call (a bbolt value may be passed inside its transaction).
func (d *EndpointDecoder) Decode(id string, raw []byte) (model.Endpoint, error) {
	return d.DecodeAt(id, raw, 0)
}

// DecodeAt is Decode for a store that counts its endpoint writes in a
// generation (a number that grows after every committed endpoint write, in
// one process): gen is the generation read before the transaction that
// read raw began. The decode remembers it, and Current answers from it
// without a read while the generation stays the same.
func (d *EndpointDecoder) DecodeAt(id string, raw []byte, gen uint64) (model.Endpoint, error) {
	if e, ok := remembered(d, id, raw, gen); ok {
		return e, nil
	}
	return d.decode(id, raw, string(raw), gen)
}

// Current returns a Clone of id's remembered endpoint when it was read at
// generation gen (DecodeAt), which must be the store's generation now: no
// endpoint write has committed since that read began, so the record is
// the one stored. gen 0 never matches.
//
// Why that is enough: the store moves its generation after a write
// commits. A write committed before the read's transaction began is in the
// record read; one committed after it moves the generation past gen (the
// reader loaded gen before its transaction), so the entry stops matching.
// Only a read concurrent with a write still being committed can get the
// record from before it, as a read a moment earlier would have. Such
// reads must not go by a generation (pass 0): two of them could leave
// the record from before the write at a generation the record after it
// was already served at, and a reader would read a version, then an
// older one (the bolt store's endpointGen).
func (d *EndpointDecoder) Current(id string, gen uint64) (model.Endpoint, bool) {
	if gen == 0 {
		return model.Endpoint{}, false
	}
	d.mu.Lock()
	got, ok := d.byID[id]
	d.mu.Unlock()
	if !ok || got.gen != gen {
		return model.Endpoint{}, false
	}
	return got.ep.Clone(), true
}

// DecodeString is Decode for a record read as a string (a Redis reply).
func (d *EndpointDecoder) DecodeString(id, raw string) (model.Endpoint, error) {
	if e, ok := remembered(d, id, raw, 0); ok {
		return e, nil
	}
	return d.decode(id, []byte(raw), raw, 0)
}

// remembered returns a Clone of id's last decode when it came from raw,
// noting that raw was read at gen. The comparison string(raw) does not
// copy raw.
func remembered[B string | []byte](d *EndpointDecoder, id string, raw B, gen uint64) (model.Endpoint, bool) {
	d.mu.Lock()
	got, ok := d.byID[id]
	if ok && got.raw == string(raw) && got.gen < gen {
		// The same record read at a later generation. A new entry, not
		// an edit: readers hold the old one unlocked.
		n := *got
		n.gen = gen
		d.byID[id] = &n
	}
	d.mu.Unlock()
	if !ok || got.raw != string(raw) {
		return model.Endpoint{}, false
	}
	return got.ep.Clone(), true
}

// decode decodes raw (rawString is the same bytes, kept) and remembers it
// as read at gen.
func (d *EndpointDecoder) decode(id string, raw []byte, rawString string, gen uint64) (model.Endpoint, error) {
	var e model.Endpoint
	if err := jsonv.Unmarshal(raw, &e); err != nil {
		return model.Endpoint{}, fmt.Errorf("decode endpoint %s: %w", id, err)
	}
	d.mu.Lock()
	d.byID[id] = &decodedEndpoint{raw: rawString, ep: e.Clone(), gen: gen}
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
