// Package status owns mcpmon's public side: the status pages, their JSON,
// feeds and the README badges of the endpoints their owners mark public
// with a slug (model.Endpoint.Public, Slug), and the tenants' status pages
// (model.StatusPage) that group those endpoints. Nothing here needs an API
// key.
//
// Data enters from the store through Reader, at most once per endpoint per
// TTL: a Cache holds each public endpoint's rendered HTML, JSON, SVG and
// feed with their ETags, and a slug index (with the status pages, their
// hosts and the tenants' maintenance windows), so a request for a fresh
// slug (or an unknown one) reads nothing from the store. Build turns what was read into a Page holding
// public fields only (no URL, header, address, raw error text or internal
// ID); BuildStatusPage makes a tenant's page out of its endpoints' Pages.
// The templates, CSS, badge and feeds are rendered from those models
// alone, so nothing private can reach a response by a template mistake.
// Data leaves as HTTP responses from Handler and from Hosts (a page at the
// root of its custom host, once the host is proven), with Cache-Control and a strong ETag, and 304
// on If-None-Match.
package status

import (
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"log/slog"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mcpmon/mcpmon/pkg/clock"
	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/msg"
	"github.com/mcpmon/mcpmon/pkg/store"
)

// Reader is what the public side reads; both store backends implement it.
type Reader interface {
	ListEndpoints(ctx context.Context) ([]model.Endpoint, error)
	LastVerdict(ctx context.Context, endpointID string) (msg.Verdict, error)
	LatestResult(ctx context.Context, endpointID string) (msg.ProbeResult, error)
	ListIncidents(ctx context.Context, f store.IncidentFilter) ([]model.Incident, error)
	Rollups(ctx context.Context, endpointID string, size time.Duration, from, to time.Time) ([]model.Rollup, error)
	// ListObjects is read for store.KindStatusPage and
	// store.KindMaintenance only: every tenant's status pages and
	// maintenance windows, once per TTL with the slug index.
	ListObjects(ctx context.Context, kind string) (map[string][]byte, error)
}

// ErrNotFound: no public endpoint or status page has the slug (or no
// page has the host).
var ErrNotFound = errors.New("no public status page")

// DefaultTTL is how long a rendered page is served before the store is read
// again: verdict windows are a minute by default, so a fresher page would
// mostly re-render the same window.
const DefaultTTL = 30 * time.Second

// BadgeLabel is the left half of every badge.
const BadgeLabel = "mcp"

//go:embed templates/*.html templates/style.css
var files embed.FS

var (
	css   = template.CSS(mustRead("templates/style.css"))
	pages = template.Must(template.New("").Funcs(template.FuncMap{"ms": msText, "feed": FeedPath}).ParseFS(files, "templates/*.html"))
)

func mustRead(name string) string {
	b, err := files.ReadFile(name)
	if err != nil {
		panic(err)
	}
	return string(b)
}

func msText(d time.Duration) string {
	if d <= 0 {
		return "no data"
	}
	return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', 0, 64) + " ms"
}

// Options configure NewCache. Store is required.
type Options struct {
	Store  Reader
	Clock  clock.Clock   // default wall time
	TTL    time.Duration // default DefaultTTL
	Logger *slog.Logger
	// PublicIndex serves GET /status, the list of every public endpoint
	// of the deployment; off, it is 404 like an unknown slug.
	PublicIndex bool
	// Subscribe shows a subscription form on each tenant's status page,
	// posting to /status/{slug}/subscribe (pkg/subscribe): set when the
	// deployment sends subscriber mail.
	Subscribe bool
	// UnverifiedHosts serves a page at / of its custom host whether or not
	// the host is proven (--status-page-host-verification=false, for a
	// single-tenant deployment); otherwise only a verified or
	// grandfathered host is (model.StatusPage.ServesHost).
	UnverifiedHosts bool
}

// Rendered is one public endpoint's four representations, and its
// conformance badge when the page has a conformance line.
type Rendered struct {
	Page                                  Page
	HTML, JSON, SVG, Feed                 []byte
	ETagHTML, ETagJSON, ETagSVG, ETagFeed string
	// ConformanceSVG is nil without Page.Conformance.
	ConformanceSVG     []byte
	ETagConformanceSVG string
	built              time.Time
	turns              time.Time // Page.turns: stale from then on, whatever the TTL
}

type toolsSeen struct {
	fingerprint string
	changed     time.Time
}

// Cache renders public pages and keeps them for TTL.
type Cache struct {
	st  Reader
	clk clock.Clock
	ttl time.Duration
	log *slog.Logger
	// publicIndex, subscribe: Options.PublicIndex, Options.Subscribe.
	publicIndex, subscribe bool
	// hostProof: a custom host is served only once proven
	// (!Options.UnverifiedHosts).
	hostProof bool

	// refresh serialises store reads: concurrent misses for one slug read
	// once, and a burst of misses cannot fan out into a burst of reads.
	refresh sync.Mutex

	mu       sync.RWMutex
	index    map[string]model.Endpoint // slug → public endpoint
	indexAt  time.Time                 // when index, pageIndex and hostIndex were read
	entries  map[string]*Rendered
	overview *Rendered
	tools    map[string]toolsSeen

	pageIndex   map[string]model.StatusPage // slug → status page
	hostIndex   map[string]string           // HostName → page slug, for the hosts a page may serve
	pageEntries map[string]*RenderedPage
	// windows are each tenant's maintenance windows (by model.TenantOf),
	// read with the index.
	windows map[string][]model.Maintenance
}

// NewCache returns an empty cache; it panics without a Store (wiring bug).
func NewCache(o Options) *Cache {
	if o.Store == nil {
		panic("status.NewCache: Options.Store is required")
	}
	if o.Clock == nil {
		o.Clock = clock.Real{}
	}
	if o.TTL <= 0 {
		o.TTL = DefaultTTL
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return &Cache{st: o.Store, clk: o.Clock, ttl: o.TTL, log: o.Logger.With("component", "status"), publicIndex: o.PublicIndex, subscribe: o.Subscribe,
		hostProof: !o.UnverifiedHosts,
		entries:   map[string]*Rendered{}, tools: map[string]toolsSeen{}, pageEntries: map[string]*RenderedPage{}}
}

func (c *Cache) fresh(t time.Time, now time.Time) bool { return !t.IsZero() && now.Sub(t) < c.ttl }

// cached is a rendering the cache keeps: when it was built, and when the
// clock alone turns it stale (zero: only the TTL does).
type cached interface {
	builtAt() time.Time
	turnsAt() time.Time
}

// live reports whether r may be served at now: within the TTL, and before
// a maintenance span it shows ends or one it does not show starts, so the
// state "maintenance" is neither served after its end nor missed at its
// start for up to a TTL.
func (c *Cache) live(r cached, now time.Time) bool {
	t := r.turnsAt()
	return c.fresh(r.builtAt(), now) && (t.IsZero() || now.Before(t))
}

// Get returns the slug's rendered page, reading the store only when the
// cached one is older than the TTL. ErrNotFound for a slug no public
// endpoint has. A store failure serves the stale page if there is one.
func (c *Cache) Get(ctx context.Context, slug string) (*Rendered, error) {
	return lookup(ctx, c, c.entries, c.index, slug, c.getLocked)
}

// lookup is the read path both kinds of page share: the cached entry while
// it is fresh, ErrNotFound for a slug the fresh index does not hold (no
// store read), else load under c.refresh, which serialises the refreshes.
func lookup[E cached, I any](ctx context.Context, c *Cache, entries map[string]E, index map[string]I, slug string,
	load func(ctx context.Context, slug string, now time.Time) (E, error)) (E, error) {
	now := c.clk.Now()
	c.mu.RLock()
	r, ok := entries[slug]
	_, known := index[slug]
	indexFresh := c.fresh(c.indexAt, now)
	c.mu.RUnlock()
	if ok && c.live(r, now) {
		return r, nil
	}
	if !known && indexFresh {
		var none E
		return none, ErrNotFound
	}
	c.refresh.Lock()
	defer c.refresh.Unlock()
	return load(ctx, slug, now)
}

func (r *Rendered) builtAt() time.Time { return r.built }
func (r *Rendered) turnsAt() time.Time { return r.turns }

func (c *Cache) getLocked(ctx context.Context, slug string, now time.Time) (*Rendered, error) {
	c.mu.RLock()
	r, ok := c.entries[slug]
	c.mu.RUnlock()
	if ok && c.live(r, now) {
		return r, nil // another request refreshed it while this one waited
	}
	if err := c.loadIndex(ctx, now); err != nil {
		if ok {
			c.log.Warn("serving a stale status page", "slug", slug, "err", err)
			return r, nil
		}
		return nil, err
	}
	c.mu.RLock()
	ep, known := c.index[slug]
	c.mu.RUnlock()
	if !known {
		return nil, ErrNotFound
	}
	nr, err := c.build(ctx, ep, now)
	if err != nil {
		if ok {
			c.log.Warn("serving a stale status page", "slug", slug, "err", err)
			return r, nil
		}
		return nil, err
	}
	c.mu.Lock()
	c.entries[slug] = nr
	c.mu.Unlock()
	return nr, nil
}

// loadIndex re-reads the public endpoints, the status pages and the
// maintenance windows when the index is older than the TTL, and drops
// rendered pages of slugs that are no longer public and of status pages
// whose document changed.
func (c *Cache) loadIndex(ctx context.Context, now time.Time) error {
	c.mu.RLock()
	fresh := c.fresh(c.indexAt, now)
	c.mu.RUnlock()
	if fresh {
		return nil
	}
	all, err := c.st.ListEndpoints(ctx)
	if err != nil {
		return fmt.Errorf("list public endpoints: %w", err)
	}
	docs, err := c.st.ListObjects(ctx, store.KindStatusPage)
	if err != nil {
		return fmt.Errorf("list status pages: %w", err)
	}
	sps := make([]model.StatusPage, 0, len(docs))
	for id, doc := range docs {
		sp, err := model.DecodeStatusPage(doc)
		if err != nil {
			// One unreadable document must not take every page down.
			c.log.Warn("skipping a status page", "id", id, "err", err)
			continue
		}
		sps = append(sps, sp)
	}
	mdocs, err := c.st.ListObjects(ctx, store.KindMaintenance)
	if err != nil {
		return fmt.Errorf("list maintenance windows: %w", err)
	}
	windows := map[string][]model.Maintenance{}
	for _, id := range slices.Sorted(maps.Keys(mdocs)) {
		m, err := model.DecodeMaintenance(mdocs[id])
		if err != nil {
			c.log.Warn("skipping a maintenance window", "id", id, "err", err)
			continue
		}
		t := model.TenantOf(m.Tenant)
		windows[t] = append(windows[t], m)
	}
	idx := PublicIndex(all)
	bySlug, byHost := PagesIndex(sps, c.hostProof)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.index, c.pageIndex, c.hostIndex, c.windows, c.indexAt = idx, bySlug, byHost, windows, now
	for slug, r := range c.entries {
		if ep, ok := idx[slug]; !ok || ep.ID != r.Page.id {
			delete(c.entries, slug)
		}
	}
	for slug, r := range c.pageEntries {
		if sp, ok := bySlug[slug]; !ok || !reflect.DeepEqual(sp, r.source) {
			delete(c.pageEntries, slug)
		}
	}
	return nil
}

// PublicIndex maps each slug to its public endpoint. Slugs are unique
// (the API checks before writing), but the check is not atomic with the
// write: two endpoints that won a race for one slug resolve to the oldest,
// then the lowest ID, so the page never flips between them.
func PublicIndex(all []model.Endpoint) map[string]model.Endpoint {
	idx := make(map[string]model.Endpoint)
	for _, e := range all {
		if !e.Public || e.Slug == "" {
			continue
		}
		if o, dup := idx[e.Slug]; dup && (o.CreatedAt.Before(e.CreatedAt) || o.CreatedAt.Equal(e.CreatedAt) && o.ID < e.ID) {
			continue
		}
		idx[e.Slug] = e
	}
	return idx
}

// build reads one endpoint's data and renders it.
func (c *Cache) build(ctx context.Context, ep model.Endpoint, now time.Time) (*Rendered, error) {
	c.mu.RLock()
	windows := c.windows[model.TenantOf(ep.Tenant)]
	c.mu.RUnlock()
	in := Input{Endpoint: ep, Maintenance: windows, Now: now}
	var err error
	in.Last, err = c.st.LastVerdict(ctx, ep.ID)
	switch {
	case err == nil:
		in.HasLast = true
	case !errors.Is(err, model.ErrNotFound):
		return nil, fmt.Errorf("last verdict of %s: %w", ep.Slug, err)
	}
	in.Latest, err = c.st.LatestResult(ctx, ep.ID)
	switch {
	case err == nil:
		in.HasLatest = true
	case !errors.Is(err, model.ErrNotFound):
		return nil, fmt.Errorf("latest result of %s: %w", ep.Slug, err)
	}
	to := now.UTC().Truncate(model.Daily).Add(model.Daily)
	if in.Daily, err = c.st.Rollups(ctx, ep.ID, model.Daily, to.Add(-Days*model.Daily), to); err != nil {
		return nil, fmt.Errorf("rollups of %s: %w", ep.Slug, err)
	}
	if in.Incidents, err = c.st.ListIncidents(ctx, store.IncidentFilter{EndpointID: ep.ID}); err != nil {
		return nil, fmt.Errorf("incidents of %s: %w", ep.Slug, err)
	}
	in.ToolsChanged = c.toolsChanged(ep.Slug, in)
	p := Build(in)
	p.id = ep.ID
	p.IndexLink = c.publicIndex
	return Render(p)
}

// toolsChanged remembers the catalog fingerprint per slug and returns when
// it last changed: the latest probe's start when it carries a
// catalog_changed event or a fingerprint this process saw change.
func (c *Cache) toolsChanged(slug string, in Input) time.Time {
	if !in.HasLatest || in.Latest.CatalogFingerprint == "" {
		return c.tools[slug].changed
	}
	prev, seen := c.tools[slug]
	cur := toolsSeen{fingerprint: in.Latest.CatalogFingerprint, changed: prev.changed}
	if seen && prev.fingerprint != cur.fingerprint {
		cur.changed = in.Latest.StartedAt.UTC()
	}
	for _, ev := range in.Latest.Events {
		if ev.Kind == "catalog_changed" && cur.changed.Before(in.Latest.StartedAt) {
			cur.changed = in.Latest.StartedAt.UTC()
		}
	}
	c.tools[slug] = cur
	return cur.changed
}

// Render renders p's page, JSON, badge and feed with their ETags: the last
// verdict window (for the feed, its updated time) and a digest of the
// body, so the tag changes exactly when what a reader would see does.
func Render(p Page) (*Rendered, error) {
	r := &Rendered{Page: p, built: p.Generated, turns: p.turns}
	var b strings.Builder
	if err := pages.ExecuteTemplate(&b, "page", struct {
		Page
		CSS template.CSS
	}{p, css}); err != nil {
		return nil, fmt.Errorf("render status page %s: %w", p.Slug, err)
	}
	r.HTML = []byte(b.String())
	j, err := json.Marshal(JSONOf(p))
	if err != nil {
		return nil, err
	}
	r.JSON = append(j, '\n')
	r.SVG = Badge(BadgeLabel, p)
	feed, updated, err := renderFeed(p)
	if err != nil {
		return nil, err
	}
	r.Feed = feed
	r.ETagHTML, r.ETagJSON, r.ETagSVG = etag(p.Since, r.HTML), etag(p.Since, r.JSON), etag(p.Since, r.SVG)
	r.ETagFeed = etag(updated, r.Feed)
	if p.Conformance != nil {
		r.ConformanceSVG = ConformanceBadge(*p.Conformance)
		r.ETagConformanceSVG = etag(p.Since, r.ConformanceSVG)
	}
	return r, nil
}

func etag(window time.Time, body []byte) string {
	sum := sha256.Sum256(body)
	return `"` + strconv.FormatInt(window.Unix(), 36) + "-" + hex.EncodeToString(sum[:12]) + `"`
}

// JSONView is GET /status/{slug}.json: a small fixed public shape.
type JSONView struct {
	Slug  string `json:"slug"`
	Name  string `json:"name"`
	State string `json:"state"` // up, degraded, down, regional, no_data, paused, pending, maintenance
	// StateText is the state in words; Sentence the page's headline.
	StateText string     `json:"stateText"`
	Sentence  string     `json:"sentence"`
	Since     *time.Time `json:"since"` // the last verdict's window
	// MaintenanceUntil is when the maintenance ends, with state
	// "maintenance"; null otherwise.
	MaintenanceUntil *time.Time `json:"maintenanceUntil"`
	// ScheduledMaintenance are the spans of maintenance starting within
	// ScheduledAhead, soonest first: times only.
	ScheduledMaintenance []SpanJSON `json:"scheduledMaintenance"`
	// Uptime ratios in [0, 1]; null when the range has no data.
	Uptime30d      *float64   `json:"uptime30d"`
	Uptime90d      *float64   `json:"uptime90d"`
	LatencyP50Ms   *float64   `json:"latencyP50Ms"`
	LatencyP95Ms   *float64   `json:"latencyP95Ms"`
	ToolCount      *int       `json:"toolCount"`
	ToolsChangedAt *time.Time `json:"toolsChangedAt"`
	OpenIncident   bool       `json:"openIncident"`
	Incidents90d   int        `json:"incidents90d"`
	// Incidents are the last Days days' incidents, newest first, each
	// with its owner's updates.
	Incidents []IncidentJSON `json:"incidents"`
	UpdatedAt time.Time      `json:"updatedAt"`
	// Conformance is present only when the owner opted in
	// (model.Endpoint.PublicConformance).
	Conformance *ConformanceJSON `json:"conformance,omitempty"`
}

// SpanJSON is one span of maintenance of the public JSON.
type SpanJSON struct {
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
}

// spansJSON is spans as the public JSON shows them, [] for none.
func spansJSON(spans []model.MaintenanceSpan) []SpanJSON {
	out := make([]SpanJSON, 0, len(spans))
	for _, sp := range spans {
		out = append(out, SpanJSON{Start: sp.Start, End: sp.End})
	}
	return out
}

// IncidentJSON is one incident of the public JSON.
type IncidentJSON struct {
	Start           time.Time    `json:"start"`
	End             *time.Time   `json:"end"` // null while ongoing
	Ongoing         bool         `json:"ongoing"`
	DurationSeconds int64        `json:"durationSeconds"`
	Cause           string       `json:"cause"`
	Updates         []UpdateJSON `json:"updates"` // newest first
}

// UpdateJSON is one owner's update of the public JSON.
type UpdateJSON struct {
	At      time.Time `json:"at"`
	Status  string    `json:"status"`
	Message string    `json:"message"`
}

// JSONOf is p's public JSON.
func JSONOf(p Page) JSONView {
	v := JSONView{Slug: p.Slug, Name: p.Name, State: p.State, StateText: p.StateWord, Sentence: p.Sentence,
		ScheduledMaintenance: spansJSON(p.Scheduled),
		Incidents90d:         p.Incidents90, UpdatedAt: p.Generated, Conformance: conformanceJSON(p.Conformance)}
	if !p.Since.IsZero() {
		v.Since = &p.Since
	}
	if !p.MaintenanceUntil.IsZero() {
		v.MaintenanceUntil = &p.MaintenanceUntil
	}
	if p.Uptime30.Measured {
		v.Uptime30d = &p.Uptime30.Value
	}
	if p.Uptime90.Measured {
		v.Uptime90d = &p.Uptime90.Value
	}
	if p.P50 > 0 {
		x, y := ms(p.P50), ms(p.P95)
		v.LatencyP50Ms, v.LatencyP95Ms = &x, &y
	}
	if p.HasTools {
		v.ToolCount = &p.ToolCount
	}
	if !p.ToolsChanged.IsZero() {
		v.ToolsChangedAt = &p.ToolsChanged
	}
	v.Incidents = make([]IncidentJSON, 0, len(p.Incidents))
	for _, inc := range p.Incidents {
		v.OpenIncident = v.OpenIncident || inc.Ongoing
		v.Incidents = append(v.Incidents, incidentJSON(inc))
	}
	return v
}

// incidentJSON is one incident row as the public JSON shows it.
func incidentJSON(inc IncidentRow) IncidentJSON {
	ij := IncidentJSON{Start: inc.Start, Ongoing: inc.Ongoing, DurationSeconds: int64(inc.Duration / time.Second),
		Cause: inc.Cause, Updates: make([]UpdateJSON, 0, len(inc.Updates))}
	if !inc.Ongoing {
		end := inc.End
		ij.End = &end
	}
	for _, u := range inc.Updates {
		ij.Updates = append(ij.Updates, UpdateJSON{At: u.At, Status: u.Status, Message: u.Message})
	}
	return ij
}

func ms(d time.Duration) float64 {
	return float64(d.Round(100*time.Microsecond)) / float64(time.Millisecond)
}

// Overview returns the page listing every public endpoint, rebuilt at most
// once per TTL from the endpoints' own cached pages.
func (c *Cache) Overview(ctx context.Context) (*Rendered, error) {
	now := c.clk.Now()
	c.mu.RLock()
	ov := c.overview
	c.mu.RUnlock()
	if ov != nil && c.live(ov, now) {
		return ov, nil
	}
	c.refresh.Lock()
	defer c.refresh.Unlock()
	c.mu.RLock()
	ov = c.overview
	c.mu.RUnlock()
	if ov != nil && c.live(ov, now) {
		return ov, nil
	}
	if err := c.loadIndex(ctx, now); err != nil {
		if ov != nil {
			return ov, nil
		}
		return nil, err
	}
	c.mu.RLock()
	slugs := make([]string, 0, len(c.index))
	for s := range c.index {
		slugs = append(slugs, s)
	}
	c.mu.RUnlock()
	list := make([]Page, 0, len(slugs))
	for _, s := range slugs {
		r, err := c.getLocked(ctx, s, now)
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			if ov != nil {
				return ov, nil
			}
			return nil, err
		}
		list = append(list, r.Page)
	}
	nr, err := RenderOverview(list, now)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.overview = nr
	c.mu.Unlock()
	return nr, nil
}

// RenderOverview renders the list of public endpoints, by name.
func RenderOverview(list []Page, now time.Time) (*Rendered, error) {
	slices.SortFunc(list, func(a, b Page) int {
		if c := strings.Compare(strings.ToLower(a.Name), strings.ToLower(b.Name)); c != 0 {
			return c
		}
		return strings.Compare(a.Slug, b.Slug)
	})
	bad := 0
	var turns time.Time
	for _, p := range list {
		if problem(p.State) {
			bad++
		}
		turns = earliest(turns, p.turns)
	}
	state, sentence := "up", fmt.Sprintf("All %d public endpoints are operational.", len(list))
	switch maint := inMaintenance(list); {
	case bad == 0 && maint > 0:
		state, sentence = StateMaintenance, fmt.Sprintf("No problems; %d of %d public endpoints %s under planned maintenance.", maint, len(list), isAre(maint))
	case len(list) == 0:
		state, sentence = "no_data", "No endpoints are public."
	case bad == 1:
		state, sentence = "down", fmt.Sprintf("1 of %d public endpoints has a problem.", len(list))
	case bad > 1:
		state, sentence = "down", fmt.Sprintf("%d of %d public endpoints have problems.", bad, len(list))
	}
	var b strings.Builder
	err := pages.ExecuteTemplate(&b, "overview", map[string]any{
		"CSS": css, "Pages": list, "State": state, "Sentence": sentence, "Generated": now.UTC(),
	})
	if err != nil {
		return nil, fmt.Errorf("render status overview: %w", err)
	}
	r := &Rendered{HTML: []byte(b.String()), built: now, turns: turns}
	r.ETagHTML = etag(now.Truncate(time.Minute), r.HTML)
	return r, nil
}
