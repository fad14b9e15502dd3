package redis_test

import (
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/mcpmon/mcpmon/pkg/clock"
	"github.com/mcpmon/mcpmon/pkg/store/redis"
	"github.com/mcpmon/mcpmon/pkg/store/redis/redistest"
	"github.com/mcpmon/mcpmon/pkg/store/storetest"
	"github.com/mcpmon/mcpmon/pkg/testpeers"
)

// BenchmarkRollupBytesPerEndpointDay folds one endpoint's day of one-minute
// verdicts and reports what Redis says (MEMORY USAGE) its 24 hourly and one
// daily rollup hashes take.
func BenchmarkRollupBytesPerEndpointDay(b *testing.B) {
	url := testpeers.RedisURL(b)
	day := storetest.Start.Truncate(24 * time.Hour)
	o, err := goredis.ParseURL(url)
	if err != nil {
		b.Fatal(err)
	}
	c := goredis.NewClient(o)
	defer c.Close()
	var size int64
	for b.Loop() {
		prefix := redistest.RandomPrefix()
		clk := clock.NewFake(day)
		s, err := redis.New(b.Context(), url, redis.Options{Prefix: prefix, Clock: clk, LeasesOnClock: true})
		if err != nil {
			b.Fatal(err)
		}
		for _, v := range storetest.RollupDay("ep", day) {
			clk.Set(v.Window.Add(70 * time.Second))
			if _, err := s.RecordVerdict(b.Context(), v); err != nil {
				b.Fatal(err)
			}
		}
		keys, err := c.Keys(b.Context(), prefix+"rollup:*").Result()
		if err != nil {
			b.Fatal(err)
		}
		size = 0
		for _, k := range keys {
			n, err := c.MemoryUsage(b.Context(), k).Result()
			if err != nil {
				b.Fatal(err)
			}
			size += n
		}
		_ = s.Close()
		redistest.Flush(b, url, prefix)
	}
	b.ReportMetric(float64(size), "rollup-B/endpoint/day")
}
