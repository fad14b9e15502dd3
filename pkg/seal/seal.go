// Package seal owns mcpmon's encryption of secrets at rest: a Keyring of
// AES-256-GCM keys (the current one seals, every one opens) and the text
// form of a sealed value,
//
//	sealed:v1:<keyID>:<base64url(nonce || ciphertext || tag)>
//
// Plaintext enters through Keyring.Seal and leaves through Keyring.Open;
// keys enter as base64 text (ParseKeys, LoadKeyFile) and leave only to a
// key file written with mode 0600 (WriteKeyFile). The package knows nothing
// of endpoints: pkg/store/sealed decides which fields are secrets.
//
// The key ID is derived from the key itself (a truncated SHA-256 under a
// domain-separation label), so a key file needs no bookkeeping beyond the
// order of its keys and a ciphertext names the key that opens it: keys can
// be rotated while old ciphertexts stay readable until they are re-sealed.
// Callers pass associated data naming where a value lives (an endpoint ID
// and field), so a ciphertext copied to another record does not open.
package seal

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Prefix starts every sealed value.
const Prefix = "sealed:v1:"

// KeySize is the size of a key: AES-256.
const KeySize = 32

// Sentinel errors. None of them carries key or plaintext material.
var (
	// ErrUnknownKey: the value was sealed under a key the keyring lacks.
	ErrUnknownKey = errors.New("sealed with a key this keyring does not hold")
	// ErrTampered: the ciphertext, its associated data or the key is wrong.
	ErrTampered = errors.New("sealed value does not open: tampered, or moved from another record")
	// ErrFormat: the text starts with Prefix but is not a sealed value.
	ErrFormat = errors.New("malformed sealed value")
	// ErrNoKeys: a keyring needs at least one key.
	ErrNoKeys = errors.New("no secrets key")
)

type key struct {
	id   string
	aead cipher.AEAD
	// derived is HMAC-SHA256 of the key over the domain-separation label
	// of Derive: a key for another use that reveals nothing of this one.
	derived func(label string) []byte
}

// Keyring seals under its current key and opens under any of its keys.
// It is safe for concurrent use.
type Keyring struct {
	keys []key // keys[0] is current
}

// NewKeyring builds a keyring; keys[0] becomes the current key. Each key is
// KeySize bytes.
func NewKeyring(keys ...[]byte) (*Keyring, error) {
	if len(keys) == 0 {
		return nil, ErrNoKeys
	}
	kr := &Keyring{}
	seen := map[string]bool{}
	for i, raw := range keys {
		if len(raw) != KeySize {
			return nil, fmt.Errorf("secrets key %d: %d bytes, want %d (base64 of 32 random bytes)", i+1, len(raw), KeySize)
		}
		id := KeyID(raw)
		if seen[id] {
			continue
		}
		seen[id] = true
		block, err := aes.NewCipher(raw)
		if err != nil {
			return nil, fmt.Errorf("secrets key %d: %w", i+1, err)
		}
		aead, err := cipher.NewGCM(block)
		if err != nil {
			return nil, fmt.Errorf("secrets key %d: %w", i+1, err)
		}
		raw := slices.Clone(raw)
		kr.keys = append(kr.keys, key{id: id, aead: aead, derived: func(label string) []byte {
			m := hmac.New(sha256.New, raw)
			m.Write([]byte("mcpmon derived key\x00" + label))
			return m.Sum(nil)
		}})
	}
	return kr, nil
}

// KeyID names a key: 8 hex digits of SHA-256 over a label and the key.
// 32 bits say which key to try, and reveal nothing useful about it.
func KeyID(raw []byte) string {
	h := sha256.New()
	h.Write([]byte("mcpmon seal key id\x00"))
	h.Write(raw)
	return hex.EncodeToString(h.Sum(nil)[:4])
}

// Derive returns a key for label (a use other than sealing, such as
// signing links) from each of the keyring's keys, current first: sign with
// the first, accept any, and a rotation keeps what the older keys signed
// valid while they stay in the keyring.
func (k *Keyring) Derive(label string) [][]byte {
	out := make([][]byte, len(k.keys))
	for i, x := range k.keys {
		out[i] = x.derived(label)
	}
	return out
}

// CurrentID is the ID of the key new values are sealed under.
func (k *Keyring) CurrentID() string { return k.keys[0].id }

// IDs lists the keyring's key IDs, current first.
func (k *Keyring) IDs() []string {
	ids := make([]string, len(k.keys))
	for i, x := range k.keys {
		ids[i] = x.id
	}
	return ids
}

// Seal encrypts plaintext under the current key with a fresh random nonce,
// binding aad (which is not stored: Open needs the same aad).
func (k *Keyring) Seal(plaintext, aad []byte) string {
	cur := k.keys[0]
	nonce := make([]byte, cur.aead.NonceSize(), cur.aead.NonceSize()+len(plaintext)+cur.aead.Overhead())
	if _, err := rand.Read(nonce); err != nil {
		panic("seal: crypto/rand failed: " + err.Error()) // never returns an error on supported platforms
	}
	out := cur.aead.Seal(nonce, nonce, plaintext, aad)
	return Prefix + cur.id + ":" + base64.RawURLEncoding.EncodeToString(out)
}

// Open decrypts a value made by Seal under any key of the keyring.
func (k *Keyring) Open(text string, aad []byte) ([]byte, error) {
	id, payload, err := split(text)
	if err != nil {
		return nil, err
	}
	for _, x := range k.keys {
		if x.id != id {
			continue
		}
		raw, err := base64.RawURLEncoding.DecodeString(payload)
		if err != nil || len(raw) < x.aead.NonceSize()+x.aead.Overhead() {
			return nil, ErrFormat
		}
		n := x.aead.NonceSize()
		pt, err := x.aead.Open(nil, raw[:n], raw[n:], aad)
		if err != nil {
			return nil, ErrTampered
		}
		return pt, nil
	}
	return nil, fmt.Errorf("key %s: %w", id, ErrUnknownKey)
}

// IsSealed reports whether s has the sealed-value prefix.
func IsSealed(s string) bool { return strings.HasPrefix(s, Prefix) }

// SealedKeyID returns the ID of the key s was sealed under.
func SealedKeyID(s string) (string, bool) {
	id, _, err := split(s)
	return id, err == nil
}

func split(text string) (id, payload string, err error) {
	rest, ok := strings.CutPrefix(text, Prefix)
	if !ok {
		return "", "", ErrFormat
	}
	id, payload, ok = strings.Cut(rest, ":")
	if !ok || id == "" || payload == "" {
		return "", "", ErrFormat
	}
	return id, payload, nil
}

// NewKey returns KeySize random bytes.
func NewKey() []byte {
	b := make([]byte, KeySize)
	if _, err := rand.Read(b); err != nil {
		panic("seal: crypto/rand failed: " + err.Error())
	}
	return b
}

// EncodeKey is a key's text form: standard base64.
func EncodeKey(raw []byte) string { return base64.StdEncoding.EncodeToString(raw) }

// ParseKeys reads keys from text: base64 keys (standard or URL alphabet,
// padded or not) separated by newlines, commas or spaces, current first.
// Lines starting with '#' are comments. Error messages never quote a key.
func ParseKeys(text string) ([][]byte, error) {
	var keys [][]byte
	for i, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "#") {
			continue
		}
		for _, f := range strings.FieldsFunc(line, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' || r == '\r' }) {
			raw, err := decodeKey(f)
			if err != nil {
				return nil, fmt.Errorf("line %d: %w", i+1, err)
			}
			keys = append(keys, raw)
		}
	}
	if len(keys) == 0 {
		return nil, ErrNoKeys
	}
	return keys, nil
}

func decodeKey(s string) ([]byte, error) {
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if raw, err := enc.DecodeString(s); err == nil {
			if len(raw) != KeySize {
				return nil, fmt.Errorf("a key decodes to %d bytes, want %d", len(raw), KeySize)
			}
			return raw, nil
		}
	}
	return nil, errors.New("a key is not base64 (want base64 of 32 random bytes, e.g. `openssl rand -base64 32`)")
}

// LoadKeyFile reads the keys in path (see ParseKeys). A file readable by
// group or others is refused: it holds every endpoint's secrets.
func LoadKeyFile(path string) ([][]byte, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("%s is readable by others (mode %04o): chmod 600 it", path, fi.Mode().Perm())
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	keys, err := ParseKeys(string(b))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return keys, nil
}

// WriteKeyFile replaces path with keys (current first), mode 0600, by
// writing a temporary file beside it and renaming it over: a crash leaves
// either the old file or the new one, never half of one.
func WriteKeyFile(path string, keys [][]byte) error {
	var buf bytes.Buffer
	buf.WriteString("# mcpmon secrets keys: the first seals, all open. Keep this file private and backed up;\n")
	buf.WriteString("# without it sealed endpoint headers and sinks cannot be read.\n")
	for _, k := range keys {
		buf.WriteString(EncodeKey(k))
		buf.WriteByte('\n')
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp) // no-op after the rename
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return err
	}
	if _, err := f.Write(buf.Bytes()); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// CreateKeyFile writes a new file at path holding one fresh key, mode 0600,
// and fails if path exists (two processes racing to create it cannot each
// seal under a different key).
func CreateKeyFile(path string) ([]byte, error) {
	raw := NewKey()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, err
	}
	_, err = fmt.Fprintf(f, "# mcpmon secrets key, generated on first start: the first key seals, all open.\n# Keep this file private and backed up; without it sealed endpoint headers and sinks cannot be read.\n%s\n", EncodeKey(raw))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
		return nil, err
	}
	return raw, nil
}
