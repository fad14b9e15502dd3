package seal_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpmon/mcpmon/pkg/seal"
)

func keyring(t *testing.T, keys ...[]byte) *seal.Keyring {
	t.Helper()
	k, err := seal.NewKeyring(keys...)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func TestSealRoundTripHidesPlaintext(t *testing.T) {
	k := keyring(t, seal.NewKey())
	for _, pt := range []string{"", "Bearer sk-live-TOPSECRET", strings.Repeat("x", 10000)} {
		s := k.Seal([]byte(pt), []byte("aad"))
		if !seal.IsSealed(s) || !strings.HasPrefix(s, seal.Prefix+k.CurrentID()+":") {
			t.Fatalf("sealed text %q lacks the prefix and key ID", s)
		}
		if pt != "" && strings.Contains(s, pt) {
			t.Fatalf("plaintext visible in %q", s)
		}
		got, err := k.Open(s, []byte("aad"))
		if err != nil || string(got) != pt {
			t.Fatalf("Open = %q, %v; want the plaintext back", got, err)
		}
	}
	if k.Seal([]byte("same"), nil) == k.Seal([]byte("same"), nil) {
		t.Fatal("two seals of one value are equal: the nonce is not fresh")
	}
}

func TestOpenRefusesTamperingWrongKeyAndWrongRecord(t *testing.T) {
	k := keyring(t, seal.NewKey())
	s := k.Seal([]byte("s3cret-value"), []byte("endpoint a"))
	payload := s[strings.LastIndex(s, ":")+1:]
	flip := []byte(payload)
	if flip[10] == 'A' {
		flip[10] = 'B'
	} else {
		flip[10] = 'A'
	}
	other := keyring(t, seal.NewKey())
	for _, tc := range []struct {
		name string
		k    *seal.Keyring
		text string
		aad  string
		want error
	}{
		{"flipped ciphertext", k, strings.TrimSuffix(s, payload) + string(flip), "endpoint a", seal.ErrTampered},
		{"truncated", k, s[:len(s)-4], "endpoint a", seal.ErrTampered},
		{"other record", k, s, "endpoint b", seal.ErrTampered},
		{"wrong key", other, s, "endpoint a", seal.ErrUnknownKey},
		{"key ID swapped", other, strings.Replace(s, k.CurrentID(), other.CurrentID(), 1), "endpoint a", seal.ErrTampered},
		{"not base64", k, seal.Prefix + k.CurrentID() + ":***", "endpoint a", seal.ErrFormat},
		{"no key ID", k, seal.Prefix + "abc", "endpoint a", seal.ErrFormat},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := tc.k.Open(tc.text, []byte(tc.aad)); !errors.Is(err, tc.want) {
				t.Fatalf("Open = %v, want %v", err, tc.want)
			}
		})
	}
}

func TestRotationKeepsOldCiphertextsReadable(t *testing.T) {
	oldKey, newKey := seal.NewKey(), seal.NewKey()
	before := keyring(t, oldKey)
	s := before.Seal([]byte("v"), nil)
	after := keyring(t, newKey, oldKey)
	if after.CurrentID() != seal.KeyID(newKey) || after.CurrentID() == before.CurrentID() {
		t.Fatalf("current key after rotation = %s", after.CurrentID())
	}
	if got, err := after.Open(s, nil); err != nil || string(got) != "v" {
		t.Fatalf("old ciphertext after rotation: %q, %v", got, err)
	}
	if id, _ := seal.SealedKeyID(after.Seal([]byte("v"), nil)); id != seal.KeyID(newKey) {
		t.Fatalf("new seals use key %s, want the new key", id)
	}
	if _, err := keyring(t, newKey).Open(s, nil); !errors.Is(err, seal.ErrUnknownKey) {
		t.Fatalf("dropping the old key: %v, want ErrUnknownKey", err)
	}
}

func TestKeyFiles(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "secrets.key")
	k1, err := seal.CreateKeyFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file mode %04o, want 0600", fi.Mode().Perm())
	}
	if _, err := seal.CreateKeyFile(path); !errors.Is(err, os.ErrExist) {
		t.Fatalf("second create: %v, want it to refuse an existing file", err)
	}
	k2 := seal.NewKey()
	if err := seal.WriteKeyFile(path, [][]byte{k2, k1}); err != nil {
		t.Fatal(err)
	}
	keys, err := seal.LoadKeyFile(path)
	if err != nil || len(keys) != 2 || seal.KeyID(keys[0]) != seal.KeyID(k2) || seal.KeyID(keys[1]) != seal.KeyID(k1) {
		t.Fatalf("LoadKeyFile = %d keys, %v", len(keys), err)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Fatalf("rewritten key file mode %04o, want 0600", fi.Mode().Perm())
	}
	os.Chmod(path, 0o644)
	if _, err := seal.LoadKeyFile(path); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Fatalf("world-readable key file: %v", err)
	}
}

func TestParseKeysNeverQuotesAKey(t *testing.T) {
	good := seal.EncodeKey(seal.NewKey())
	if keys, err := seal.ParseKeys("# comment\n" + good + ", " + seal.EncodeKey(seal.NewKey()) + "\n"); err != nil || len(keys) != 2 {
		t.Fatalf("ParseKeys = %d, %v", len(keys), err)
	}
	for _, bad := range []string{"", "# only a comment", "c2hvcnQ=", "not base64 at all!", good[:20]} {
		_, err := seal.ParseKeys(bad)
		if err == nil {
			t.Fatalf("ParseKeys(%q) accepted", bad)
		}
		if bad != "" && strings.Contains(err.Error(), strings.TrimSpace(bad)) && !strings.HasPrefix(bad, "#") {
			t.Fatalf("error %q quotes the key", err)
		}
	}
}
