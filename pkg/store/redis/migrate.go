// Migrate: from the one-slot layout (a single node, Sentinel, or a cluster
// under a tagged prefix) to the sharded layout on a Redis Cluster. Every
// key of the source is read once and written where the sharded layout
// keeps it (layout.go, docs/design/redis-cluster.md "Key → hash tag"):
// a key that names an endpoint goes whole to the endpoint's shard, an
// index over endpoints is split member by member over the shards, and the
// rest goes to the global tag. Every write is idempotent (HSET, ZADD,
// SADD, RESTORE … REPLACE), so a run interrupted anywhere is resumed by
// running it again: the checkpoint in the target (hash migrate under the
// global tag) holds the source's SCAN cursor per node, saved after each
// batch of keys is written, so a resumed run repeats at most one batch.
// The run ends with a count per record kind on both sides.

package redis

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"

	goredis "github.com/redis/go-redis/v9"

	"github.com/mcpmon/mcpmon/pkg/store"
)

// Migration errors.
var (
	// ErrTargetInUse: the target holds keys under its prefix that no
	// migration from this source wrote.
	ErrTargetInUse = errors.New("target holds data of another deployment")
	// ErrNotSharded: the target would not get the sharded layout (not a
	// cluster, or a prefix with a hash tag), or the source already has it.
	ErrNotSharded = errors.New("not a migration to the sharded layout")
	// ErrCountMismatch: a record kind counts differently on both sides.
	ErrCountMismatch = errors.New("count check failed")
	// ErrUnknownKey: a source key the layout table does not name; nothing
	// is guessed.
	ErrUnknownKey = errors.New("source key not in the layout")
)

// MigrateOptions configure Migrate.
type MigrateOptions struct {
	// FromPrefix and ToPrefix are the key prefixes (default DefaultPrefix);
	// ToPrefix must have no hash tag.
	FromPrefix, ToPrefix string
	// DryRun reads and counts the source only; the target is checked,
	// never written.
	DryRun bool
	// Batch is how many source keys are written between checkpoints
	// (default 500).
	Batch int
	// Progress, when set, is called after each checkpoint of the copy.
	Progress func(MigrateProgress)
}

// MigrateProgress is where a run stands.
type MigrateProgress struct {
	// Keys is how many source keys this run has copied (or counted).
	Keys int
}

// KindCount is one record kind's count on both sides.
type KindCount struct {
	Kind           string
	Source, Target int64
}

// MigrateReport is what a run did.
type MigrateReport struct {
	// Resumed: a checkpoint of an earlier run from this source was found.
	Resumed bool
	// Keys is how many source keys this run copied (counted, dry run).
	Keys int
	// Counts is the count check, by kind (Target 0 on a dry run).
	Counts []KindCount
}

// migrateKey is the checkpoint hash's name (under the global tag).
const migrateKey = "migrate"

// Migrate copies the one-slot layout at fromURL into the sharded layout at
// toURL, resuming a checkpoint of an earlier run from the same source, and
// checks the counts. Writers must be stopped first: keys written during a
// run may be missed by the scan. Errors never contain a URL.
func Migrate(ctx context.Context, fromURL, toURL string, opts MigrateOptions) (MigrateReport, error) {
	var rep MigrateReport
	opts.FromPrefix = cmp.Or(opts.FromPrefix, DefaultPrefix)
	opts.ToPrefix = cmp.Or(opts.ToPrefix, DefaultPrefix)
	if opts.Batch <= 0 {
		opts.Batch = 500
	}
	src, err := New(ctx, fromURL, Options{Prefix: opts.FromPrefix})
	if err != nil {
		return rep, fmt.Errorf("source: %w", err)
	}
	defer src.Close()
	if src.sharded {
		return rep, fmt.Errorf("%w: the source already has the sharded layout", ErrNotSharded)
	}
	dst, err := open(ctx, toURL, Options{Prefix: opts.ToPrefix}, false)
	if err != nil {
		return rep, fmt.Errorf("target: %w", err)
	}
	defer dst.Close()
	if !dst.sharded {
		return rep, fmt.Errorf("%w: the target must be a redis+cluster:// URL and its prefix have no {hash tag}", ErrNotSharded)
	}
	m := &migration{src: src, dst: dst, opts: opts, from: sourceID(fromURL, opts.FromPrefix)}
	if rep.Resumed, err = m.checkTarget(ctx); err != nil {
		return rep, err
	}
	if !opts.DryRun {
		if err := m.loadIncidents(ctx); err != nil {
			return rep, err
		}
	}
	if err := m.eachSourceKey(ctx, func(ctx context.Context, names []string) error {
		if opts.DryRun {
			return nil
		}
		return m.copyKeys(ctx, names)
	}, !opts.DryRun); err != nil {
		return rep, err
	}
	rep.Keys = m.keys
	if !opts.DryRun {
		if err := m.writeCounters(ctx); err != nil {
			return rep, err
		}
	}
	rep.Counts, err = m.countCheck(ctx)
	if err != nil {
		return rep, err
	}
	if opts.DryRun {
		return rep, nil
	}
	var off []string
	for _, c := range rep.Counts {
		if c.Source != c.Target {
			off = append(off, fmt.Sprintf("%s: %d in the source, %d in the target", c.Kind, c.Source, c.Target))
		}
	}
	if len(off) > 0 {
		return rep, fmt.Errorf("%w: %s", ErrCountMismatch, strings.Join(off, "; "))
	}
	err = dst.rdb.HSet(ctx, dst.k(migrateKey), "state", "done").Err()
	return rep, dst.done("finish the checkpoint", err)
}

// sourceID names the source in the checkpoint without its credentials:
// a hash of its hosts, database and prefix.
func sourceID(rawURL, prefix string) string {
	_, rest, _ := strings.Cut(rawURL, "://")
	authority, path, _ := strings.Cut(rest, "/")
	if i := strings.LastIndexByte(authority, '@'); i >= 0 {
		authority = authority[i+1:]
	}
	path, _, _ = strings.Cut(path, "?")
	h := sha256.Sum256([]byte(authority + "/" + path + "\x00" + prefix))
	return hex.EncodeToString(h[:8])
}

type migration struct {
	src, dst *Store
	opts     MigrateOptions
	from     string
	keys     int
	// incidentEP maps an incident ID to its endpoint (read from the
	// source's incidents hash): the shard of every incident index entry.
	incidentEP map[string]string
}

// checkTarget refuses a target with keys under its prefix unless they are
// a migration from this source; resumed reports that they are.
func (m *migration) checkTarget(ctx context.Context) (resumed bool, err error) {
	cp, err := m.dst.rdb.HGetAll(ctx, m.dst.k(migrateKey)).Result()
	if err := m.dst.done("read the checkpoint", err); err != nil {
		return false, err
	}
	if from, ok := cp["from"]; ok {
		if from != m.from {
			return false, fmt.Errorf("%w: a migration from another source (%s) wrote it; empty it or pick another --to-prefix", ErrTargetInUse, from)
		}
		return true, nil
	}
	any, err := m.targetHasKeys(ctx)
	if err != nil {
		return false, err
	}
	if any {
		return false, fmt.Errorf("%w: keys under prefix %q and no checkpoint of this source; empty it or pick another --to-prefix", ErrTargetInUse, m.dst.base)
	}
	if m.opts.DryRun {
		return false, nil
	}
	err = m.dst.rdb.HSet(ctx, m.dst.k(migrateKey), "from", m.from, "state", "running").Err()
	return false, m.dst.done("write the checkpoint", err)
}

func (m *migration) targetHasKeys(ctx context.Context) (bool, error) {
	var mu sync.Mutex
	found := false
	match := globEscape(m.dst.base) + "*"
	marker := m.dst.k(deploymentKey) // a process that started on the target (and was refused) is not data
	err := forEachNode(ctx, m.dst.rdb, func(ctx context.Context, c *goredis.Client) error {
		var cursor uint64
		for {
			keys, next, err := c.Scan(ctx, cursor, match, 1000).Result()
			if err != nil {
				return err
			}
			keys = slices.DeleteFunc(keys, func(k string) bool { return k == marker })
			if len(keys) > 0 {
				mu.Lock()
				found = true
				mu.Unlock()
				return nil
			}
			if next == 0 {
				return nil
			}
			cursor = next
		}
	})
	return found, m.dst.done("look at the target", err)
}

// forEachNode runs fn on every node that holds data: each primary of a
// cluster, else the one client.
func forEachNode(ctx context.Context, rdb goredis.UniversalClient, fn func(ctx context.Context, c *goredis.Client) error) error {
	switch c := rdb.(type) {
	case *goredis.ClusterClient:
		return c.ForEachMaster(ctx, fn)
	case *goredis.Client:
		return fn(ctx, c)
	}
	return fmt.Errorf("redis store: client %T has no nodes to scan", rdb)
}

// sourceNodes lists the source's nodes by address, in order.
func (m *migration) sourceNodes(ctx context.Context) ([]*goredis.Client, error) {
	var mu sync.Mutex
	var nodes []*goredis.Client
	err := forEachNode(ctx, m.src.rdb, func(_ context.Context, c *goredis.Client) error {
		mu.Lock()
		nodes = append(nodes, c)
		mu.Unlock()
		return nil
	})
	slices.SortFunc(nodes, func(a, b *goredis.Client) int { return strings.Compare(a.Options().Addr, b.Options().Addr) })
	return nodes, m.src.done("list the source's nodes", err)
}

// eachSourceKey scans the source's keys under its prefix in batches and
// hands fn their names (the key without the prefix). With checkpoint, the
// cursor of each node is resumed from and saved to the target after each
// batch fn handled.
func (m *migration) eachSourceKey(ctx context.Context, fn func(ctx context.Context, names []string) error, checkpoint bool) error {
	nodes, err := m.sourceNodes(ctx)
	if err != nil {
		return err
	}
	match := globEscape(m.src.p) + "*"
	for _, node := range nodes {
		field := "cursor:" + node.Options().Addr
		var cursor uint64
		if checkpoint {
			v, err := m.dst.rdb.HGet(ctx, m.dst.k(migrateKey), field).Result()
			switch {
			case errors.Is(err, goredis.Nil):
			case err != nil:
				return m.dst.done("read the checkpoint", err)
			case v == "done":
				continue
			default:
				if cursor, err = strconv.ParseUint(v, 10, 64); err != nil {
					return fmt.Errorf("redis store: checkpoint %s = %q: %w", field, v, err)
				}
			}
		}
		for {
			keys, next, err := node.Scan(ctx, cursor, match, int64(m.opts.Batch)).Result()
			if err := m.src.done("scan the source", err); err != nil {
				return err
			}
			names := make([]string, 0, len(keys))
			for _, k := range keys {
				names = append(names, strings.TrimPrefix(k, m.src.p))
			}
			if err := fn(ctx, names); err != nil {
				return err
			}
			m.keys += len(names)
			if checkpoint {
				v := strconv.FormatUint(next, 10)
				if next == 0 {
					v = "done"
				}
				if err := m.dst.done("save the checkpoint", m.dst.rdb.HSet(ctx, m.dst.k(migrateKey), field, v).Err()); err != nil {
					return err
				}
			}
			if checkpoint && m.opts.Progress != nil {
				m.opts.Progress(MigrateProgress{Keys: m.keys})
			}
			if next == 0 {
				break
			}
			cursor = next
		}
	}
	return nil
}

// globEscape quotes SCAN MATCH's special characters.
func globEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[]\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// loadIncidents reads every incident's endpoint from the source.
func (m *migration) loadIncidents(ctx context.Context) error {
	m.incidentEP = map[string]string{}
	var cursor uint64
	for {
		kv, next, err := m.src.rdb.HScan(ctx, m.src.k("incidents"), cursor, "", 1000).Result()
		if err := m.src.done("read the source's incidents", err); err != nil {
			return err
		}
		for i := 0; i+1 < len(kv); i += 2 {
			var inc struct {
				EndpointID string `json:"endpointId"`
			}
			if err := json.Unmarshal([]byte(kv[i+1]), &inc); err != nil || inc.EndpointID == "" {
				return fmt.Errorf("redis store: incident %s: no endpoint in its record", kv[i])
			}
			m.incidentEP[kv[i]] = inc.EndpointID
		}
		if next == 0 {
			return nil
		}
		cursor = next
	}
}

// A placement says where a source key's data goes.
type placement struct {
	// whole: the key goes as it is to shard (global when global).
	whole  bool
	global bool
	shard  int
	// split: each field or member goes to the shard elemShard returns.
	elemShard func(elem string) (int, error)
	// derived: not copied; the target's counterpart is computed
	// (writeCounters).
	derived bool
}

// Key families of the one-slot layout, by their first name segment.
var (
	byEndpointElem = []string{"endpoints", "endpoint_versions", "endpoint_tenants", "latest", "latest_slot",
		"last_verdict", "last_verdict_window", "trackers", "tracker_versions", "outboxes_pending",
		"tenant_endpoints", "tenant_endpoint_ids"}
	byIncidentElem = []string{"incidents", "incident_versions", "incident_tenants", "incidents_open",
		"incidents_by_opened", "incidents_by_tenant"}
	// whole keys named <family>:<endpoint>[:...]
	byEndpointName = []string{"window_results", "verdicts", "object_regions", "incidents_by_endpoint",
		"events", "event", "event_fp", "events_seq", "events_flap"}
	globalFamilies = []string{"object_tenants", "tenant_objects", "objects_stamp", "audit", "audit_seq", "tenant_quota"}
	// endpoint_shard_stamps: the one-slot layout's per-shard endpoints
	// stamps, which the sharded layout keeps as each shard's endpoints_stamp.
	// deployment: the marker (deployment.go), set by writeCounters.
	derived = []string{"endpoint_ids_indexed", "endpoints_stamp", "endpoint_shard_stamps", "incidents_stamp", deploymentKey}
)

// place decides where the source key name goes.
func (m *migration) place(name string) (placement, error) {
	family, rest, _ := strings.Cut(name, ":")
	epShard := func(ep string) (int, error) {
		if ep == "" {
			return 0, fmt.Errorf("%w: %q names no endpoint", ErrUnknownKey, name)
		}
		return shardOf(ep), nil
	}
	switch {
	case slices.Contains(derived, family):
		return placement{derived: true}, nil
	case slices.Contains(globalFamilies, family):
		return placement{whole: true, global: true}, nil
	case slices.Contains(byEndpointElem, family):
		return placement{elemShard: epShard}, nil
	case slices.Contains(byIncidentElem, family):
		return placement{elemShard: m.incidentShard}, nil
	case family == "windows": // "<windowMs>|<endpoint>"
		return placement{elemShard: func(e string) (int, error) { _, ep, _ := strings.Cut(e, "|"); return epShard(ep) }}, nil
	case family == "events_pending": // "<eventID>|<endpoint>"
		return placement{elemShard: func(e string) (int, error) {
			i := strings.LastIndexByte(e, '|')
			return epShard(e[i+1:])
		}}, nil
	case family == "objects":
		if proberKind(rest) {
			return placement{elemShard: func(id string) (int, error) { ep, _ := store.SplitProberObjectID(id); return epShard(ep) }}, nil
		}
		return placement{whole: true, global: true}, nil
	case slices.Contains(byEndpointName, family):
		ep, _, _ := strings.Cut(rest, ":")
		sh, err := epShard(ep)
		return placement{whole: true, shard: sh}, err
	case family == "rollup": // rollup:<res>:<endpoint>:<start>
		parts := strings.Split(rest, ":")
		if len(parts) != 3 {
			return placement{}, fmt.Errorf("%w: %q", ErrUnknownKey, name)
		}
		sh, err := epShard(parts[1])
		return placement{whole: true, shard: sh}, err
	case family == "deliveries":
		sh, err := m.incidentShard(rest)
		return placement{whole: true, shard: sh}, err
	case family == "ledger":
		return placement{whole: true, shard: shardOf(rest)}, nil
	}
	return placement{}, fmt.Errorf("%w: %q", ErrUnknownKey, name)
}

// incidentShard is the shard of the incident's endpoint; an ID no record
// holds (an index entry left behind) falls back to the endpoint the ID
// names.
func (m *migration) incidentShard(id string) (int, error) {
	if ep, ok := m.incidentEP[id]; ok {
		return shardOf(ep), nil
	}
	if eps := incidentEndpoints(id); len(eps) > 0 {
		return shardOf(eps[0]), nil
	}
	return 0, fmt.Errorf("%w: incident %q names no endpoint and has no record", ErrUnknownKey, id)
}

// target is the target key of name in shard (or the global tag).
func (m *migration) target(p placement, sh int, name string) string {
	if p.global {
		return m.dst.k(name)
	}
	return m.dst.ks(sh, name)
}

// copyKeys writes one batch of source keys to the target.
func (m *migration) copyKeys(ctx context.Context, names []string) error {
	for _, name := range names {
		p, err := m.place(name)
		if err != nil {
			return err
		}
		switch {
		case p.derived:
		case p.whole:
			err = m.copyWhole(ctx, name, m.target(p, p.shard, name))
		default:
			err = m.split(ctx, name, p)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// copyWhole copies one key with its TTL (DUMP, RESTORE … REPLACE).
func (m *migration) copyWhole(ctx context.Context, name, to string) error {
	from := m.src.p + name
	dump, err := m.src.rdb.Dump(ctx, from).Result()
	if errors.Is(err, goredis.Nil) {
		return nil // expired since the scan
	}
	if err := m.src.done("read "+name, err); err != nil {
		return err
	}
	ttl, err := m.src.rdb.PTTL(ctx, from).Result()
	if err := m.src.done("read the TTL of "+name, err); err != nil {
		return err
	}
	if ttl < 0 {
		ttl = 0 // no expiry (-1), or gone meanwhile (-2): keep it
	}
	return m.dst.done("write "+name, m.dst.rdb.RestoreReplace(ctx, to, ttl, dump).Err())
}

// split copies a hash, set or sorted set element by element to each
// element's shard, and lists every endpoint of endpoint_tenants in its
// tenant's quota set (the sharded layout's count of a tenant's endpoints).
func (m *migration) split(ctx context.Context, name string, p placement) error {
	from := m.src.p + name
	typ, err := m.src.rdb.Type(ctx, from).Result()
	if err := m.src.done("read the type of "+name, err); err != nil {
		return err
	}
	var cursor uint64
	for {
		var elems []string
		var next uint64
		switch typ {
		case "hash":
			elems, next, err = m.src.rdb.HScan(ctx, from, cursor, "", 1000).Result()
		case "zset":
			elems, next, err = m.src.rdb.ZScan(ctx, from, cursor, "", 1000).Result()
		case "set":
			elems, next, err = m.src.rdb.SScan(ctx, from, cursor, "", 1000).Result()
		case "none":
			return nil // gone since the scan
		default:
			return fmt.Errorf("%w: %q is a %s, want a hash, set or sorted set", ErrUnknownKey, name, typ)
		}
		if err := m.src.done("read "+name, err); err != nil {
			return err
		}
		step := 2
		if typ == "set" {
			step = 1
		}
		shards := make([]int, len(elems))
		for i := 0; i+step-1 < len(elems); i += step {
			if shards[i], err = p.elemShard(elems[i]); err != nil {
				return err
			}
		}
		_, err = m.dst.rdb.Pipelined(ctx, func(pl goredis.Pipeliner) error {
			for i := 0; i+step-1 < len(elems); i += step {
				to := m.dst.ks(shards[i], name)
				switch typ {
				case "hash":
					pl.HSet(ctx, to, elems[i], elems[i+1])
					if name == "endpoint_tenants" {
						pl.ZAdd(ctx, m.dst.quotaSet(elems[i+1]), goredis.Z{Score: 0, Member: elems[i]})
					}
				case "zset":
					score, _ := strconv.ParseFloat(elems[i+1], 64) // ZSCAN's own rendering of a score
					pl.ZAdd(ctx, to, goredis.Z{Score: score, Member: elems[i]})
				case "set":
					pl.SAdd(ctx, to, elems[i])
				}
			}
			return nil
		})
		if err := m.dst.done("write "+name, err); err != nil {
			return err
		}
		if next == 0 {
			return nil
		}
		cursor = next
	}
}

// writeCounters sets the counters the sharded layout keeps per shard:
// endpoint_ids_indexed (how many of the shard's endpoints its ID indexes
// hold, all of them after a copy) and endpoints_stamp (bumped, so a
// cached endpoint list is read again), and incidents_stamp (bumped, so a
// subscriber sweep walks the copied incidents).
func (m *migration) writeCounters(ctx context.Context) error {
	cmds, err := perShard(ctx, m.dst, "count the copied endpoints", func(p goredis.Pipeliner, sh int) *goredis.IntCmd {
		return p.HLen(ctx, m.dst.ks(sh, "endpoint_tenants"))
	})
	if err != nil {
		return err
	}
	// The deployment moves with its data: the target holds the source's
	// marker (over a lone one a refused start left), so the time it was
	// created (mcpmon_store_created_timestamp_seconds) does not jump as
	// after a loss.
	marker, err := m.src.rdb.Get(ctx, m.src.k(deploymentKey)).Result()
	if err := m.src.done("read the deployment marker", err); err != nil && !errors.Is(err, goredis.Nil) {
		return err
	}
	_, err = m.dst.rdb.Pipelined(ctx, func(p goredis.Pipeliner) error {
		if marker != "" {
			p.Set(ctx, m.dst.k(deploymentKey), marker, 0)
		}
		for sh, c := range cmds {
			p.Set(ctx, m.dst.ks(sh, "endpoint_ids_indexed"), c.Val(), 0)
			p.Incr(ctx, m.dst.ks(sh, "endpoints_stamp"))
			p.Incr(ctx, m.dst.ks(sh, "incidents_stamp"))
		}
		return nil
	})
	return m.dst.done("write the shards' counters", err)
}

// kindOf is the record kind a key name counts under: its family, with
// the document kind for objects.
func kindOf(name string) string {
	family, rest, _ := strings.Cut(name, ":")
	if family == "objects" {
		return family + ":" + rest
	}
	return family
}

// countCheck counts each record kind (hash fields, set and sorted set
// members, one per string) on both sides; the target only for the kinds
// the source has, and not the derived counters.
func (m *migration) countCheck(ctx context.Context) ([]KindCount, error) {
	src := map[string]int64{}
	m.keys = 0
	if err := m.eachSourceKey(ctx, func(ctx context.Context, names []string) error {
		keys := make([]string, len(names))
		for i, n := range names {
			keys[i] = m.src.p + n
		}
		return countKeys(ctx, m.src, m.src.rdb, keys, names, src)
	}, false); err != nil {
		return nil, err
	}
	for _, k := range derived {
		delete(src, k)
	}
	dst := map[string]int64{}
	if !m.opts.DryRun {
		if err := m.countTarget(ctx, dst); err != nil {
			return nil, err
		}
	}
	out := make([]KindCount, 0, len(src))
	for _, k := range slices.Sorted(maps.Keys(src)) {
		out = append(out, KindCount{Kind: k, Source: src[k], Target: dst[k]})
	}
	return out, nil
}

// countTarget counts the target's keys by kind, node by node.
func (m *migration) countTarget(ctx context.Context, into map[string]int64) error {
	var mu sync.Mutex
	match := globEscape(m.dst.base) + "*"
	err := forEachNode(ctx, m.dst.rdb, func(ctx context.Context, c *goredis.Client) error {
		local := map[string]int64{}
		var cursor uint64
		for {
			keys, next, err := c.Scan(ctx, cursor, match, int64(m.opts.Batch)).Result()
			if err != nil {
				return err
			}
			var full, names []string
			for _, k := range keys {
				// base + "{tag}:" + name
				if _, name, ok := strings.Cut(strings.TrimPrefix(k, m.dst.base), "}:"); ok {
					full, names = append(full, k), append(names, name)
				}
			}
			if err := countKeys(ctx, m.dst, c, full, names, local); err != nil {
				return err
			}
			if next == 0 {
				break
			}
			cursor = next
		}
		mu.Lock()
		for k, n := range local {
			into[k] += n
		}
		mu.Unlock()
		return nil
	})
	return m.dst.done("count the target", err)
}

// countKeys adds the element counts of keys (named names) to into by kind.
func countKeys(ctx context.Context, s *Store, c goredis.Cmdable, keys, names []string, into map[string]int64) error {
	if len(keys) == 0 {
		return nil
	}
	types := make([]*goredis.StatusCmd, len(keys))
	_, err := c.Pipelined(ctx, func(p goredis.Pipeliner) error {
		for i, k := range keys {
			types[i] = p.Type(ctx, k)
		}
		return nil
	})
	if err := s.done("count keys", err); err != nil {
		return err
	}
	counts := make([]*goredis.IntCmd, len(keys))
	_, err = c.Pipelined(ctx, func(p goredis.Pipeliner) error {
		for i, k := range keys {
			switch types[i].Val() {
			case "hash":
				counts[i] = p.HLen(ctx, k)
			case "zset":
				counts[i] = p.ZCard(ctx, k)
			case "set":
				counts[i] = p.SCard(ctx, k)
			case "list":
				counts[i] = p.LLen(ctx, k)
			case "string":
				counts[i] = p.Exists(ctx, k)
			}
		}
		return nil
	})
	if err := s.done("count keys", err); err != nil {
		return err
	}
	for i, n := range names {
		if counts[i] != nil {
			into[kindOf(n)] += counts[i].Val()
		}
	}
	return nil
}
