package status_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mcpmon/mcpmon/pkg/clock"
	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/status"
)

// hostServer is Hosts over a cache of f in front of a handler answering
// "next handler", and a GET of path with Host host through it.
func hostServer(t *testing.T, o status.Options) func(host, path string) string {
	t.Helper()
	h := status.Hosts(status.NewCache(o))(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "next handler") }))
	return func(host, path string) string {
		req := httptest.NewRequest("GET", path, nil)
		req.Host = host
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec.Body.String()
	}
}

func withProof(p model.StatusPage, v *model.HostVerification) model.StatusPage {
	p.HostVerification = v
	return p
}

// TestOnlyAProvenHostIsServed: a page's custom host is served once it is
// verified, or when it was stored before hosts were verified
// (grandfathered); a pending host, or a verification of another host, is
// answered like a host no page has while the page stays at /status/{slug};
// with UnverifiedHosts every host is served.
func TestOnlyAProvenHostIsServed(t *testing.T) {
	pending := &model.HostVerification{Host: pageHost, Token: "tok"}
	verified := &model.HostVerification{Host: pageHost, Token: "tok", VerifiedAt: now.Add(-time.Minute)}
	staleProof := &model.HostVerification{Host: "old.acme.test", Token: "tok", VerifiedAt: now.Add(-time.Minute)}
	for _, c := range []struct {
		name       string
		proof      *model.HostVerification
		unverified bool
		served     bool
	}{
		{"pending", pending, false, false},
		{"verified", verified, false, true},
		{"grandfathered", nil, false, true},
		{"proof of another host", staleProof, false, false},
		{"pending, verification off", pending, true, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := pageFixture(t, withProof(acmePage(), c.proof))
			get := hostServer(t, status.Options{Store: f, Clock: clock.NewFake(now), UnverifiedHosts: c.unverified})
			unknown := get("unknown.acme.test", "/")
			for _, path := range []string{"/", "/index.json", "/feed.atom"} {
				body := get(pageHost, path)
				if served := body != unknown; served != c.served {
					t.Errorf("%s on the page's host served: %v, want %v (%.60q)", path, served, c.served, body)
				}
			}
			if body := get("anything", "/status/"+pageSlug); !strings.Contains(body, "next handler") {
				t.Errorf("/status/%s went to the host handler: %.60q", pageSlug, body)
			}
		})
	}
	// The page itself is public at its slug whatever its host's state.
	srv := serve(t, pageFixture(t, withProof(acmePage(), pending)), clock.NewFake(now))
	if resp, page := get(t, srv.URL+"/status/"+pageSlug); resp.StatusCode != http.StatusOK || !strings.Contains(page, "Acme status") {
		t.Errorf("/status/%s of a page with a pending host: %d", pageSlug, resp.StatusCode)
	}
}

// TestHostServedOnceVerified: a pending host turns served when the page's
// verification is stored, within one TTL of the index.
func TestHostServedOnceVerified(t *testing.T) {
	clk := clock.NewFake(now)
	f := pageFixture(t, withProof(acmePage(), &model.HostVerification{Host: pageHost, Token: "tok"}))
	get := hostServer(t, status.Options{Store: f, Clock: clk, TTL: time.Minute})
	if body := get(pageHost, "/"); body != "next handler" {
		t.Fatalf("pending host served: %.60q", body)
	}
	putPage(t, f, withProof(acmePage(), &model.HostVerification{Host: pageHost, Token: "tok", VerifiedAt: now}))
	clk.Advance(time.Minute)
	if body := get(pageHost, "/"); !strings.Contains(body, "Acme status") {
		t.Fatalf("verified host not served: %.60q", body)
	}
}

// TestProvenHostWinsOverAnOlderClaim: pages claiming one host while
// pending hold nothing: the one that proved it is served, however old the
// others' claims.
func TestProvenHostWinsOverAnOlderClaim(t *testing.T) {
	const host = "status.example.com"
	pages := []model.StatusPage{
		{ID: "squatter", Slug: "squat", Host: host, CreatedAt: now.Add(-time.Hour), HostVerification: &model.HostVerification{Host: host, Token: "a"}},
		{ID: "owner", Slug: "owner", Host: host, CreatedAt: now, HostVerification: &model.HostVerification{Host: host, Token: "b", VerifiedAt: now}},
	}
	if _, byHost := status.PagesIndex(pages, true); byHost[host] != "owner" || len(byHost) != 1 {
		t.Errorf("proof required: by host %v, want the owner's", byHost)
	}
	if _, byHost := status.PagesIndex(pages, false); byHost[host] != "squat" {
		t.Errorf("proof not required: by host %v, want the oldest claim", byHost)
	}
}
