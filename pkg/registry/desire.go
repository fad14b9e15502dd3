package registry

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Labels the importer sets on every endpoint it creates. Their keys match
// mcpmon's label-key pattern ^[A-Za-z_][A-Za-z0-9_./-]*$.
const (
	// LabelSource marks an imported endpoint; its value is the importer's
	// source (DefaultSource). The importer lists, updates and removes
	// only endpoints with this label.
	LabelSource = "source"
	// LabelKey is the endpoint's identity across imports: a hash of the
	// server name, the transport and the remote's ordinal. A rename in
	// mcpmon does not lose the match.
	LabelKey = "mcp-registry/key"
	// LabelServerID is a hash of the server name, so a sync can find every
	// endpoint of a server that changed.
	LabelServerID = "mcp-registry/server-id"
	// LabelServer, LabelVersion and LabelStatus describe the registry
	// entry for people (selectors, dashboards); long values are cut.
	LabelServer  = "mcp-registry/server"
	LabelVersion = "mcp-registry/version"
	LabelStatus  = "mcp-registry/status"
	// LabelRemote fingerprints what the registry says about the remote
	// (URL, transport, header values), so a changed header value is
	// noticed although mcpmon never returns header values.
	LabelRemote = "mcp-registry/remote"
)

// DefaultSource is the value of LabelSource on imported endpoints.
const DefaultSource = "mcp-registry"

// Transports the importer maps; other remote types are skipped.
const (
	TransportStreamableHTTP = "streamable-http"
	TransportSSE            = "sse"
)

const (
	maxEndpointName = 200 // mcpmon's limit
	maxLabelValue   = 63  // mcpmon allows 255; labels stay short on purpose
	hashLen         = 16  // hex characters of a key
)

// Desired is one endpoint the registry asks for.
type Desired struct {
	Key       string // LabelKey value
	ServerID  string // LabelServerID value
	Name      string // mcpmon endpoint name
	Server    string // registry server name
	Version   string
	URL       string
	Transport string
	// Headers are the values the registry publishes for the remote
	// (fixed values or defaults); mcpmon stores them sealed.
	Headers map[string]string
	Labels  map[string]string
}

// Skip is a server or one of its remotes the importer does not monitor.
type Skip struct {
	Server  string `json:"server"`
	Version string `json:"version,omitempty"`
	// Remote is the remote's 1-based position in server.json's remotes,
	// 0 for the whole server.
	Remote int    `json:"remote,omitempty"`
	URL    string `json:"url,omitempty"`
	Reason string `json:"reason"`
}

// Desire is what a registry listing asks for.
type Desire struct {
	Endpoints []Desired // sorted by Name
	Skips     []Skip
	// Touched are the server IDs whose current (latest) entry the listing
	// holds: a sync reconciles exactly their endpoints.
	Touched map[string]bool
	// Gone says why a touched server has no endpoints (deleted,
	// deprecated, no remotes), by server ID, for the removal report.
	Gone map[string]string
	// HighWater is the latest updatedAt among the entries (zero if none
	// carries one): the next sync's updated_since.
	HighWater time.Time
	Entries   int
}

// DesireOptions shape DesireFrom.
type DesireOptions struct {
	Source string // LabelSource value; default DefaultSource
	// Delta says the entries are a sync's updated_since delta: a server
	// whose listed entries are all older versions (isLatest false) is then
	// left alone, since only its history changed. In a full listing every
	// server's newest entry counts.
	Delta bool
}

// DesireFrom maps registry entries to endpoints: one per usable remote of
// each server's latest entry. It is pure: the same entries give the same
// Desire.
func DesireFrom(entries []ServerResponse, opts DesireOptions) Desire {
	source := opts.Source
	if source == "" {
		source = DefaultSource
	}
	d := Desire{Touched: map[string]bool{}, Gone: map[string]string{}, Entries: len(entries)}
	byName := map[string][]int{}
	for i, e := range entries {
		if m := e.Meta.Official; m != nil && m.UpdatedAt.After(d.HighWater) {
			d.HighWater = m.UpdatedAt
		}
		if strings.TrimSpace(e.Server.Name) == "" {
			d.Skips = append(d.Skips, Skip{Version: e.Server.Version, Reason: "entry has no server name"})
			continue
		}
		byName[e.Server.Name] = append(byName[e.Server.Name], i)
	}

	// URL → endpoint name that already claimed it, across servers: the
	// same URL listed twice is one endpoint, probed once.
	claimed := map[string]string{}
	for _, name := range slices.Sorted(maps.Keys(byName)) {
		e, marked := latest(entries, byName[name])
		if opts.Delta && !marked {
			// Only older versions of this server changed (a sync delta):
			// they say nothing about what to monitor now.
			continue
		}
		sid := hashOf(name)
		d.Touched[sid] = true
		ver := e.Server.Version
		switch st := status(e); st {
		case StatusDeleted, StatusDeprecated:
			d.Gone[sid] = "server " + st + " in the registry"
			d.Skips = append(d.Skips, Skip{Server: name, Version: ver, Reason: d.Gone[sid]})
			continue
		case StatusActive:
		default:
			d.Gone[sid] = fmt.Sprintf("unknown registry status %q", st)
			d.Skips = append(d.Skips, Skip{Server: name, Version: ver, Reason: d.Gone[sid]})
			continue
		}
		if len(e.Server.Remotes) == 0 {
			d.Gone[sid] = "no remotes (package/stdio only)"
			d.Skips = append(d.Skips, Skip{Server: name, Version: ver, Reason: d.Gone[sid]})
			continue
		}
		ordinal := map[string]int{}
		own := map[string]int{} // normalized URL → remote position, within this server
		kept := 0
		for i, r := range e.Server.Remotes {
			pos := i + 1
			skip := func(u, format string, args ...any) {
				d.Skips = append(d.Skips, Skip{Server: name, Version: ver, Remote: pos, URL: u, Reason: fmt.Sprintf(format, args...)})
			}
			if r.Type != TransportStreamableHTTP && r.Type != TransportSSE {
				skip(r.URL, "remote type %q is not monitored (want streamable-http or sse)", r.Type)
				continue
			}
			u, err := resolve(r.URL, r.Variables)
			if err != nil {
				skip(r.URL, "URL %v", err)
				continue
			}
			norm, err := normalizeURL(u)
			if err != nil {
				skip(u, "URL %v", err)
				continue
			}
			if first, dup := own[norm]; dup {
				skip(u, "same URL as remote %d of this server", first)
				continue
			}
			own[norm] = pos
			headers, err := resolveHeaders(r.Headers)
			if err != nil {
				skip(u, "%v", err)
				continue
			}
			if other, dup := claimed[norm]; dup {
				skip(u, "same URL as endpoint %q", other)
				continue
			}
			ordinal[r.Type]++
			ep := desired(source, name, ver, r.Type, ordinal[r.Type], u, headers)
			claimed[norm] = ep.Name
			d.Endpoints = append(d.Endpoints, ep)
			kept++
		}
		if kept == 0 {
			d.Gone[sid] = "no remote mcpmon can monitor"
		}
	}
	slices.SortFunc(d.Endpoints, func(a, b Desired) int { return cmp.Compare(a.Name, b.Name) })
	return d
}

// latest picks a server's current entry among idx: the one marked isLatest
// (newest publishedAt if several), else the newest publishedAt. marked says
// whether the pick is marked isLatest or carries no registry metadata at
// all (a registry that does not keep it).
func latest(entries []ServerResponse, idx []int) (ServerResponse, bool) {
	best, marked, anyMeta := -1, false, false
	for _, i := range idx {
		m := entries[i].Meta.Official
		isLatest := m != nil && m.IsLatest
		anyMeta = anyMeta || m != nil
		switch {
		case best < 0, isLatest && !marked:
			best, marked = i, isLatest
		case isLatest == marked && published(entries[i]).After(published(entries[best])):
			best = i
		}
	}
	return entries[best], marked || !anyMeta
}

func published(e ServerResponse) time.Time {
	if e.Meta.Official == nil {
		return time.Time{}
	}
	return e.Meta.Official.PublishedAt
}

// status is the entry's registry status; an entry without official
// metadata (a registry that does not keep it) counts as active.
func status(e ServerResponse) string {
	if e.Meta.Official == nil || e.Meta.Official.Status == "" {
		return StatusActive
	}
	return e.Meta.Official.Status
}

func desired(source, server, version, transport string, ordinal int, u string, headers map[string]string) Desired {
	keySrc := fmt.Sprintf("%s\x00%s\x00%d", server, transport, ordinal)
	suffix := " (" + transport + ")"
	if ordinal > 1 {
		suffix = fmt.Sprintf(" (%s %d)", transport, ordinal)
	}
	d := Desired{
		Key: hashOf(keySrc), ServerID: hashOf(server), Name: endpointName(server, suffix),
		Server: server, Version: version, URL: u, Transport: transport, Headers: headers,
	}
	d.Labels = map[string]string{
		LabelSource:   source,
		LabelKey:      d.Key,
		LabelServerID: d.ServerID,
		LabelStatus:   StatusActive,
		LabelRemote:   fingerprint(u, transport, headers),
	}
	if v := labelValue(server); v != "" {
		d.Labels[LabelServer] = v
	}
	if v := labelValue(version); v != "" {
		d.Labels[LabelVersion] = v
	}
	return d
}

// endpointName is "<server> (<transport>)", printable and within mcpmon's
// name limit; a cut name keeps a hash of the whole so it stays unique.
func endpointName(server, suffix string) string {
	clean := printable(server)
	if utf8.RuneCountInString(clean)+utf8.RuneCountInString(suffix) <= maxEndpointName {
		return clean + suffix
	}
	tail := "~" + hashOf(server)[:8] + suffix
	return cutRunes(clean, maxEndpointName-utf8.RuneCountInString(tail)) + tail
}

// labelValue is s made printable and cut to maxLabelValue bytes.
func labelValue(s string) string {
	s = strings.TrimSpace(printable(s))
	if len(s) <= maxLabelValue {
		return s
	}
	cut := maxLabelValue - len("…")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

func printable(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r) || r == utf8.RuneError {
			return '?'
		}
		return r
	}, s)
}

func cutRunes(s string, n int) string {
	i := 0
	for pos := range s {
		if i == n {
			return s[:pos]
		}
		i++
	}
	return s
}

func hashOf(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])[:hashLen]
}

// fingerprint hashes what the registry says about one remote.
func fingerprint(u, transport string, headers map[string]string) string {
	var b strings.Builder
	b.WriteString(u + "\x00" + transport)
	for _, k := range slices.Sorted(maps.Keys(headers)) {
		b.WriteString("\x00" + k + "=" + headers[k])
	}
	return hashOf(b.String())
}

var varRE = regexp.MustCompile(`\{([^{}]*)\}`)

// resolve fills a template's {variables} with each variable's fixed value
// or default. A variable without either needs a person: an error.
func resolve(tmpl string, vars map[string]Input) (string, error) {
	var missing []string
	out := varRE.ReplaceAllStringFunc(tmpl, func(m string) string {
		name := m[1 : len(m)-1]
		v, ok := vars[name]
		switch {
		case ok && v.Value != "":
			return v.Value
		case ok && v.Default != "":
			return v.Default
		}
		missing = append(missing, name)
		return m
	})
	if len(missing) > 0 {
		return "", fmt.Errorf("needs variable %s, which the registry gives no value or default for", strings.Join(missing, ", "))
	}
	return out, nil
}

// resolveHeaders returns the header values the registry publishes. A
// required header without a value or default (typically an API key) is an
// error: mcpmon cannot fill it, and probing without it only measures a 401.
// Optional headers without a value are left out.
func resolveHeaders(hs []KeyValueInput) (map[string]string, error) {
	out := map[string]string{}
	for _, h := range hs {
		name := strings.TrimSpace(h.Name)
		if name == "" {
			continue
		}
		v := h.Value
		if v == "" {
			v = h.Default
		}
		var err error
		if v != "" {
			v, err = resolve(v, h.Variables)
		}
		if v == "" || err != nil {
			if h.IsRequired {
				what := "a value"
				if h.IsSecret {
					what = "a secret"
				}
				return nil, fmt.Errorf("requires header %s (%s) the registry gives no value for; add the endpoint by hand with the header", name, what)
			}
			continue
		}
		out[name] = v
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}

// normalizeURL checks u is an absolute http(s) URL and returns the form
// two listings of the same endpoint share: lower-case scheme and host, no
// default port.
func normalizeURL(u string) (string, error) {
	p, err := url.Parse(u)
	if err != nil {
		return "", fmt.Errorf("%q is not a valid URL", u)
	}
	p.Scheme = strings.ToLower(p.Scheme)
	if p.Scheme != "http" && p.Scheme != "https" {
		return "", fmt.Errorf("%q: scheme must be http or https", u)
	}
	if p.Hostname() == "" || p.User != nil {
		return "", fmt.Errorf("%q must have a host and no credentials", u)
	}
	host := strings.ToLower(p.Host)
	if p.Scheme == "https" {
		host = strings.TrimSuffix(host, ":443")
	} else {
		host = strings.TrimSuffix(host, ":80")
	}
	p.Host = host
	p.Fragment = ""
	return p.String(), nil
}
