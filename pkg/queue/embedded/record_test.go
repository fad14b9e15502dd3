package embedded

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/mcpmon/mcpmon/pkg/clock"
	"github.com/mcpmon/mcpmon/pkg/queue"
)

// TestFileOfBeforeIsReadAndMoved: a queue file written before the binary
// records (JSON messages with base64 bodies, dedup records keyed by dedup
// key) opens with its message, receive count and dedup window intact, and
// its dedup bucket is moved into the time-ordered one.
func TestFileOfBeforeIsReadAndMoved(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	at := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	db, err := bolt.Open(filepath.Join(dir, FileName), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	old := message{Seq: 7, ID: "0d5c7a4e-0000-4000-8000-000000000001", GroupID: "ep1", DedupID: "ep1-run1",
		Body: []byte(`{"endpointId":"ep1"}`), SentAt: at, ReceiveCount: 2}
	if err := db.Update(func(tx *bolt.Tx) error {
		qb, err := tx.CreateBucketIfNotExists(bucketName("results"))
		if err != nil {
			return err
		}
		mb, err := qb.CreateBucketIfNotExists(msgsBucket)
		if err != nil {
			return err
		}
		raw, _ := json.Marshal(old)
		if err := mb.Put(seqKey(old.Seq), raw); err != nil {
			return err
		}
		db, err := qb.CreateBucketIfNotExists(dedupBucket)
		if err != nil {
			return err
		}
		rec, _ := json.Marshal(dedupRecord{ID: old.ID, At: at})
		return db.Put([]byte(old.DedupID), rec)
	}); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	clk := clock.NewFake(at.Add(time.Minute))
	b, err := Open(dir, queue.StageConfigs(), Options{Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	q := b.Queue("results")
	dup, err := q.Send(ctx, []queue.SendInput{{GroupID: "ep1", DedupID: "ep1-run1", Body: []byte("again")}})
	if err != nil || !dup[0].Duplicate || dup[0].MessageID != old.ID {
		t.Fatalf("resend within the window = %+v, %v; want a duplicate of %s", dup, err, old.ID)
	}
	ms, err := q.Receive(ctx, queue.ReceiveInput{Max: 10})
	if err != nil || len(ms) != 1 || !bytes.Equal(ms[0].Body, old.Body) || ms[0].ReceiveCount != 3 || !ms[0].SentAt.Equal(at) {
		t.Fatalf("receive = %+v, %v; want the old message, received a third time", ms, err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}

	// The old bucket is gone, the record is in the time-ordered one, and
	// the message was rewritten in the binary record by its receive.
	db, err = bolt.Open(filepath.Join(dir, FileName), 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.View(func(tx *bolt.Tx) error {
		qb := tx.Bucket(bucketName("results"))
		if qb.Bucket(dedupBucket) != nil {
			t.Error("the old dedup bucket is still there")
		}
		if v := qb.Bucket(dedupTimeBucket).Get(dedupFileKey(at, old.DedupID)); string(v) != old.ID {
			t.Errorf("time-ordered dedup record = %q, want %q", v, old.ID)
		}
		if v := qb.Bucket(msgsBucket).Get(seqKey(old.Seq)); len(v) == 0 || v[0] != recordV1 {
			t.Errorf("stored message = %q, want a binary record", v)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	// Past the window the same dedup ID is a new message, across a restart.
	clk.Advance(queue.DedupWindow)
	b, err = Open(dir, queue.StageConfigs(), Options{Clock: clk})
	if err == nil {
		defer b.Close()
		var res []queue.SendResult
		res, err = b.Queue("results").Send(ctx, []queue.SendInput{{GroupID: "ep1", DedupID: "ep1-run1", Body: []byte("new")}})
		if err == nil && (res[0].Duplicate || res[0].MessageID == old.ID) {
			t.Errorf("send after the window = %+v; want a new message", res[0])
		}
	}
	if err != nil {
		t.Fatal(err)
	}
}

func TestMessageRecordRoundTrip(t *testing.T) {
	at := time.Date(2026, 12, 2, 9, 0, 0, 123456789, time.UTC)
	for _, m := range []message{
		{Seq: 1, ID: "id", GroupID: "g", DedupID: "d", Body: []byte("b"), SentAt: at},
		{Seq: 1 << 40, ID: "id2", GroupID: "g2", DedupID: "", Body: bytes.Repeat([]byte("x"), 4096), SentAt: at,
			ReceiveCount: 9, ReceivedAt: at.Add(time.Second), VisibleAt: at.Add(time.Minute), Reason: "handler: boom", Receives: 5},
	} {
		got, err := decodeMessage(encodeMessage(&m))
		if err != nil {
			t.Fatal(err)
		}
		if got.Seq != m.Seq || got.ID != m.ID || got.GroupID != m.GroupID || got.DedupID != m.DedupID || !bytes.Equal(got.Body, m.Body) ||
			!got.SentAt.Equal(m.SentAt) || got.ReceiveCount != m.ReceiveCount || !got.ReceivedAt.Equal(m.ReceivedAt) ||
			!got.VisibleAt.Equal(m.VisibleAt) || got.Reason != m.Reason || got.Receives != m.Receives {
			t.Errorf("round trip of %+v = %+v", m, got)
		}
	}
}

// FuzzDecodeMessage: a damaged record (a torn or edited file) is an error,
// never a panic or an allocation past maxRecordField.
func FuzzDecodeMessage(f *testing.F) {
	at := time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC)
	f.Add(encodeMessage(&message{Seq: 3, ID: "i", GroupID: "g", DedupID: "d", Body: []byte("{}"), SentAt: at}))
	f.Add([]byte(`{"seq":1,"id":"x","body":"e30="}`))
	f.Add([]byte{recordV1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01})
	f.Add([]byte{recordV1, 1, 0xff, 0xff, 0xff, 0x7f})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := decodeMessage(b)
		if err == nil && len(b) > 0 && b[0] == recordV1 {
			if again := encodeMessage(&m); !bytes.Equal(again, b) {
				// Varints have one shortest form; a record the
				// decoder accepts must be the one the encoder writes
				// unless it used a longer varint form.
				if _, err := decodeMessage(again); err != nil {
					t.Fatalf("re-encoded record does not decode: %v", err)
				}
			}
		}
	})
}
