package embedded

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// The file's records.
//
// A message is stored as recordV1 followed by its fields in a fixed order:
// unsigned varints for numbers, a varint length before each string and the
// body, times as signed varint Unix nanoseconds (0: zero time). The body is
// copied as it is. Before, a message was JSON (its body base64 inside the
// JSON), and every send and every receive encoded the whole message again:
// JSON was most of the queue's own CPU. A stored JSON message (a file from
// before) starts with '{' and is still read.
//
// A dedup record is keyed by its acceptance time (8 bytes, big-endian Unix
// nanoseconds) followed by the dedup key, and holds the message ID. Records
// are added at the right end of the bucket and expire from its left end, so
// a commit touches a page or two of it instead of a random page per send
// (the keys are endpoint IDs, random by design). The bucket of before
// ("dedup", dedup key → JSON {id, at}) is read and moved at open.

const recordV1 = 1

// maxRecordField bounds one string or body read back from the file: the
// broker never writes more than SQS's message size, so a longer field is a
// damaged record.
const maxRecordField = 1 << 20

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func appendTime(b []byte, t time.Time) []byte {
	if t.IsZero() {
		return binary.AppendVarint(b, 0)
	}
	return binary.AppendVarint(b, t.UnixNano())
}

// encodeMessage encodes m for the msgs bucket.
func encodeMessage(m *message) []byte {
	n := 1 + 6*binary.MaxVarintLen64 + len(m.ID) + len(m.GroupID) + len(m.DedupID) + len(m.Body) + len(m.Reason) + 5*binary.MaxVarintLen64
	b := make([]byte, 0, n)
	b = append(b, recordV1)
	b = binary.AppendUvarint(b, m.Seq)
	b = appendString(b, m.ID)
	b = appendString(b, m.GroupID)
	b = appendString(b, m.DedupID)
	b = binary.AppendUvarint(b, uint64(len(m.Body)))
	b = append(b, m.Body...)
	b = appendTime(b, m.SentAt)
	b = binary.AppendUvarint(b, uint64(m.ReceiveCount))
	b = appendTime(b, m.ReceivedAt)
	b = appendTime(b, m.VisibleAt)
	b = appendString(b, m.Reason)
	b = binary.AppendUvarint(b, uint64(m.Receives))
	return b
}

var errRecord = errors.New("damaged record")

// recordReader reads a record's fields in order; the first error sticks.
type recordReader struct {
	b   []byte
	err error
}

func (r *recordReader) uint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.err = errRecord
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *recordReader) bytes() []byte {
	l := r.uint()
	if r.err != nil {
		return nil
	}
	if l > maxRecordField || l > uint64(len(r.b)) {
		r.err = errRecord
		return nil
	}
	v := append([]byte(nil), r.b[:l]...)
	r.b = r.b[l:]
	return v
}

func (r *recordReader) string() string { return string(r.bytes()) }

func (r *recordReader) time() time.Time {
	if r.err != nil {
		return time.Time{}
	}
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.err = errRecord
		return time.Time{}
	}
	r.b = r.b[n:]
	if v == 0 {
		return time.Time{}
	}
	return time.Unix(0, v).UTC()
}

// decodeMessage reads a stored message: the binary record, or the JSON of
// a file from before.
func decodeMessage(v []byte) (message, error) {
	var m message
	if len(v) > 0 && v[0] == '{' {
		err := json.Unmarshal(v, &m)
		return m, err
	}
	if len(v) == 0 || v[0] != recordV1 {
		return m, fmt.Errorf("%w: unknown record version", errRecord)
	}
	r := &recordReader{b: v[1:]}
	m.Seq = r.uint()
	m.ID = r.string()
	m.GroupID = r.string()
	m.DedupID = r.string()
	m.Body = r.bytes()
	m.SentAt = r.time()
	m.ReceiveCount = int(r.uint())
	m.ReceivedAt = r.time()
	m.VisibleAt = r.time()
	m.Reason = r.string()
	m.Receives = int(r.uint())
	if r.err == nil && len(r.b) != 0 {
		r.err = fmt.Errorf("%w: %d bytes after the last field", errRecord, len(r.b))
	}
	return m, r.err
}

// dedupFileKey is a dedup record's key in the file: its acceptance time,
// then the dedup key.
func dedupFileKey(at time.Time, key string) []byte {
	b := make([]byte, 8, 8+len(key))
	binary.BigEndian.PutUint64(b, uint64(at.UnixNano()))
	return append(b, key...)
}

// parseDedupFileKey splits a dedupFileKey.
func parseDedupFileKey(k []byte) (at time.Time, key string, ok bool) {
	if len(k) < 8 {
		return time.Time{}, "", false
	}
	return time.Unix(0, int64(binary.BigEndian.Uint64(k[:8]))).UTC(), string(k[8:]), true
}
