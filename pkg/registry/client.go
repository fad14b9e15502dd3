// Package registry imports remote MCP servers listed in an MCP Registry
// (the official one at registry.modelcontextprotocol.io or any registry that
// serves the same v0.1 API) as mcpmon endpoints.
//
// Data enters through Client.List (GET /v0.1/servers, page by page with the
// registry's opaque cursor, optionally only entries updated since a time),
// is turned into desired endpoints by the pure functions Desire and
// MakePlan, and leaves through the consumer-side Endpoints interface
// (mcpmon's own API client implements it) in Apply. Only endpoints carrying
// the importer's source label are ever updated or removed; a user's own
// endpoints are outside every selector the importer lists with.
package registry

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// Registry API limits and defaults.
const (
	// DefaultPageSize is what the client asks for per page; the official
	// registry caps limit at 100.
	DefaultPageSize = 100
	// DefaultMaxPageBytes bounds one page's response body. A page of 100
	// servers is typically well under 1 MiB; more means the URL is not
	// a registry or something is wrong.
	DefaultMaxPageBytes = 8 << 20
	// DefaultMaxPages bounds one listing (100 × 2000 = 200k entries).
	DefaultMaxPages = 2000
	// listPath is the v0.1 list endpoint under the base URL.
	listPath = "/v0.1/servers"
)

// Status values of the registry's official metadata.
const (
	StatusActive     = "active"
	StatusDeprecated = "deprecated"
	StatusDeleted    = "deleted"
)

// officialMetaKey is the _meta member the registry itself manages.
const officialMetaKey = "io.modelcontextprotocol.registry/official"

// ServerResponse is one entry of GET /v0.1/servers: the published
// server.json (Server) and the registry-managed metadata (Meta).
type ServerResponse struct {
	Server ServerDetail `json:"server"`
	Meta   ResponseMeta `json:"_meta"`
}

// ResponseMeta is the registry-managed _meta of a ServerResponse.
type ResponseMeta struct {
	Official *OfficialMeta `json:"io.modelcontextprotocol.registry/official,omitempty"`
}

// OfficialMeta is io.modelcontextprotocol.registry/official.
type OfficialMeta struct {
	Status      string    `json:"status,omitempty"` // active | deprecated | deleted
	PublishedAt time.Time `json:"publishedAt,omitzero"`
	UpdatedAt   time.Time `json:"updatedAt,omitzero"`
	IsLatest    bool      `json:"isLatest"`
}

// ServerDetail is the part of server.json the importer reads.
type ServerDetail struct {
	Name        string   `json:"name"`
	Title       string   `json:"title,omitempty"`
	Description string   `json:"description,omitempty"`
	Version     string   `json:"version"`
	Remotes     []Remote `json:"remotes,omitempty"`
	// Packages are only counted: a package-only (stdio) server has nothing
	// a remote monitor can probe.
	Packages []json.RawMessage `json:"packages,omitempty"`
}

// Remote is one entry of server.json's remotes: a StreamableHttpTransport
// or SseTransport. URL may be a template with {variables}.
type Remote struct {
	Type      string           `json:"type"` // streamable-http | sse
	URL       string           `json:"url"`
	Headers   []KeyValueInput  `json:"headers,omitempty"`
	Variables map[string]Input `json:"variables,omitempty"`
}

// Input is the registry's Input schema (the fields the importer uses).
type Input struct {
	Description string           `json:"description,omitempty"`
	IsRequired  bool             `json:"isRequired,omitempty"`
	IsSecret    bool             `json:"isSecret,omitempty"`
	Value       string           `json:"value,omitempty"`
	Default     string           `json:"default,omitempty"`
	Choices     []string         `json:"choices,omitempty"`
	Variables   map[string]Input `json:"variables,omitempty"`
}

// KeyValueInput is a header (or environment variable): a named Input.
type KeyValueInput struct {
	Name string `json:"name"`
	Input
}

// ServerList is the body of GET /v0.1/servers.
type ServerList struct {
	Servers  []ServerResponse `json:"servers"`
	Metadata struct {
		NextCursor string `json:"nextCursor,omitempty"`
		Count      int    `json:"count,omitempty"`
	} `json:"metadata"`
}

// Progress is reported after every page read.
type Progress struct {
	Page    int // 1-based
	Servers int // entries on this page
	Total   int // entries so far
}

// String is the line a CLI prints: "page 3: 100 servers (300 so far)".
func (p Progress) String() string {
	return fmt.Sprintf("page %d: %d servers (%d so far)", p.Page, p.Servers, p.Total)
}

// Client reads a registry's v0.1 API.
type Client struct {
	base         string
	http         *http.Client
	log          *slog.Logger
	progress     func(Progress)
	pageSize     int
	maxPageBytes int64
	maxPages     int
}

// ClientOptions configure NewClient; zero fields take the defaults.
type ClientOptions struct {
	// HTTP sends the requests (timeouts, proxies and TLS are its
	// business); nil means a client with a 30s timeout.
	HTTP         *http.Client
	Logger       *slog.Logger
	Progress     func(Progress)
	PageSize     int
	MaxPageBytes int64
	MaxPages     int
}

// ErrNotRegistry marks a response that is not a v0.1 server list.
var ErrNotRegistry = errors.New("not an MCP registry v0.1 server list")

// NewClient returns a client for the registry at baseURL, such as
// https://registry.modelcontextprotocol.io. A URL that already ends in
// /v0.1 or /v0.1/servers is accepted too.
func NewClient(baseURL string, opts ClientOptions) (*Client, error) {
	base, err := NormalizeBaseURL(baseURL)
	if err != nil {
		return nil, err
	}
	c := &Client{
		base: base, http: opts.HTTP, log: opts.Logger, progress: opts.Progress,
		pageSize: opts.PageSize, maxPageBytes: opts.MaxPageBytes, maxPages: opts.MaxPages,
	}
	if c.http == nil {
		c.http = &http.Client{Timeout: 30 * time.Second}
	}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	c.log = c.log.With("component", "registry", "registry", base)
	if c.pageSize <= 0 {
		c.pageSize = DefaultPageSize
	}
	if c.maxPageBytes <= 0 {
		c.maxPageBytes = DefaultMaxPageBytes
	}
	if c.maxPages <= 0 {
		c.maxPages = DefaultMaxPages
	}
	return c, nil
}

// BaseURL is the normalized registry base URL.
func (c *Client) BaseURL() string { return c.base }

// NormalizeBaseURL checks raw is an http(s) URL and strips a trailing
// /v0.1/servers, /v0.1 and slash.
func NormalizeBaseURL(raw string) (string, error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("registry URL %q: want an http(s) URL such as https://registry.modelcontextprotocol.io", raw)
	}
	if u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return "", fmt.Errorf("registry URL %q: give the base URL without query, fragment or credentials", raw)
	}
	p := strings.TrimRight(u.Path, "/")
	p = strings.TrimSuffix(p, "/servers")
	p = strings.TrimSuffix(p, "/v0.1")
	u.Path = strings.TrimRight(p, "/")
	u.RawPath = ""
	return u.String(), nil
}

// ListOptions select what List reads.
type ListOptions struct {
	// UpdatedSince, when set, asks only for entries updated after it
	// (updated_since). The official registry then includes deleted
	// entries, so a sync sees removals.
	UpdatedSince time.Time
}

// PageError says which page of which listing failed.
type PageError struct {
	URL    string // the request URL
	Page   int
	Status int // HTTP status, 0 if none
	Err    error
}

func (e *PageError) Error() string {
	hint := "check that --url is an MCP registry base URL (it serves GET /v0.1/servers) and try again"
	switch {
	case e.Status == http.StatusTooManyRequests || e.Status >= 500:
		hint = "the registry is busy or failing; try again later"
	case e.Status == http.StatusBadRequest:
		hint = "the registry refused the query; if a sync, reset its updated_since time and run a full import"
	}
	if e.Status != 0 {
		return fmt.Sprintf("registry page %d (GET %s): HTTP %d: %v; %s", e.Page, e.URL, e.Status, e.Err, hint)
	}
	return fmt.Sprintf("registry page %d (GET %s): %v; %s", e.Page, e.URL, e.Err, hint)
}

func (e *PageError) Unwrap() error { return e.Err }

// List reads every page of GET /v0.1/servers. It fails as a whole when any
// page fails: a partial listing must never look like a complete one,
// since a full import removes what it does not see.
func (c *Client) List(ctx context.Context, opts ListOptions) ([]ServerResponse, error) {
	var all []ServerResponse
	seen := map[string]bool{}
	cursor := ""
	for page := 1; ; page++ {
		if page > c.maxPages {
			return nil, fmt.Errorf("registry %s: more than %d pages; the listing does not end (or raise MaxPages)", c.base, c.maxPages)
		}
		u := c.pageURL(cursor, opts)
		list, err := c.page(ctx, u)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			pe := &PageError{URL: u, Page: page, Err: err}
			var se statusError
			if errors.As(err, &se) {
				pe.Status, pe.Err = se.status, errors.New(se.body)
			}
			return nil, pe
		}
		all = append(all, list.Servers...)
		c.log.Debug("registry page", "page", page, "servers", len(list.Servers), "total", len(all))
		if c.progress != nil {
			c.progress(Progress{Page: page, Servers: len(list.Servers), Total: len(all)})
		}
		next := list.Metadata.NextCursor
		if next == "" || len(list.Servers) == 0 {
			return all, nil
		}
		if seen[next] {
			return nil, &PageError{URL: u, Page: page, Err: fmt.Errorf("%w: cursor %q repeats; the listing would loop", ErrNotRegistry, next)}
		}
		seen[next] = true
		cursor = next
	}
}

func (c *Client) pageURL(cursor string, opts ListOptions) string {
	q := url.Values{}
	q.Set("limit", strconv.Itoa(c.pageSize))
	if cursor != "" {
		q.Set("cursor", cursor)
	}
	if !opts.UpdatedSince.IsZero() {
		q.Set("updated_since", opts.UpdatedSince.UTC().Format(time.RFC3339Nano))
	}
	return c.base + listPath + "?" + q.Encode()
}

type statusError struct {
	status int
	body   string
}

func (e statusError) Error() string { return fmt.Sprintf("HTTP %d: %s", e.status, e.body) }

func (c *Client) page(ctx context.Context, u string) (ServerList, error) {
	var list ServerList
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return list, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		return list, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, c.maxPageBytes+1))
	if err != nil {
		return list, fmt.Errorf("reading the response: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return list, statusError{status: resp.StatusCode, body: snippet(body)}
	}
	return DecodePage(body, c.maxPageBytes)
}

// DecodePage decodes one page body of GET /v0.1/servers, bounded first:
// a body over maxBytes, or one that is not a JSON object with a "servers"
// array (or null: an empty page), is ErrNotRegistry.
func DecodePage(body []byte, maxBytes int64) (ServerList, error) {
	var list ServerList
	if int64(len(body)) > maxBytes {
		return list, fmt.Errorf("%w: response larger than %d bytes", ErrNotRegistry, maxBytes)
	}
	var probe struct {
		Servers json.RawMessage `json:"servers"`
	}
	// "servers": null is an empty page (a Go registry's nil slice).
	if err := json.Unmarshal(body, &probe); err != nil || len(probe.Servers) == 0 || (probe.Servers[0] != '[' && string(probe.Servers) != "null") {
		return list, fmt.Errorf("%w: the body has no \"servers\" array (starts %q)", ErrNotRegistry, snippet(body))
	}
	if err := json.Unmarshal(body, &list); err != nil {
		return list, fmt.Errorf("%w: %v", ErrNotRegistry, err)
	}
	return list, nil
}

// snippet is a short, printable prefix of a response body for an error.
func snippet(b []byte) string {
	b = bytes.TrimSpace(b)
	const max = 200
	s := strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, string(b[:min(len(b), max)]))
	if len(b) > max {
		s += "…"
	}
	return s
}
