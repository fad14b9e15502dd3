package store

import (
	"context"
	"time"

	"github.com/mcpmon/mcpmon/pkg/model"
)

// Rollups reads the rollups of the verdicts RecordVerdict applies
// (model.FoldVerdict): as if each were folded as it was applied, whenever
// a store folds them (bbolt folds its history an hour at a time).
type Rollups interface {
	// Rollups returns the endpoint's buckets of size (model.Hourly or
	// model.Daily) whose start is in [from, to) and still kept
	// (model.RollupKept), oldest first; buckets without any verdict are
	// absent. Empty, not nil, if none.
	Rollups(ctx context.Context, endpointID string, size time.Duration, from, to time.Time) ([]model.Rollup, error)
}
