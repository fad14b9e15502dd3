package alerter

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/store"
)

// Store migrations the alerter owns. Each runs once per store, at start
// (RunMigrations, called by the process assembly beside the alerter's
// loops), and leaves a marker object that makes every later start skip
// it. Sweep never migrates, so the alerter's Store needs no raw object
// access.

// MigrationStore is what the migrations need from pkg/store.
type MigrationStore interface {
	GetTracker(ctx context.Context, endpointID string) (model.Tracker, error)
	SaveTracker(ctx context.Context, t model.Tracker, incidents ...model.Incident) error
	GetObject(ctx context.Context, kind, id string) ([]byte, error)
	PutObject(ctx context.Context, kind, id string, doc []byte) error
	ListObjects(ctx context.Context, kind string) (map[string][]byte, error)
	DeleteObject(ctx context.Context, kind, id string) error
}

// outboxIndexMigration is the marker ID (kind store.KindMigrations) of the
// move from store.KindLegacyOutbox to the store's pending-outbox index.
const outboxIndexMigration = "outbox-index-v1"

// RunMigrations runs the alerter's migrations, retrying every interval
// (<= 0: DefaultSweepInterval) while the store fails, until they are done
// or ctx is. A store unreachable at start is waited for, not a failed
// start; the sweeps meanwhile serve what the store's index already lists.
func RunMigrations(ctx context.Context, st MigrationStore, log *slog.Logger, interval time.Duration) error {
	if interval <= 0 {
		interval = DefaultSweepInterval
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	log = log.With("component", "alerter")
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		err := MigrateOutboxIndex(ctx, st, log)
		switch {
		case err == nil || ctx.Err() != nil:
			return nil
		case errors.Is(err, store.ErrUnavailable):
			log.Debug("store migration waits for the store", "err", err)
		default:
			log.Warn("store migration", "err", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// outboxIndexMarker is the marker MigrateOutboxIndex leaves.
type outboxIndexMarker struct {
	Moved int `json:"moved"`
}

// MigrateOutboxIndex moves what a store written by a release before the
// pending-outbox index lists in its own index into the store's: each
// tracker it names is saved again with its pending count (a tracker saved
// by this release since needs nothing), then the object is deleted.
// Without it a notification waiting in an outbox across the upgrade (a
// sink down, a maintenance deferral) would never be swept. It does nothing
// once its marker is stored; a run cut short is finished by the next.
func MigrateOutboxIndex(ctx context.Context, st MigrationStore, log *slog.Logger) error {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	switch _, err := st.GetObject(ctx, store.KindMigrations, outboxIndexMigration); {
	case err == nil:
		return nil
	case !errors.Is(err, model.ErrNotFound):
		return fmt.Errorf("alerter: read migration marker %s: %w", outboxIndexMigration, err)
	}
	docs, err := st.ListObjects(ctx, store.KindLegacyOutbox)
	if err != nil {
		return fmt.Errorf("alerter: list legacy outbox index: %w", err)
	}
	for id := range docs {
		t, err := st.GetTracker(ctx, id)
		switch {
		case errors.Is(err, model.ErrNotFound):
		case err != nil:
			return fmt.Errorf("alerter: tracker of endpoint %s: %w", id, err)
		default:
			d, err := decodeData[trackerData](t.Data, "tracker "+id)
			if err != nil {
				return err
			}
			if len(d.Outbox) > 0 && t.Pending == 0 {
				setTrackerData(&t, d)
				if err := st.SaveTracker(ctx, t); err != nil && !errors.Is(err, store.ErrConflict) {
					// A conflict means this release saved it meanwhile.
					return fmt.Errorf("alerter: index outbox of endpoint %s: %w", id, err)
				}
			}
		}
		if err := st.DeleteObject(ctx, store.KindLegacyOutbox, id); err != nil && !errors.Is(err, model.ErrNotFound) {
			return fmt.Errorf("alerter: delete legacy outbox index entry %s: %w", id, err)
		}
	}
	doc, err := json.Marshal(outboxIndexMarker{Moved: len(docs)})
	if err != nil {
		return err
	}
	if err := st.PutObject(ctx, store.KindMigrations, outboxIndexMigration, doc); err != nil {
		return fmt.Errorf("alerter: write migration marker %s: %w", outboxIndexMigration, err)
	}
	if len(docs) > 0 {
		log.Info("outboxes listed by the previous release's index moved to the store's index", "endpoints", len(docs))
	}
	return nil
}
