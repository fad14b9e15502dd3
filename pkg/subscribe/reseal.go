package subscribe

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/seal"
	"github.com/mcpmon/mcpmon/pkg/store"
)

// Keyring is the sealing keyring a rotation re-seals under (seal.Keyring).
type Keyring interface {
	Sealer
	CurrentID() string
	Derive(label string) [][]byte
}

// ResealStore is what Reseal needs from the store.
type ResealStore interface {
	KeyStore
	ListObjects(ctx context.Context, kind string) (map[string][]byte, error)
	SwapObject(ctx context.Context, kind, id string, old, doc []byte) error
}

// Resealed says what Reseal did.
type Resealed struct {
	// Subscribers is how many subscriber records were rewritten.
	Subscribers int
	// Unopened lists the subscribers with a field that does not open
	// under the keyring (sealed under a key already removed): they are
	// sent nothing until that key is back, and are left as they are.
	Unopened []string
}

// Reseal is the subscriptions' part of `mcpmon secrets rotate`. First it
// keeps in the stored link keys every key kr derives for links, so the
// IDs and links made under them stay valid once those sealing keys leave
// the keyring, and re-seals the list under kr's current key. Then it
// re-seals every subscriber's sealed fields (an e-mail address; a
// webhook's URL and secret) that are plaintext or under an older key, and
// rewrites Masked from the opened value. seed is what LinkKeys is given if
// the list does not exist yet: the link key of the keyring the running
// replicas use.
//
// Records are versionless, so each is written with SwapObject, only
// while it is still the document read (else read and looked at again): a
// subscriber a replica confirms or deletes meanwhile is never put back as
// it was. It is idempotent: interrupted, it can simply be run again.
func Reseal(ctx context.Context, st ResealStore, kr Keyring, owner string, seed []byte) (Resealed, error) {
	var out Resealed
	if err := adoptLinkKeys(ctx, st, kr, owner, seed); err != nil {
		return out, err
	}
	docs, err := st.ListObjects(ctx, store.KindSubscriber)
	if err != nil {
		return out, err
	}
	for _, id := range slices.Sorted(maps.Keys(docs)) {
		doc := docs[id]
		for attempt := 1; ; attempt++ {
			sub, err := model.DecodeSubscriber(doc)
			if err != nil {
				break // not a record this can re-seal
			}
			next, err := resealSubscriber(kr, sub)
			if err != nil {
				out.Unopened = append(out.Unopened, id)
				break
			}
			if next == sub {
				break
			}
			b, err := json.Marshal(next)
			if err != nil {
				return out, err
			}
			err = st.SwapObject(ctx, store.KindSubscriber, id, doc, b)
			if err == nil {
				out.Subscribers++
				break
			}
			if errors.Is(err, model.ErrNotFound) {
				break // deleted meanwhile
			}
			if !errors.Is(err, store.ErrConflict) {
				return out, fmt.Errorf("reseal subscriber %s: %w", id, err)
			}
			if attempt == 5 {
				return out, fmt.Errorf("reseal subscriber %s: it keeps changing; run rotate again", id)
			}
			// Written meanwhile: re-seal what is there now.
			if doc, err = st.GetObject(ctx, store.KindSubscriber, id); errors.Is(err, model.ErrNotFound) {
				break
			} else if err != nil {
				return out, err
			}
		}
	}
	return out, nil
}

// adoptLinkKeys adds kr's derived link keys to the stored list and
// re-seals it under kr's current key.
func adoptLinkKeys(ctx context.Context, st KeyStore, kr Keyring, owner string, seed []byte) error {
	keys, err := LinkKeys(ctx, st, kr, owner, seed)
	if err != nil {
		return fmt.Errorf("link keys: %w", err)
	}
	for _, k := range kr.Derive(KeyLabel) {
		if !slices.ContainsFunc(keys, func(x []byte) bool { return bytes.Equal(x, k) }) {
			keys = append(keys, k)
		}
	}
	if err := writeKeys(ctx, st, kr, keys); err != nil {
		return fmt.Errorf("link keys: %w", err)
	}
	return nil
}

// resealSubscriber returns sub with its sealed fields under kr's current
// key and Masked made from the opened values; sub itself when nothing
// changes.
func resealSubscriber(kr Keyring, sub model.Subscriber) (model.Subscriber, error) {
	stale := func(v string) bool {
		id, ok := seal.SealedKeyID(v)
		return !ok || id != kr.CurrentID()
	}
	next := sub
	if sub.KindOrEmail() == model.SubscriberWebhook {
		url, err := openField(kr, sub.ID, "url", sub.URL)
		if err != nil {
			return sub, err
		}
		secret, err := openField(kr, sub.ID, "secret", sub.Secret)
		if err != nil {
			return sub, err
		}
		if stale(sub.URL) || (sub.Secret != "" && stale(sub.Secret)) {
			next = SealWebhook(kr, sub, url, secret)
		}
		next.Masked = model.SecretURL(url).Origin()
		return next, nil
	}
	if sub.Address == "" {
		return sub, nil
	}
	addr, err := openAddress(kr, sub)
	if err != nil {
		return sub, err
	}
	if stale(sub.Address) {
		next.Address = sealAddress(kr, sub.ID, addr)
	}
	next.Masked = model.MaskEmail(addr)
	return next, nil
}
