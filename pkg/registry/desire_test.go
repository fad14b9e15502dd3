package registry

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	apiv1 "github.com/mcpmon/mcpmon/pkg/api/v1"
)

var t0 = time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)

// entry builds a registry entry; remotes are "type url" strings.
func entry(name, version, status string, latest bool, updated time.Time, remotes ...string) ServerResponse {
	e := ServerResponse{Server: ServerDetail{Name: name, Version: version}}
	e.Meta.Official = &OfficialMeta{Status: status, IsLatest: latest, PublishedAt: updated, UpdatedAt: updated}
	for _, r := range remotes {
		typ, u, _ := strings.Cut(r, " ")
		e.Server.Remotes = append(e.Server.Remotes, Remote{Type: typ, URL: u})
	}
	return e
}

func withRemote(e ServerResponse, r Remote) ServerResponse {
	e.Server.Remotes = append(e.Server.Remotes, r)
	return e
}

func TestDesireFrom(t *testing.T) {
	type want struct {
		endpoints []string // "name url"
		skips     []string // substrings of reasons, in order
	}
	tests := []struct {
		name    string
		entries []ServerResponse
		delta   bool
		want    want
	}{
		{
			name:    "one endpoint per remote, transport kept",
			entries: []ServerResponse{entry("com.example/a", "1.0.0", "active", true, t0, "streamable-http https://a.example.com/mcp", "sse https://a.example.com/sse")},
			want: want{endpoints: []string{
				"com.example/a (sse) https://a.example.com/sse",
				"com.example/a (streamable-http) https://a.example.com/mcp",
			}},
		},
		{
			name: "several versions: the latest wins whatever the order",
			entries: []ServerResponse{
				entry("com.example/a", "2.0.0", "active", true, t0.Add(time.Hour), "streamable-http https://a.example.com/v2"),
				entry("com.example/a", "1.0.0", "active", false, t0, "streamable-http https://a.example.com/v1"),
			},
			want: want{endpoints: []string{"com.example/a (streamable-http) https://a.example.com/v2"}},
		},
		{
			name: "several versions: the latest wins listed last too",
			entries: []ServerResponse{
				entry("com.example/a", "1.0.0", "active", false, t0, "streamable-http https://a.example.com/v1"),
				entry("com.example/a", "2.0.0", "active", true, t0.Add(-time.Hour), "streamable-http https://a.example.com/v2"),
			},
			want: want{endpoints: []string{"com.example/a (streamable-http) https://a.example.com/v2"}},
		},
		{
			name: "without isLatest marks the newest publishedAt wins",
			entries: func() []ServerResponse {
				a := entry("com.example/a", "1.0.0", "active", false, t0, "streamable-http https://a.example.com/v1")
				b := entry("com.example/a", "2.0.0", "active", false, t0.Add(time.Hour), "streamable-http https://a.example.com/v2")
				a.Meta.Official, b.Meta.Official = nil, nil
				b.Meta.Official = &OfficialMeta{PublishedAt: t0.Add(time.Hour)}
				return []ServerResponse{b, a}
			}(),
			want: want{endpoints: []string{"com.example/a (streamable-http) https://a.example.com/v2"}},
		},
		{
			name:    "deleted and deprecated servers are skipped",
			entries: []ServerResponse{entry("com.example/d", "1", "deleted", true, t0, "streamable-http https://d.example.com/mcp"), entry("com.example/p", "1", "deprecated", true, t0, "sse https://p.example.com/sse")},
			want:    want{skips: []string{"server deleted", "server deprecated"}},
		},
		{
			name:    "a package-only server has nothing to probe",
			entries: []ServerResponse{entry("com.example/stdio", "1", "active", true, t0)},
			want:    want{skips: []string{"no remotes"}},
		},
		{
			name:    "other remote types are skipped",
			entries: []ServerResponse{entry("com.example/ws", "1", "active", true, t0, "websocket wss://ws.example.com/", "streamable-http https://ws.example.com/mcp")},
			want:    want{endpoints: []string{"com.example/ws (streamable-http) https://ws.example.com/mcp"}, skips: []string{`remote type "websocket"`}},
		},
		{
			name: "a required secret header the registry cannot fill skips the remote",
			entries: []ServerResponse{withRemote(entry("com.example/key", "1", "active", true, t0), Remote{Type: "streamable-http", URL: "https://key.example.com/mcp",
				Headers: []KeyValueInput{{Name: "X-API-Key", Input: Input{IsRequired: true, IsSecret: true}}}})},
			want: want{skips: []string{"requires header X-API-Key (a secret)"}},
		},
		{
			name: "headers with a value or default are filled, optional empty ones left out",
			entries: []ServerResponse{withRemote(entry("com.example/h", "1", "active", true, t0), Remote{Type: "streamable-http", URL: "https://h.example.com/mcp",
				Headers: []KeyValueInput{{Name: "X-Region", Input: Input{IsRequired: true, Default: "eu"}}, {Name: "X-Opt"}}})},
			want: want{endpoints: []string{"com.example/h (streamable-http) https://h.example.com/mcp"}},
		},
		{
			name: "URL variables: a default fills, none skips",
			entries: []ServerResponse{
				withRemote(entry("com.example/tmpl", "1", "active", true, t0), Remote{Type: "streamable-http", URL: "https://{region}.example.com/mcp",
					Variables: map[string]Input{"region": {Default: "us"}}}),
				withRemote(entry("com.example/tenant", "1", "active", true, t0), Remote{Type: "streamable-http", URL: "https://{tenant}.example.com/mcp",
					Variables: map[string]Input{"tenant": {IsRequired: true}}}),
			},
			want: want{endpoints: []string{"com.example/tmpl (streamable-http) https://us.example.com/mcp"}, skips: []string{"needs variable tenant"}},
		},
		{
			name:    "the same URL twice in one server is one endpoint",
			entries: []ServerResponse{entry("com.example/twice", "1", "active", true, t0, "streamable-http https://t.example.com/mcp", "streamable-http HTTPS://T.example.com:443/mcp")},
			want:    want{endpoints: []string{"com.example/twice (streamable-http) https://t.example.com/mcp"}, skips: []string{"same URL as remote 1"}},
		},
		{
			name: "the same URL in two servers is one endpoint, the first name's",
			entries: []ServerResponse{
				entry("com.example/z", "1", "active", true, t0, "sse https://shared.example.com/sse"),
				entry("com.example/b", "1", "active", true, t0, "sse https://shared.example.com/sse"),
			},
			want: want{endpoints: []string{"com.example/b (sse) https://shared.example.com/sse"}, skips: []string{`same URL as endpoint "com.example/b (sse)"`}},
		},
		{
			name: "a second remote of one transport gets its own name",
			entries: []ServerResponse{entry("com.example/two", "1", "active", true, t0,
				"streamable-http https://one.example.com/mcp", "streamable-http https://two.example.com/mcp")},
			want: want{endpoints: []string{
				"com.example/two (streamable-http 2) https://two.example.com/mcp",
				"com.example/two (streamable-http) https://one.example.com/mcp",
			}},
		},
		{
			name:    "a delta holding only an older version touches nothing",
			entries: []ServerResponse{entry("com.example/old", "0.9", "deprecated", false, t0, "sse https://old.example.com/sse")},
			delta:   true,
			want:    want{},
		},
		{
			name:    "a bad URL is skipped",
			entries: []ServerResponse{entry("com.example/bad", "1", "active", true, t0, "sse ftp://bad.example.com/")},
			want:    want{skips: []string{"scheme must be http or https"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := DesireFrom(tt.entries, DesireOptions{Delta: tt.delta})
			var got []string
			for _, e := range d.Endpoints {
				got = append(got, e.Name+" "+e.URL)
				if e.Labels[LabelSource] != DefaultSource || e.Labels[LabelKey] != e.Key || e.Labels[LabelServer] != e.Server {
					t.Errorf("labels of %s = %v", e.Name, e.Labels)
				}
			}
			if !slices.Equal(got, tt.want.endpoints) {
				t.Errorf("endpoints =\n%q\nwant\n%q", got, tt.want.endpoints)
			}
			if len(d.Skips) != len(tt.want.skips) {
				t.Fatalf("skips = %+v, want %d", d.Skips, len(tt.want.skips))
			}
			for i, s := range d.Skips {
				if !strings.Contains(s.Reason, tt.want.skips[i]) {
					t.Errorf("skip %d reason = %q, want it to contain %q", i, s.Reason, tt.want.skips[i])
				}
			}
		})
	}
}

func TestDesireHeadersAndLabels(t *testing.T) {
	e := withRemote(entry("com.example/h", "1.2.3", "active", true, t0), Remote{Type: "streamable-http", URL: "https://h.example.com/mcp",
		Headers: []KeyValueInput{{Name: "X-Region", Input: Input{IsRequired: true, Default: "eu"}}, {Name: "X-Opt"}}})
	d := DesireFrom([]ServerResponse{e}, DesireOptions{Source: "my-registry"})
	if len(d.Endpoints) != 1 {
		t.Fatalf("endpoints = %+v", d.Endpoints)
	}
	ep := d.Endpoints[0]
	if len(ep.Headers) != 1 || ep.Headers["X-Region"] != "eu" {
		t.Errorf("headers = %v, want X-Region: eu only", ep.Headers)
	}
	if ep.Labels[LabelSource] != "my-registry" || ep.Labels[LabelVersion] != "1.2.3" || ep.Labels[LabelStatus] != "active" {
		t.Errorf("labels = %v", ep.Labels)
	}
	// A header value change changes the fingerprint, so an update notices it.
	e.Server.Remotes[0].Headers[0].Default = "us"
	if d2 := DesireFrom([]ServerResponse{e}, DesireOptions{Source: "my-registry"}); d2.Endpoints[0].Labels[LabelRemote] == ep.Labels[LabelRemote] {
		t.Error("the remote fingerprint ignores header values")
	}
	if !d.HighWater.Equal(t0) {
		t.Errorf("high water = %v, want %v", d.HighWater, t0)
	}
}

func TestDesireNamesAndLabelsStayValid(t *testing.T) {
	long := "com.example/" + strings.Repeat("x", 190)
	e := entry(long, strings.Repeat("9", 100), "active", true, t0, "streamable-http https://long.example.com/mcp")
	e2 := entry(long+"y", "1", "active", true, t0, "streamable-http https://long2.example.com/mcp")
	d := DesireFrom([]ServerResponse{e, e2}, DesireOptions{})
	if len(d.Endpoints) != 2 {
		t.Fatalf("endpoints = %d", len(d.Endpoints))
	}
	if d.Endpoints[0].Name == d.Endpoints[1].Name {
		t.Errorf("two servers cut to one name %q", d.Endpoints[0].Name)
	}
	for _, ep := range d.Endpoints {
		if n := utf8.RuneCountInString(ep.Name); n > maxEndpointName {
			t.Errorf("name has %d runes", n)
		}
		for k, v := range ep.Labels {
			if len(v) > maxLabelValue {
				t.Errorf("label %s has %d bytes", k, len(v))
			}
		}
	}
	// Keys are stable across runs: re-imports match.
	again := DesireFrom([]ServerResponse{e2, e}, DesireOptions{})
	for i := range again.Endpoints {
		if again.Endpoints[i].Key != d.Endpoints[i].Key {
			t.Errorf("key of %s changed between runs", d.Endpoints[i].Name)
		}
	}
}

func view(id string, d Desired) apiv1.EndpointView {
	return apiv1.EndpointView{ID: id, Name: d.Name, URL: d.URL, Transport: d.Transport, Labels: d.Labels}
}

func TestMakePlan(t *testing.T) {
	a := DesireFrom([]ServerResponse{entry("com.example/a", "1", "active", true, t0, "streamable-http https://a.example.com/mcp")}, DesireOptions{})
	b := DesireFrom([]ServerResponse{entry("com.example/b", "1", "active", true, t0, "sse https://b.example.com/sse")}, DesireOptions{})
	aMoved := DesireFrom([]ServerResponse{entry("com.example/a", "2", "active", true, t0, "streamable-http https://a2.example.com/mcp")}, DesireOptions{})
	aDeleted := DesireFrom([]ServerResponse{entry("com.example/a", "2", "deleted", true, t0, "streamable-http https://a.example.com/mcp")}, DesireOptions{})
	both := DesireFrom([]ServerResponse{
		entry("com.example/a", "1", "active", true, t0, "streamable-http https://a.example.com/mcp"),
		entry("com.example/b", "1", "active", true, t0, "sse https://b.example.com/sse"),
	}, DesireOptions{})
	va, vb := view("ea", a.Endpoints[0]), view("eb", b.Endpoints[0])
	noKey := va
	noKey.ID, noKey.Labels = "nk", map[string]string{LabelSource: DefaultSource}

	type counts struct{ create, update, remove, unchanged, skip int }
	tests := []struct {
		name     string
		desire   Desire
		existing []apiv1.EndpointView
		opts     PlanOptions
		want     counts
		check    func(t *testing.T, p Plan)
	}{
		{name: "nothing there: create", desire: both, opts: PlanOptions{Full: true}, want: counts{create: 2}},
		{name: "all there: no-op", desire: both, existing: []apiv1.EndpointView{va, vb}, opts: PlanOptions{Full: true}, want: counts{unchanged: 2}},
		{name: "full import removes what is not listed", desire: a, existing: []apiv1.EndpointView{va, vb}, opts: PlanOptions{Full: true},
			want: counts{unchanged: 1, remove: 1}, check: func(t *testing.T, p Plan) {
				if p.Removes[0].ID != "eb" || !strings.Contains(p.Removes[0].Reason, "no longer listed") {
					t.Errorf("removes = %+v", p.Removes)
				}
			}},
		{name: "sync leaves untouched servers alone", desire: a, existing: []apiv1.EndpointView{va, vb}, want: counts{unchanged: 1}},
		{name: "sync removes a deleted server's endpoint", desire: aDeleted, existing: []apiv1.EndpointView{va, vb}, want: counts{remove: 1, skip: 1},
			check: func(t *testing.T, p Plan) {
				if p.Removes[0].ID != "ea" || !strings.Contains(p.Removes[0].Reason, "deleted") {
					t.Errorf("removes = %+v", p.Removes)
				}
			}},
		{name: "a moved URL is an update of the same endpoint", desire: aMoved, existing: []apiv1.EndpointView{va}, want: counts{update: 1},
			check: func(t *testing.T, p Plan) {
				u := p.Updates[0]
				if u.ID != "ea" || !slices.Equal(u.Fields, []string{"url", "labels"}) || u.Patch["url"] != "https://a2.example.com/mcp" {
					t.Errorf("update = %+v", u)
				}
				if _, ok := u.Patch["schedule"]; ok {
					t.Error("an update touches the schedule")
				}
			}},
		{name: "duplicate imported endpoints collapse to one", desire: a, existing: []apiv1.EndpointView{va, func() apiv1.EndpointView { v := va; v.ID = "eb2"; return v }()},
			opts: PlanOptions{Full: true}, want: counts{unchanged: 1, remove: 1}},
		{name: "the create limit defers the rest", desire: both, opts: PlanOptions{Full: true, MaxCreate: 1}, want: counts{create: 1, skip: 1},
			check: func(t *testing.T, p Plan) {
				if p.Deferred != 1 || !strings.Contains(p.Skips[0].Reason, "limit of 1") {
					t.Errorf("deferred = %d, skips = %+v", p.Deferred, p.Skips)
				}
			}},
		{name: "an endpoint without the key label is left alone", desire: a, existing: []apiv1.EndpointView{va, noKey}, opts: PlanOptions{Full: true},
			want: counts{unchanged: 1, skip: 1}},
		{name: "schedule and timeout go to creates", desire: a, opts: PlanOptions{Full: true, Schedule: "@every 5m", Timeout: "20s"}, want: counts{create: 1},
			check: func(t *testing.T, p Plan) {
				if in := p.Creates[0].Input; in.Schedule != "@every 5m" || in.Timeout != "20s" || in.Transport != "streamable-http" {
					t.Errorf("input = %+v", in)
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := MakePlan(tt.desire, tt.existing, tt.opts)
			got := counts{len(p.Creates), len(p.Updates), len(p.Removes), p.Unchanged, len(p.Skips)}
			if got != tt.want {
				t.Fatalf("plan %s, want %+v", fmt.Sprintf("%+v", got), tt.want)
			}
			if tt.check != nil {
				tt.check(t, p)
			}
		})
	}
}
