package subscribe

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/mcpmon/mcpmon/pkg/clock"
	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/store"
)

// PageSubscribers is what deleting a page's subscribers needs from the
// store.
type PageSubscribers interface {
	ListObjectsOf(ctx context.Context, kind, tenant string) (map[string][]byte, error)
	DeleteObject(ctx context.Context, kind, id string) error
}

// DeletePageSubscribers deletes every subscriber of page, e-mail and
// webhook, and returns how many. The caller deletes the page first: a
// crash or an error in between leaves subscribers of a page that is gone,
// which Prune deletes; the other order could leave a live page that has
// lost its subscribers, or let a subscribe land between the two.
func DeletePageSubscribers(ctx context.Context, st PageSubscribers, page string) (int, error) {
	docs, err := st.ListObjectsOf(ctx, store.KindSubscriber, page)
	if err != nil {
		return 0, fmt.Errorf("subscribers of page %s: %w", page, err)
	}
	n := 0
	for id := range docs {
		if err := st.DeleteObject(ctx, store.KindSubscriber, id); err != nil && !errors.Is(err, model.ErrNotFound) {
			return n, fmt.Errorf("delete subscriber %s of page %s: %w", id, page, err)
		}
		n++
	}
	return n, nil
}

// PruneStore is what Prune needs from the store.
type PruneStore interface {
	ListObjects(ctx context.Context, kind string) (map[string][]byte, error)
	DeleteObject(ctx context.Context, kind, id string) error
}

// Pruned counts what one Prune deleted.
type Pruned struct {
	// Expired: pending subscribers whose confirmation link expired.
	Expired int
	// Orphaned: subscribers (of any kind) whose status page is gone.
	Orphaned int
}

// Prune deletes the subscribers nobody is owed anything for: pending
// ones whose link expired at now, and those of a page that no longer
// exists (left by a page deletion that failed or crashed half-way, or by
// a subscribe racing the deletion).
//
// The subscribers are listed before the pages, so a subscriber is called
// an orphan only if its page was missing after the subscriber was already
// stored: a page created after the first listing has no subscriber in it,
// and a page listed second existed when its subscribers did. A page that
// does not decode still counts as existing: its subscribers wait rather
// than being deleted for a bug.
func Prune(ctx context.Context, st PruneStore, now time.Time) (Pruned, error) {
	var p Pruned
	docs, err := st.ListObjects(ctx, store.KindSubscriber)
	if err != nil {
		return p, err
	}
	pages, err := st.ListObjects(ctx, store.KindStatusPage)
	if err != nil {
		return p, err
	}
	for id, doc := range docs {
		sub, err := model.DecodeSubscriber(doc)
		if err != nil {
			continue
		}
		_, live := pages[sub.Page]
		if live && !sub.Expired(now) {
			continue
		}
		if err := st.DeleteObject(ctx, store.KindSubscriber, id); err != nil && !errors.Is(err, model.ErrNotFound) {
			return p, err
		}
		if live {
			p.Expired++
		} else {
			p.Orphaned++
		}
	}
	return p, nil
}

// RunPrune prunes every interval until ctx is done.
func RunPrune(ctx context.Context, st PruneStore, clk clock.Clock, log *slog.Logger, interval time.Duration) error {
	log = log.With("component", "subscribe")
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		switch p, err := Prune(ctx, st, clk.Now()); {
		case err != nil && ctx.Err() == nil:
			log.Warn("prune subscribers", "err", err)
		case p != Pruned{}:
			log.Info("dropped subscribers", "never_confirmed", p.Expired, "page_deleted", p.Orphaned)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}
