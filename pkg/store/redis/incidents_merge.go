// ListIncidents over every shard: each shard's index (incidents_by_opened
// or the tenant's incidents_by_tenant) is read a page at a time, only as
// far as the merge needs, and the pages are merged in ListIncidents'
// order (opened window newest first, ties by ID descending).

package redis

import (
	"cmp"
	"context"
	"strings"

	goredis "github.com/redis/go-redis/v9"

	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/store"
)

// mergePage is how many index entries a shard's cursor reads at a time.
const mergePage = 200

// shardCursor walks one shard's index from the filter's cursor down.
type shardCursor struct {
	sh   int
	buf  []goredis.Z
	next int64 // offset of the next page
	done bool
}

// newer orders index entries as ListIncidents returns them.
func newer(a, b goredis.Z) int {
	am, _ := a.Member.(string)
	bm, _ := b.Member.(string)
	return cmp.Or(cmp.Compare(b.Score, a.Score), strings.Compare(bm, am))
}

func (s *Store) listIncidentsMerged(ctx context.Context, f store.IncidentFilter) ([]model.Incident, error) {
	index := func(sh int) string {
		if f.Tenant != "" {
			return s.tenantIncidents(sh, f.Tenant)
		}
		return s.ks(sh, "incidents_by_opened")
	}
	maxScore := "+inf"
	if f.After != nil {
		maxScore = ms(f.After.OpenedWindow)
	}
	by := func(c *shardCursor) *goredis.ZRangeBy {
		return &goredis.ZRangeBy{Min: "-inf", Max: maxScore, Offset: c.next, Count: mergePage}
	}
	took := func(c *shardCursor, page []goredis.Z) {
		c.buf, c.next, c.done = page, c.next+int64(len(page)), len(page) < mergePage
	}
	// The first page of every shard in one pipeline; later pages of a
	// shard only when the merge has used up its previous one.
	first, err := perShard(ctx, s, "list incidents", func(p goredis.Pipeliner, sh int) *goredis.ZSliceCmd {
		return p.ZRevRangeByScoreWithScores(ctx, index(sh), by(&shardCursor{}))
	})
	if err != nil {
		return nil, err
	}
	cursors := make([]*shardCursor, len(first))
	for i, c := range first {
		cursors[i] = &shardCursor{sh: s.shards()[i]}
		took(cursors[i], c.Val())
	}
	out := []model.Incident{}
	for {
		// The next batch in merged order, then its records by shard.
		var batch []string
		var from []int
		for len(batch) < mergePage {
			var best *shardCursor
			for _, c := range cursors {
				if len(c.buf) == 0 && !c.done {
					page, err := s.rdb.ZRevRangeByScoreWithScores(ctx, index(c.sh), by(c)).Result()
					if err := s.done("list incidents", err); err != nil {
						return nil, err
					}
					took(c, page)
				}
				if len(c.buf) > 0 && (best == nil || newer(c.buf[0], best.buf[0]) < 0) {
					best = c
				}
			}
			if best == nil {
				break
			}
			id, _ := best.buf[0].Member.(string)
			batch, from = append(batch, id), append(from, best.sh)
			best.buf = best.buf[1:]
		}
		if len(batch) == 0 {
			return out, nil
		}
		incs, err := s.incidentsByShard(ctx, batch, from)
		if err != nil {
			return nil, err
		}
		for _, id := range batch {
			inc, ok := incs[id]
			if !ok || !f.Match(inc) {
				continue
			}
			out = append(out, inc)
			if f.Full(len(out)) {
				return out, nil
			}
		}
	}
}

// incidentsByShard reads the incidents ids (ids[i] in shard from[i]), one
// HMGET per shard, leaving out those gone since they were listed.
func (s *Store) incidentsByShard(ctx context.Context, ids []string, from []int) (map[string]model.Incident, error) {
	byShard := map[int][]string{}
	for i, id := range ids {
		byShard[from[i]] = append(byShard[from[i]], id)
	}
	out := make(map[string]model.Incident, len(ids))
	for sh, ids := range byShard {
		incs, err := hmgetJSON[model.Incident](ctx, s, s.ks(sh, "incidents"), ids, "list incidents", "incident")
		if err != nil {
			return nil, err
		}
		for _, inc := range incs {
			out[inc.ID] = inc
		}
	}
	return out, nil
}
