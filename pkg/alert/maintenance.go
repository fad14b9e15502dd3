package alert

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"

	"github.com/mcpmon/mcpmon/pkg/model"
)

// WindowSource is the part of a store the window cache reads: a tenant's
// maintenance documents (store.Objects.ListObjectsOf) and the stamp that
// changes with each write of them (store.Objects.ObjectsStamp).
type WindowSource interface {
	ListObjectsOf(ctx context.Context, kind, tenant string) (map[string][]byte, error)
	ObjectsStamp(ctx context.Context, kind, tenant string) (uint64, error)
}

// Windows keeps each tenant's maintenance windows decoded, re-reading a
// tenant's documents only when its stamp has moved: a decision costs one
// stamp read, and a change costs one decode of that tenant's windows, never
// another tenant's. The alerter's gate and the aggregator's rollups each
// hold one.
type Windows struct {
	src WindowSource
	log *slog.Logger

	mu       sync.Mutex
	byTenant map[string]tenantWindows
}

type tenantWindows struct {
	stamp uint64
	ms    []model.Maintenance
}

// NewWindows returns a cache over src; log receives the windows that do
// not decode (skipped).
func NewWindows(src WindowSource, log *slog.Logger) *Windows {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Windows{src: src, log: log, byTenant: map[string]tenantWindows{}}
}

// Of returns tenant's windows ("" is DefaultTenant), ordered by ID. The
// slice is shared: callers must not modify it. When the store cannot be
// read it returns the tenant's last decoded windows (nil if none) with
// the error, for a caller that would rather go on with them. The stamp is
// read before
// the documents, so a write between the two reads leaves the cache one
// stamp behind and the next call reads again; it never keeps an old list
// under a new stamp.
func (w *Windows) Of(ctx context.Context, tenant string) ([]model.Maintenance, error) {
	if tenant == "" {
		tenant = model.DefaultTenant
	}
	w.mu.Lock()
	c, ok := w.byTenant[tenant]
	w.mu.Unlock()
	stamp, err := w.src.ObjectsStamp(ctx, model.MaintenanceKind, tenant)
	if err != nil {
		return c.ms, fmt.Errorf("maintenance windows of tenant %s: %w", tenant, err)
	}
	if ok && c.stamp == stamp {
		return c.ms, nil
	}
	docs, err := w.src.ListObjectsOf(ctx, model.MaintenanceKind, tenant)
	if err != nil {
		return c.ms, fmt.Errorf("maintenance windows of tenant %s: %w", tenant, err)
	}
	ms := make([]model.Maintenance, 0, len(docs))
	for _, id := range slices.Sorted(maps.Keys(docs)) {
		m, err := model.DecodeMaintenance(docs[id])
		if err != nil {
			w.log.Warn("unreadable maintenance window skipped", "maintenance", id, "err", err)
			continue
		}
		ms = append(ms, m)
	}
	w.mu.Lock()
	w.byTenant[tenant] = tenantWindows{stamp: stamp, ms: ms}
	w.mu.Unlock()
	return ms, nil
}
