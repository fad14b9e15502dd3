package sealed_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/mcpmon/mcpmon/pkg/clock"
	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/seal"
	"github.com/mcpmon/mcpmon/pkg/store"
	"github.com/mcpmon/mcpmon/pkg/store/bolt"
	"github.com/mcpmon/mcpmon/pkg/store/redis"
	"github.com/mcpmon/mcpmon/pkg/store/sealed"
	"github.com/mcpmon/mcpmon/pkg/store/storetest"
	"github.com/mcpmon/mcpmon/pkg/testpeers"
)

func keyring(t *testing.T, keys ...[]byte) *seal.Keyring {
	t.Helper()
	k, err := seal.NewKeyring(keys...)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func randHex() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// secretEndpoint is an endpoint carrying one known secret in every place a
// secret lives; secrets lists them.
func secretEndpoint(id string) (model.Endpoint, []string) {
	tag := randHex()
	secrets := []string{"Bearer-hdr-" + tag, "apikey-hdr-" + tag, "hook-path-" + tag, "hmac-" + tag, "pd-routing-" + tag, "smtp-pass-" + tag, "qs-token-" + tag}
	sinks := `{"webhook":{"type":"webhook","url":"https://hooks.example/` + secrets[2] + `","secret":"` + secrets[3] + `"},` +
		`"pd":{"type":"pagerduty","routingKey":"` + secrets[4] + `"},"mail":{"type":"email","password":"` + secrets[5] + `","to":["ops@example.com"]}}`
	return model.Endpoint{
		ID: id, Name: "paid", URL: "https://mcp.example/mcp?tenant=acme&access_token=" + secrets[6], Transport: "auto",
		Schedule: "@every 30s", Timeout: 10 * time.Second,
		Headers: map[string]string{"Authorization": secrets[0], "X-Api-Key": secrets[1]},
		Sinks:   json.RawMessage(sinks),
	}, secrets
}

func openBolt(t *testing.T, path string) *bolt.Store {
	t.Helper()
	s, err := bolt.Open(path, bolt.Options{SweepInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestConformanceThroughTheWrapper: sealing changes nothing a caller of
// the store can observe.
func TestConformanceThroughTheWrapper(t *testing.T) {
	k := keyring(t, seal.NewKey())
	storetest.Run(t, func(t *testing.T, clk *clock.Fake) store.Store {
		s, err := bolt.Open(filepath.Join(t.TempDir(), "store.db"), bolt.Options{Clock: clk, SweepInterval: -1})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return sealed.Wrap(s, k)
	})
}

// writeAndCheck writes ep through the wrapper (create, then an update),
// checks it reads back whole, and returns the stored form.
func writeAndCheck(t *testing.T, st store.Store, ep model.Endpoint) {
	t.Helper()
	ctx := t.Context()
	created, err := st.CreateEndpoint(ctx, ep)
	if err != nil {
		t.Fatal(err)
	}
	if created.Headers["Authorization"] != ep.Headers["Authorization"] || created.URL != ep.URL || !bytes.Equal(created.Sinks, ep.Sinks) {
		t.Fatalf("create returned %+v, want the plaintext back", created)
	}
	created.Name = "paid-2"
	if _, err := st.UpdateEndpoint(ctx, created); err != nil {
		t.Fatal(err)
	}
	got, err := st.GetEndpoint(ctx, ep.ID)
	if err != nil {
		t.Fatal(err)
	}
	list, err := st.ListEndpoints(ctx)
	if err != nil || len(list) != 1 {
		t.Fatalf("ListEndpoints = %d, %v", len(list), err)
	}
	in, err := st.ListEndpointsIn(ctx, []int{store.ShardOf(ep.ID)})
	if err != nil || len(in) != 1 {
		t.Fatalf("ListEndpointsIn = %d, %v", len(in), err)
	}
	for _, e := range []model.Endpoint{got, list[0], in[0]} {
		if e.Name != "paid-2" || e.URL != ep.URL || e.Headers["X-Api-Key"] != ep.Headers["X-Api-Key"] || !bytes.Equal(e.Sinks, ep.Sinks) {
			t.Fatalf("read back %+v, want the secrets opened", e)
		}
	}
}

func TestBoltFileHoldsNoPlaintextSecret(t *testing.T) {
	path := filepath.Join(t.TempDir(), "store.db")
	b := openBolt(t, path)
	ep, secrets := secretEndpoint("ep1")
	writeAndCheck(t, sealed.Wrap(b, keyring(t, seal.NewKey())), ep)
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(raw, []byte("paid-2")) {
		t.Fatal("store.db does not hold the endpoint at all: the grep proves nothing")
	}
	for _, s := range secrets {
		if bytes.Contains(raw, []byte(s)) {
			t.Errorf("store.db holds secret %q in plaintext", s)
		}
	}
	if !bytes.Contains(raw, []byte(seal.Prefix)) {
		t.Error("store.db holds no sealed value")
	}
}

func TestRedisHoldsNoPlaintextSecret(t *testing.T) {
	url := testpeers.RedisURL(t)
	prefix := "mcpmontest:" + randHex() + ":"
	r, err := redis.New(t.Context(), url, redis.Options{Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	o, _ := goredis.ParseURL(url)
	c := goredis.NewClient(o)
	t.Cleanup(func() {
		r.Close()
		ctx := context.Background()
		keys, _ := c.Keys(ctx, prefix+"*").Result()
		if len(keys) > 0 {
			c.Del(ctx, keys...)
		}
		c.Close()
	})
	ep, secrets := secretEndpoint("ep1")
	writeAndCheck(t, sealed.Wrap(r, keyring(t, seal.NewKey())), ep)

	// Every value of every key under the prefix, whatever its type.
	ctx := t.Context()
	var dump strings.Builder
	iter := c.Scan(ctx, 0, prefix+"*", 100).Iterator()
	n := 0
	for iter.Next(ctx) {
		key := iter.Val()
		n++
		dump.WriteString(key + "\n")
		typ, err := c.Type(ctx, key).Result()
		if err != nil {
			t.Fatal(err)
		}
		var vals any
		switch typ {
		case "string":
			vals, err = c.Get(ctx, key).Result()
		case "hash":
			vals, err = c.HGetAll(ctx, key).Result()
		case "list":
			vals, err = c.LRange(ctx, key, 0, -1).Result()
		case "set":
			vals, err = c.SMembers(ctx, key).Result()
		case "zset":
			vals, err = c.ZRangeWithScores(ctx, key, 0, -1).Result()
		case "stream":
			vals, err = c.XRange(ctx, key, "-", "+").Result()
		default:
			t.Fatalf("key %s has type %s the test cannot read", key, typ)
		}
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(vals)
		// JSON-in-JSON escapes nothing a secret here contains.
		dump.Write(b)
		dump.WriteString("\n")
	}
	if err := iter.Err(); err != nil {
		t.Fatal(err)
	}
	if n == 0 || !strings.Contains(dump.String(), "paid-2") {
		t.Fatalf("no endpoint under %s: the grep proves nothing:\n%s", prefix, dump.String())
	}
	for _, s := range secrets {
		if strings.Contains(dump.String(), s) {
			t.Errorf("Redis holds secret %q in plaintext", s)
		}
	}
}

// TestRotationAndPlaintextRecords: a record from before sealing reads as
// it is; after a rotation records sealed under the old key stay readable;
// Reseal brings everything under the current key, after which the old key
// is no longer needed.
func TestRotationAndPlaintextRecords(t *testing.T) {
	ctx := t.Context()
	b := openBolt(t, filepath.Join(t.TempDir(), "store.db"))
	defer b.Close()
	legacy, legacySecrets := secretEndpoint("legacy")
	if _, err := b.CreateEndpoint(ctx, legacy); err != nil { // written unsealed, as before this change
		t.Fatal(err)
	}
	oldKey, newKey := seal.NewKey(), seal.NewKey()
	before := sealed.Wrap(b, keyring(t, oldKey))
	if got, err := before.GetEndpoint(ctx, "legacy"); err != nil || got.Headers["Authorization"] != legacySecrets[0] || got.URL != legacy.URL {
		t.Fatalf("plaintext record through the wrapper: %+v, %v", got, err)
	}
	old, _ := secretEndpoint("old")
	if _, err := before.CreateEndpoint(ctx, old); err != nil {
		t.Fatal(err)
	}

	after := sealed.Wrap(b, keyring(t, newKey, oldKey))
	if got, err := after.GetEndpoint(ctx, "old"); err != nil || got.Headers["X-Api-Key"] != old.Headers["X-Api-Key"] {
		t.Fatalf("old-key record after rotation: %+v, %v", got, err)
	}
	if _, err := sealed.Wrap(b, keyring(t, newKey)).GetEndpoint(ctx, "old"); err == nil || !strings.Contains(err.Error(), "MCPMON_SECRETS_KEY") {
		t.Fatalf("reading an old-key record without the old key: %v, want an error naming the key setting", err)
	}
	n, err := after.Reseal(ctx)
	if err != nil || n != 2 {
		t.Fatalf("Reseal = %d, %v; want both records rewritten", n, err)
	}
	if n, err := after.Reseal(ctx); err != nil || n != 0 {
		t.Fatalf("second Reseal = %d, %v; want nothing left to do", n, err)
	}
	only := keyring(t, newKey)
	raw, _ := b.ListEndpoints(ctx)
	for _, e := range raw {
		if sealed.NeedsReseal(only, e) {
			t.Fatalf("endpoint %s still needs resealing: %+v", e.ID, e)
		}
		for _, s := range legacySecrets {
			if strings.Contains(e.Headers["Authorization"]+e.Headers["X-Api-Key"]+e.URL+string(e.Sinks), s) {
				t.Fatalf("stored endpoint %s still holds %q", e.ID, s)
			}
		}
	}
	eps, err := sealed.Wrap(b, only).ListEndpoints(ctx)
	if err != nil || len(eps) != 2 || eps[0].Headers["Authorization"] != legacySecrets[0] || !bytes.Equal(eps[0].Sinks, legacy.Sinks) {
		t.Fatalf("after Reseal with only the new key: %+v, %v", eps, err)
	}
}

// TestCiphertextIsBoundToItsRecord: a sealed header copied to another
// endpoint (whose URL an attacker with store access chose) does not open.
func TestCiphertextIsBoundToItsRecord(t *testing.T) {
	k := keyring(t, seal.NewKey())
	a, _ := secretEndpoint("a")
	sa, err := sealed.SealEndpoint(k, a)
	if err != nil {
		t.Fatal(err)
	}
	moved := sa
	moved.ID = "evil"
	if _, err := sealed.OpenEndpoint(k, moved); err == nil {
		t.Fatal("a ciphertext moved to another endpoint opened")
	}
	sa.Headers = map[string]string{"Authorization": sa.Headers["X-Api-Key"]} // moved to another header
	if _, err := sealed.OpenEndpoint(k, sa); err == nil {
		t.Fatal("a ciphertext moved to another header opened")
	}
}

// TestQuerySecrets: which names are credential-like is model.IsSecretParam
// (tested there); QuerySecrets returns their decoded, non-empty values.
func TestQuerySecrets(t *testing.T) {
	got := model.QuerySecrets("https://x.example/mcp?tenant=a&api%5Fkey=k%2F1&sig=&token=t#frag")
	if strings.Join(got, ",") != "k/1,t" {
		t.Fatalf("QuerySecrets = %q", got)
	}
}
