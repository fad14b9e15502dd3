// The audit log: one sorted set per tenant, audit:<tenant>, scored by the
// entry's time in microseconds, member "<seq as 16 hex digits>|<entry
// JSON>" with seq from the counter audit_seq:<tenant>. The sequence makes
// identical entries distinct members and orders entries of the same
// microsecond by append (members of one score sort by bytes). Retention is
// decided on the injected clock: an append trims the tenant's set by score
// in the same script, and a list never reads below now-TTL; PEXPIRE only
// collects the set of a tenant that stopped writing.

package redis

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/mcpmon/mcpmon/pkg/store"
)

// appendAudit: KEYS audit:<tenant>, audit_seq:<tenant>; ARGV score (µs),
// entry JSON, cutoff score (µs; lower scores are removed), PX ms. Returns
// the entry's sequence number.
var appendAudit = goredis.NewScript(`
local seq = redis.call('INCR', KEYS[2])
redis.call('ZADD', KEYS[1], ARGV[1], string.format('%016x', seq) .. '|' .. ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', '(' .. ARGV[3])
redis.call('PEXPIRE', KEYS[1], ARGV[4])
redis.call('PEXPIRE', KEYS[2], ARGV[4])
return seq`)

func us(t time.Time) string { return strconv.FormatInt(t.UnixMicro(), 10) }

// AppendAudit stores e and trims the tenant's expired entries; see
// store.Audit.
func (s *Store) AppendAudit(ctx context.Context, e store.AuditEntry) error {
	if err := store.ValidAuditEntry(e); err != nil {
		return fmt.Errorf("redis store: %w", err)
	}
	e.Time, e.ID = e.Time.UTC(), "" // the ID is derived from the member on read
	raw, err := encode(e)
	if err != nil {
		return err
	}
	cutoff := s.clk.Now().Add(-s.auditTTL)
	err = appendAudit.Run(ctx, s.rdb, []string{s.k("audit", e.Tenant), s.k("audit_seq", e.Tenant)},
		us(e.Time), raw, us(cutoff), s.auditTTL.Milliseconds()).Err()
	return s.done("append audit entry of tenant "+e.Tenant, err)
}

// ListAudit returns the tenant's entries newest first; see store.Audit.
func (s *Store) ListAudit(ctx context.Context, f store.AuditFilter) ([]store.AuditEntry, error) {
	from, until := store.AuditWindow(f, s.clk.Now(), s.auditTTL)
	by := &goredis.ZRangeBy{Min: us(from), Max: "+inf", Count: int64(store.AuditLimit(f))}
	if !until.IsZero() {
		by.Max = "(" + us(until)
	}
	op := "list audit of tenant " + f.Tenant
	members, err := s.rdb.ZRevRangeByScore(ctx, s.k("audit", f.Tenant), by).Result()
	if err := s.done(op, err); err != nil {
		return nil, err
	}
	out := make([]store.AuditEntry, 0, len(members))
	for _, m := range members {
		hex, raw, ok := strings.Cut(m, "|")
		seq, perr := strconv.ParseUint(hex, 16, 64)
		if !ok || perr != nil {
			return nil, fmt.Errorf("redis store: %s: malformed member", op)
		}
		e, err := decode[store.AuditEntry]("audit entry of tenant "+f.Tenant, raw)
		if err != nil {
			return nil, err
		}
		e.ID = store.AuditID(e.Time, seq)
		out = append(out, e)
	}
	return out, nil
}
