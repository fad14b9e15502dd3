package status

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/mcpmon/mcpmon/pkg/model"
)

// StatusPage returns the rendered status page of slug, reading the store
// only when the cached one is older than the TTL: the page's document
// comes with the slug index, and each of its endpoints is the endpoint's
// own cached page. ErrNotFound for a slug no status page has. A store
// failure serves the stale page if there is one.
func (c *Cache) StatusPage(ctx context.Context, slug string) (*RenderedPage, error) {
	return lookup(ctx, c, c.pageEntries, c.pageIndex, slug, c.statusPageLocked)
}

// PageOf returns the document of the status page served at
// /status/{slug}, from the slug index, read from the store at most once a
// TTL for every caller (the subscription routes, which anyone may call,
// find their page here, never in a store listing of their own).
// ErrNotFound for a slug no status page has. A store failure with an index
// read before answers from that index.
func (c *Cache) PageOf(ctx context.Context, slug string) (model.StatusPage, error) {
	return fromIndex(ctx, c, func() (model.StatusPage, bool) { sp, ok := c.pageIndex[slug]; return sp, ok })
}

// fromIndex answers read (under c.mu) from the cached index, loading it
// first (under c.refresh, once for every waiting caller) when it is older
// than the TTL. ErrNotFound when read finds nothing; a failed load with a
// stale index answers from the stale one.
func fromIndex[T any](ctx context.Context, c *Cache, read func() (T, bool)) (T, error) {
	now := c.clk.Now()
	c.mu.RLock()
	v, known := read()
	indexFresh := c.fresh(c.indexAt, now)
	c.mu.RUnlock()
	if !indexFresh {
		c.refresh.Lock()
		err := c.loadIndex(ctx, now)
		c.mu.RLock()
		v, known = read()
		c.mu.RUnlock()
		c.refresh.Unlock()
		if err != nil && !known {
			var none T
			return none, err
		}
	}
	if !known {
		var none T
		return none, ErrNotFound
	}
	return v, nil
}

func (r *RenderedPage) builtAt() time.Time { return r.built }
func (r *RenderedPage) turnsAt() time.Time { return r.turns }

// HostPage returns the status page whose custom host is host (any form a
// Host header takes). ErrNotFound when no page may serve it (PagesIndex:
// none has it, or its page has not proven it), answered from the
// cached index while it is fresh, so an unknown Host costs no store read.
func (c *Cache) HostPage(ctx context.Context, host string) (*RenderedPage, error) {
	h := HostName(host)
	if h == "" {
		return nil, ErrNotFound
	}
	slug, err := fromIndex(ctx, c, func() (string, bool) { s, ok := c.hostIndex[h]; return s, ok })
	if err != nil {
		return nil, err
	}
	return c.StatusPage(ctx, slug)
}

func (c *Cache) statusPageLocked(ctx context.Context, slug string, now time.Time) (*RenderedPage, error) {
	c.mu.RLock()
	r, ok := c.pageEntries[slug]
	c.mu.RUnlock()
	if ok && c.live(r, now) {
		return r, nil
	}
	stale := func(err error) (*RenderedPage, error) {
		if ok {
			c.log.Warn("serving a stale status page", "page", slug, "err", err)
			return r, nil
		}
		return nil, err
	}
	if err := c.loadIndex(ctx, now); err != nil {
		return stale(err)
	}
	c.mu.RLock()
	sp, known := c.pageIndex[slug]
	eps := c.publicEndpoints()
	c.mu.RUnlock()
	if !known {
		return nil, ErrNotFound
	}
	members := sp.Members(eps)
	groups := make([][]Page, len(members))
	for i, g := range members {
		for _, ep := range g {
			er, err := c.getLocked(ctx, ep.Slug, now)
			if errors.Is(err, ErrNotFound) {
				continue
			}
			if err != nil {
				return stale(err)
			}
			groups[i] = append(groups[i], er.Page)
		}
	}
	v := BuildStatusPage(PageInput{Page: sp, Groups: groups, Now: now})
	v.Subscribe = c.subscribe
	nr, err := RenderStatusPage(v)
	if err != nil {
		return stale(err)
	}
	nr.source = sp
	c.mu.Lock()
	c.pageEntries[slug] = nr
	c.mu.Unlock()
	return nr, nil
}

// publicEndpoints are the index's endpoints (each its slug's holder) in
// the order a group lists them: by name, then slug. c.mu must be held.
func (c *Cache) publicEndpoints() []model.Endpoint {
	out := make([]model.Endpoint, 0, len(c.index))
	for _, ep := range c.index {
		out = append(out, ep)
	}
	slices.SortFunc(out, func(a, b model.Endpoint) int {
		if d := strings.Compare(strings.ToLower(a.Name), strings.ToLower(b.Name)); d != 0 {
			return d
		}
		return strings.Compare(a.Slug, b.Slug)
	})
	return out
}
