package api_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mcpmon/mcpmon/pkg/api"
	apiv1 "github.com/mcpmon/mcpmon/pkg/api/v1"
	"github.com/mcpmon/mcpmon/pkg/auth"
	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/status"
	"github.com/mcpmon/mcpmon/pkg/store"
	"github.com/mcpmon/mcpmon/pkg/testpeers"
)

// noDNS is the harness's resolver unless a test brings a DNS server: every
// lookup fails, so no test resolves a name anywhere but on loopback.
type noDNS struct{}

func (noDNS) LookupTXT(context.Context, string) ([]string, error) {
	return nil, errors.New("no DNS in this test")
}

// withDNS points host verification at a test DNS server on 127.0.0.1.
func withDNS(z *testpeers.DNSZone) func(*api.Options) {
	return func(o *api.Options) { o.HostResolver = z.Resolver }
}

const (
	pageHostName = "status.acme.example"
	challenge    = "_mcpmon-challenge." + pageHostName
)

// publicHost serves the harness's store as pkg/status does in front of
// the listener, with the harness's clock, and GETs / with Host host: the
// page's title if a page is served there, "" otherwise.
func publicHost(h *harness, o status.Options) func(host string) string {
	o.Store, o.Clock = h.store, h.clock
	hosts := status.Hosts(status.NewCache(o))(http.NotFoundHandler())
	return func(host string) string {
		req := httptest.NewRequest("GET", "/", nil)
		req.Host = host
		rec := httptest.NewRecorder()
		hosts.ServeHTTP(rec, req)
		body, _ := io.ReadAll(rec.Result().Body)
		if rec.Code != http.StatusOK {
			return ""
		}
		if i := strings.Index(string(body), "<title>"); i >= 0 {
			return string(body[i+7 : i+7+strings.Index(string(body[i+7:]), "<")])
		}
		return string(body)
	}
}

func decodeView(t *testing.T, b []byte) apiv1.StatusPageView {
	t.Helper()
	var v apiv1.StatusPageView
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	return v
}

func problemOf(t *testing.T, b []byte) apiv1.Problem {
	t.Helper()
	var p apiv1.Problem
	if err := json.Unmarshal(b, &p); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	return p
}

// TestHostServedOnlyOnceVerified: a page created with a host is pending,
// told what to publish, and not served on its host (while served at its
// slug); once the TXT record is published and verify-host finds it, the
// host is verified and the page served there.
func TestHostServedOnlyOnceVerified(t *testing.T) {
	z := testpeers.NewDNSZone(t)
	h := newHarness(t, withDNS(z))
	get := publicHost(h, status.Options{})

	var page apiv1.StatusPageView
	h.mustJSON("POST", "/v1/status-pages", acmePage, http.StatusCreated, &page)
	hv := page.HostVerification
	if hv == nil || hv.State != "pending" || hv.RecordType != "TXT" || hv.Record != challenge ||
		!strings.HasPrefix(hv.Value, "mcpmon-verify=") || len(hv.Value) < len("mcpmon-verify=")+26 || hv.VerifiedAt != nil {
		t.Fatalf("hostVerification of a new host: %+v", hv)
	}
	if got := get(pageHostName); got != "" {
		t.Fatalf("a pending host serves %q", got)
	}

	z.SetTXT(challenge, "v=spf1 -all", hv.Value)
	h.clock.Advance(time.Minute)
	var verified apiv1.StatusPageView
	h.mustJSON("POST", "/v1/status-pages/"+page.ID+"/verify-host", "", http.StatusOK, &verified)
	if v := verified.HostVerification; v == nil || v.State != "verified" || v.VerifiedAt == nil || !v.VerifiedAt.Equal(t0.Add(time.Minute)) ||
		v.Value != hv.Value || !verified.UpdatedAt.Equal(t0.Add(time.Minute)) {
		t.Fatalf("after verify-host: %+v", v)
	}
	h.clock.Advance(status.DefaultTTL)
	if got := get(pageHostName); got != "Acme status" {
		t.Fatalf("a verified host serves %q, want the page", got)
	}
	// A second call changes nothing and looks nothing up.
	z.SetFail(challenge)
	var again apiv1.StatusPageView
	h.mustJSON("POST", "/v1/status-pages/"+page.ID+"/verify-host", "{}", http.StatusOK, &again)
	if again.HostVerification.State != "verified" || !again.UpdatedAt.Equal(verified.UpdatedAt) {
		t.Fatalf("verify-host again: %+v", again)
	}
}

// TestVerifyHostSaysWhatItFound: a lookup that does not prove the host is
// a 409 naming the record, what it found and what to publish; a failing
// lookup is a 503 with no resolver detail; answers too many or too big
// are refused by the caps; the page stays pending and unserved.
func TestVerifyHostSaysWhatItFound(t *testing.T) {
	for _, c := range []struct {
		name   string
		setup  func(z *testpeers.DNSZone, value string)
		status int
		says   []string
	}{
		{"no record", func(*testpeers.DNSZone, string) {}, http.StatusConflict, []string{"no TXT record found"}},
		{"the name without TXT", func(z *testpeers.DNSZone, _ string) { z.SetTXT(challenge) }, http.StatusConflict, []string{"no TXT record found"}},
		{"a wrong value", func(z *testpeers.DNSZone, v string) { z.SetTXT(challenge, v+"x", "google-site-verification=abc") }, http.StatusConflict,
			[]string{`found TXT \"`, `x\", \"google-site-verification=abc\" but not the expected value`}},
		{"many records", func(z *testpeers.DNSZone, v string) {
			recs := make([]string, 100)
			for i := range recs {
				recs[i] = "filler-record"
			}
			z.SetTXT(challenge, append(recs, v)...)
		}, http.StatusConflict, []string{"more than 16 TXT records"}},
		{"a huge record", func(z *testpeers.DNSZone, v string) { z.SetTXT(challenge, strings.Repeat("x", 40000), v) }, http.StatusConflict,
			[]string{"more than 4096 bytes"}},
		{"a failing resolver", func(z *testpeers.DNSZone, _ string) { z.SetFail(challenge) }, http.StatusServiceUnavailable,
			[]string{"the DNS lookup of TXT " + challenge + " failed; the page is unchanged; retry later"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			z := testpeers.NewDNSZone(t)
			h := newHarness(t, withDNS(z))
			var page apiv1.StatusPageView
			h.mustJSON("POST", "/v1/status-pages", acmePage, http.StatusCreated, &page)
			c.setup(z, page.HostVerification.Value)
			resp, b := h.do("POST", "/v1/status-pages/"+page.ID+"/verify-host", "", "")
			if resp.StatusCode != c.status || resp.Header.Get("Content-Type") != apiv1.ProblemContentType {
				t.Fatalf("%d %s, want %d problem+json", resp.StatusCode, b, c.status)
			}
			p := problemOf(t, b)
			says := c.says
			if c.status == http.StatusConflict {
				if p.Type != apiv1.TypeHostNotVerified {
					t.Errorf("type %q", p.Type)
				}
				says = append(says, challenge, "publish a TXT record at "+challenge+" with the value "+page.HostVerification.Value)
			}
			raw, _ := json.Marshal(p.Detail)
			for _, s := range says {
				if !strings.Contains(string(raw), s) {
					t.Errorf("detail %s lacks %q", raw, s)
				}
			}
			if len(p.Detail) > 1000 || strings.Contains(p.Detail, "127.0.0.1") {
				t.Errorf("detail of %d bytes: %s", len(p.Detail), p.Detail)
			}
			var got apiv1.StatusPageView
			h.mustJSON("GET", "/v1/status-pages/"+page.ID, "", http.StatusOK, &got)
			if got.HostVerification.State != "pending" {
				t.Errorf("after a refused verification: %+v", got.HostVerification)
			}
			if served := publicHost(h, status.Options{})(pageHostName); served != "" {
				t.Errorf("after a refused verification the host serves %q", served)
			}
		})
	}
	t.Run("no host", func(t *testing.T) {
		h := newHarness(t)
		var page apiv1.StatusPageView
		h.mustJSON("POST", "/v1/status-pages", `{"slug":"plain","title":"t"}`, http.StatusCreated, &page)
		if page.HostVerification != nil {
			t.Errorf("a page without a host has %+v", page.HostVerification)
		}
		resp, b := h.do("POST", "/v1/status-pages/"+page.ID+"/verify-host", "", "")
		if resp.StatusCode != http.StatusConflict || problemOf(t, b).Type != apiv1.TypeHostNotVerified || !strings.Contains(string(b), "no host to verify") {
			t.Errorf("%d %s", resp.StatusCode, b)
		}
	})
}

// TestChangingTheHostResetsVerification: a PUT keeping the host keeps its
// verification; one changing it starts pending with a new token, and the
// old host's proof proves nothing about the new one.
func TestChangingTheHostResetsVerification(t *testing.T) {
	z := testpeers.NewDNSZone(t)
	h := newHarness(t, withDNS(z))
	get := publicHost(h, status.Options{})
	var page apiv1.StatusPageView
	h.mustJSON("POST", "/v1/status-pages", acmePage, http.StatusCreated, &page)
	z.SetTXT(challenge, page.HostVerification.Value)
	h.mustJSON("POST", "/v1/status-pages/"+page.ID+"/verify-host", "", http.StatusOK, nil)

	var kept apiv1.StatusPageView
	h.mustJSON("PUT", "/v1/status-pages/"+page.ID, acmePage, http.StatusOK, &kept)
	if kept.HostVerification.State != "verified" || kept.HostVerification.Value != page.HostVerification.Value {
		t.Fatalf("PUT with the same host: %+v", kept.HostVerification)
	}

	const newHost = "status.acme-two.example"
	var moved apiv1.StatusPageView
	h.mustJSON("PUT", "/v1/status-pages/"+page.ID, strings.Replace(acmePage, pageHostName, newHost, 1), http.StatusOK, &moved)
	if v := moved.HostVerification; v.State != "pending" || v.Value == page.HostVerification.Value || v.Record != "_mcpmon-challenge."+newHost || v.VerifiedAt != nil {
		t.Fatalf("PUT with a new host: %+v", v)
	}
	// The new name carries the old token: not this host's proof.
	z.SetTXT("_mcpmon-challenge."+newHost, page.HostVerification.Value)
	if resp, b := h.do("POST", "/v1/status-pages/"+page.ID+"/verify-host", "", ""); resp.StatusCode != http.StatusConflict {
		t.Fatalf("the old token at the new name: %d %s", resp.StatusCode, b)
	}
	// Back to the first host: pending again, with yet another token.
	var back apiv1.StatusPageView
	h.mustJSON("PUT", "/v1/status-pages/"+page.ID, acmePage, http.StatusOK, &back)
	if v := back.HostVerification; v.State != "pending" || v.Value == page.HostVerification.Value {
		t.Fatalf("PUT back to the first host: %+v", v)
	}
	h.clock.Advance(status.DefaultTTL)
	for _, host := range []string{pageHostName, newHost} {
		if got := get(host); got != "" {
			t.Errorf("%s serves %q after the host changed", host, got)
		}
	}
}

// TestAnotherTenantCannotVerifyOrLearnTheToken: another tenant's
// verify-host is the 404 of a missing page, and nothing it is answered
// carries the page's token; its own claim of the host gets its own token
// and stays unproven by the owner's record, and once the owner's host is
// verified, the name is taken.
func TestAnotherTenantCannotVerifyOrLearnTheToken(t *testing.T) {
	z := testpeers.NewDNSZone(t)
	ah := newAuthHarness(t, withDNS(z))
	resp, b := ah.call("POST", "/v1/status-pages", ah.keys["a/write"], acmePage)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("create: %d %s", resp.StatusCode, b)
	}
	a := decodeView(t, b)
	token := strings.TrimPrefix(a.HostVerification.Value, "mcpmon-verify=")

	var seenByB []string
	for _, c := range []struct{ method, path, body string }{
		{"POST", "/v1/status-pages/" + a.ID + "/verify-host", ""},
		{"GET", "/v1/status-pages/" + a.ID, ""},
		{"GET", "/v1/status-pages", ""},
		{"GET", "/v1/audit", ""},
	} {
		resp, b := ah.call(c.method, c.path, ah.keys["b/admin"], c.body)
		seenByB = append(seenByB, string(b))
		if c.method == "POST" {
			mresp, mb := ah.call(c.method, "/v1/status-pages/nosuchid/verify-host", ah.keys["b/admin"], "")
			if resp.StatusCode != http.StatusNotFound || problemDetail(b, a.ID) != problemDetail(mb, "nosuchid") {
				t.Errorf("b's verify-host of a's page: %d %s; of a missing one: %d %s", resp.StatusCode, b, mresp.StatusCode, mb)
			}
		}
	}
	// b claims the same host: allowed while a's is pending, with its own token.
	resp, b = ah.call("POST", "/v1/status-pages", ah.keys["b/admin"], `{"slug":"squat","title":"BigCo status","host":"`+pageHostName+`"}`)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("b's claim of a pending host: %d %s", resp.StatusCode, b)
	}
	seenByB = append(seenByB, string(b))
	squat := decodeView(t, b)
	if squat.HostVerification.Value == a.HostVerification.Value {
		t.Fatal("two pages of one host share a token")
	}
	resp, b = ah.call("POST", "/v1/status-pages/"+squat.ID+"/verify-host", ah.keys["b/admin"], "")
	seenByB = append(seenByB, string(b))
	if resp.StatusCode != http.StatusConflict {
		t.Fatalf("b's verify without a record: %d %s", resp.StatusCode, b)
	}
	for _, s := range seenByB {
		if strings.Contains(s, token) {
			t.Fatalf("tenant b was shown a's token: %s", s)
		}
	}

	// The owner publishes its record: a's page is proven, b's is not.
	z.SetTXT(challenge, a.HostVerification.Value)
	if resp, b := ah.call("POST", "/v1/status-pages/"+squat.ID+"/verify-host", ah.keys["b/admin"], ""); resp.StatusCode != http.StatusConflict {
		t.Fatalf("b's verify against a's record: %d %s", resp.StatusCode, b)
	}
	if resp, b := ah.call("POST", "/v1/status-pages/"+a.ID+"/verify-host", ah.keys["a/write"], ""); resp.StatusCode != http.StatusOK {
		t.Fatalf("a's verify: %d %s", resp.StatusCode, b)
	}
	ah.clock.Advance(status.DefaultTTL)
	if got := publicHost(ah.harness, status.Options{})(pageHostName); got != "Acme status" {
		t.Errorf("the host serves %q, want a's page", got)
	}
	// A verified host is taken: a new claim is a 409 on #/host.
	resp, b = ah.call("POST", "/v1/status-pages", ah.keys["b/admin"], `{"slug":"squat-two","title":"t","host":"`+pageHostName+`"}`)
	if resp.StatusCode != http.StatusConflict || !strings.Contains(string(b), `"#/host"`) {
		t.Errorf("a claim of a verified host: %d %s", resp.StatusCode, b)
	}
}

// TestGrandfatheredHostIsStillServed: a page stored with a host before
// hosts were verified (no verification record) is served on its host,
// shown as grandfathered with nothing to publish, verify-host is a 200
// without a lookup, and it stays grandfathered until its host changes.
func TestGrandfatheredHostIsStillServed(t *testing.T) {
	h := newHarness(t) // noDNS: a lookup would be a 503
	doc := []byte(`{"id":"old-page","tenant":"default","slug":"acme","title":"Acme status","host":"` + pageHostName + `",` +
		`"groups":[{"name":"All"}],"createdAt":"2025-01-01T00:00:00Z","updatedAt":"2025-01-01T00:00:00Z"}`)
	if err := h.store.PutObject(t.Context(), store.KindStatusPage, "old-page", doc); err != nil {
		t.Fatal(err)
	}
	if got := publicHost(h, status.Options{})(pageHostName); got != "Acme status" {
		t.Fatalf("a grandfathered host serves %q", got)
	}
	var v apiv1.StatusPageView
	h.mustJSON("GET", "/v1/status-pages/old-page", "", http.StatusOK, &v)
	if hv := v.HostVerification; hv == nil || hv.State != "grandfathered" || hv.Record != "" || hv.Value != "" {
		t.Fatalf("view: %+v", hv)
	}
	h.mustJSON("POST", "/v1/status-pages/old-page/verify-host", "", http.StatusOK, &v)
	h.mustJSON("PUT", "/v1/status-pages/old-page", `{"slug":"acme","title":"Acme status (new)","host":"`+pageHostName+`"}`, http.StatusOK, &v)
	if v.HostVerification.State != "grandfathered" {
		t.Fatalf("a PUT keeping the host: %+v", v.HostVerification)
	}
	// It holds its name against other pages, as a verified host does.
	if resp, b := h.do("POST", "/v1/status-pages", "", `{"slug":"other","title":"t","host":"`+pageHostName+`"}`); resp.StatusCode != http.StatusConflict {
		t.Errorf("a claim of a grandfathered host: %d %s", resp.StatusCode, b)
	}
	h.mustJSON("PUT", "/v1/status-pages/old-page", `{"slug":"acme","title":"t","host":"status.elsewhere.example"}`, http.StatusOK, &v)
	if v.HostVerification.State != "pending" {
		t.Fatalf("a PUT changing the host: %+v", v.HostVerification)
	}
	stored, err := h.store.GetObject(t.Context(), store.KindStatusPage, "old-page")
	if err != nil {
		t.Fatal(err)
	}
	if p, _ := model.DecodeStatusPage(stored); p.HostState() != model.HostPending {
		t.Errorf("stored state %q", p.HostState())
	}
}

// TestUnverifiedHostsServeAndHoldWithoutProof: with host verification
// off, a host set is served at once and holds its name, as before
// verification existed; the API still shows what would prove it.
func TestUnverifiedHostsServeAndHoldWithoutProof(t *testing.T) {
	h := newHarness(t, func(o *api.Options) { o.UnverifiedHosts = true })
	var page apiv1.StatusPageView
	h.mustJSON("POST", "/v1/status-pages", acmePage, http.StatusCreated, &page)
	if page.HostVerification.State != "pending" {
		t.Errorf("view %+v", page.HostVerification)
	}
	if got := publicHost(h, status.Options{UnverifiedHosts: true})(pageHostName); got != "Acme status" {
		t.Errorf("with verification off the host serves %q", got)
	}
	if resp, b := h.do("POST", "/v1/status-pages", "", `{"slug":"other","title":"t","host":"`+pageHostName+`"}`); resp.StatusCode != http.StatusConflict {
		t.Errorf("with verification off a second claim: %d %s, want 409", resp.StatusCode, b)
	}
}

// TestOperatorReleasesAHost: the operator (an admin key of the default
// tenant) takes a verified host back from another tenant's page: the page
// is pending, released by the operator, no longer served, and the name is
// free for the domain's owner to claim and prove; the page's tenant reads
// the release in its own audit log. Any other key, an admin of another
// tenant included, gets the 404 of an unknown path; a host that is not a
// host name is a 400 on #/host.
func TestOperatorReleasesAHost(t *testing.T) {
	z := testpeers.NewDNSZone(t)
	ah := newAuthHarness(t, withDNS(z))
	op, _, err := ah.keyring.Create(t.Context(), auth.NewKey{Name: "operator", Tenant: auth.DefaultTenant, Scope: auth.ScopeAdmin})
	if err != nil {
		t.Fatal(err)
	}
	resp, b := ah.call("POST", "/v1/status-pages", ah.keys["a/write"], acmePage)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("create: %d %s", resp.StatusCode, b)
	}
	a := decodeView(t, b)
	z.SetTXT(challenge, a.HostVerification.Value)
	if resp, b := ah.call("POST", "/v1/status-pages/"+a.ID+"/verify-host", ah.keys["a/write"], ""); resp.StatusCode != http.StatusOK {
		t.Fatalf("verify: %d %s", resp.StatusCode, b)
	}
	release := `{"host":"` + pageHostName + `"}`
	for _, key := range []string{"a/admin", "b/admin"} {
		resp, b := ah.call("POST", "/v1/status-page-hosts/release", ah.keys[key], release)
		if resp.StatusCode != http.StatusNotFound || !strings.Contains(string(b), "no route for") {
			t.Errorf("%s releasing: %d %s, want the 404 of an unknown path", key, resp.StatusCode, b)
		}
	}
	for body, want := range map[string]string{`{"host":""}`: "is required", `{"host":"Status.Acme.Example"}`: "lowercase", `{"host":"10.0.0.1"}`: "not an IP"} {
		resp, b := ah.call("POST", "/v1/status-page-hosts/release", op, body)
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), `"#/host"`) || !strings.Contains(string(b), want) {
			t.Errorf("release %s: %d %s, want 400 on #/host saying %q", body, resp.StatusCode, b, want)
		}
	}
	if resp, b := ah.call("POST", "/v1/status-page-hosts/release", op, `{"host":"status.nobody.example"}`); resp.StatusCode != http.StatusNotFound {
		t.Errorf("release of a host no page has: %d %s", resp.StatusCode, b)
	}

	ah.clock.Advance(time.Minute)
	resp, b = ah.call("POST", "/v1/status-page-hosts/release", op, release)
	var rel apiv1.HostReleaseView
	if resp.StatusCode != http.StatusOK || json.Unmarshal(b, &rel) != nil || len(rel.Released) != 1 || rel.Released[0].ID != a.ID || rel.Released[0].Tenant != "a" {
		t.Fatalf("release: %d %s", resp.StatusCode, b)
	}
	resp, b = ah.call("GET", "/v1/status-pages/"+a.ID, ah.keys["a/read"], "")
	v := decodeView(t, b).HostVerification
	if v.State != "pending" || v.ReleasedBy != "operator" || v.ReleasedAt == nil || !v.ReleasedAt.Equal(t0.Add(time.Minute)) || v.Value != a.HostVerification.Value {
		t.Fatalf("a's page after the release: %d %s", resp.StatusCode, b)
	}
	ah.clock.Advance(status.DefaultTTL)
	if got := publicHost(ah.harness, status.Options{})(pageHostName); got != "" {
		t.Errorf("a released host serves %q", got)
	}
	// Again: nothing left to release, and that is not an error.
	if resp, b := ah.call("POST", "/v1/status-page-hosts/release", op, release); resp.StatusCode != http.StatusOK || !strings.Contains(string(b), `"released":[]`) {
		t.Errorf("a second release: %d %s", resp.StatusCode, b)
	}
	// The name is free: b claims it and proves it with its own record.
	resp, b = ah.call("POST", "/v1/status-pages", ah.keys["b/admin"], `{"slug":"bigco","title":"BigCo status","host":"`+pageHostName+`"}`)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("b's claim of the released host: %d %s", resp.StatusCode, b)
	}
	bp := decodeView(t, b)
	z.SetTXT(challenge, bp.HostVerification.Value)
	if resp, b := ah.call("POST", "/v1/status-pages/"+bp.ID+"/verify-host", ah.keys["b/admin"], ""); resp.StatusCode != http.StatusOK {
		t.Fatalf("b's verify: %d %s", resp.StatusCode, b)
	}
	// Each side's audit log says what happened to it.
	_, b = ah.call("GET", "/v1/audit", ah.keys["a/admin"], "")
	if !strings.Contains(string(b), `"action":"release-host"`) || !strings.Contains(string(b), `"keyId":"operator"`) || !strings.Contains(string(b), a.ID) {
		t.Errorf("a's audit log lacks the release: %s", b)
	}
	_, b = ah.call("GET", "/v1/audit", op, "")
	if !strings.Contains(string(b), `"objectId":"`+pageHostName+`"`) {
		t.Errorf("the operator's audit log lacks the release of the host: %s", b)
	}
}

// TestVerifyHostReprovesAFailingHost: verify-host on a served host whose
// last re-check missed its record looks it up: missing, a 409 that says
// the host is still served; found, the failure is cleared at once. A
// grandfathered host a re-check issued a token to becomes verified.
func TestVerifyHostReprovesAFailingHost(t *testing.T) {
	z := testpeers.NewDNSZone(t)
	h := newHarness(t, withDNS(z))
	put := func(p model.StatusPage) {
		doc, _ := json.Marshal(p)
		if err := h.store.PutObject(t.Context(), store.KindStatusPage, p.ID, doc); err != nil {
			t.Fatal(err)
		}
	}
	failing := model.HostVerification{Host: pageHostName, Token: "tok", VerifiedAt: t0, CheckedAt: t0, FailingSince: t0, Failure: "no TXT record found"}
	put(model.StatusPage{ID: "failing", Tenant: "default", Slug: "failing", Title: "t", Host: pageHostName, HostVerification: &failing, CreatedAt: t0})
	const oldHost = "status.old.example"
	put(model.StatusPage{ID: "old", Tenant: "default", Slug: "old", Title: "t", Host: oldHost, CreatedAt: t0,
		HostVerification: &model.HostVerification{Host: oldHost, Token: "issued", Grandfathered: true, CheckedAt: t0, FailingSince: t0, Failure: "no TXT record found"}})

	resp, b := h.do("POST", "/v1/status-pages/failing/verify-host", "", "")
	if resp.StatusCode != http.StatusConflict || !strings.Contains(string(b), "is still served, but its proof is missing") {
		t.Fatalf("verify-host of a failing host without its record: %d %s", resp.StatusCode, b)
	}
	z.SetTXT(challenge, "mcpmon-verify=tok")
	h.clock.Advance(time.Minute)
	var v apiv1.StatusPageView
	h.mustJSON("POST", "/v1/status-pages/failing/verify-host", "", http.StatusOK, &v)
	if hv := v.HostVerification; hv.State != "verified" || hv.FailingSince != nil || hv.Failure != "" || hv.CheckedAt == nil || !hv.CheckedAt.Equal(t0.Add(time.Minute)) {
		t.Fatalf("after the record is put back: %+v", hv)
	}
	z.SetTXT(model.ChallengeName(oldHost), "mcpmon-verify=issued")
	h.mustJSON("POST", "/v1/status-pages/old/verify-host", "", http.StatusOK, &v)
	if hv := v.HostVerification; hv.State != "verified" || hv.Record != model.ChallengeName(oldHost) {
		t.Fatalf("a grandfathered host with its issued record published: %+v", hv)
	}
}
