package api_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mcpmon/mcpmon/pkg/api"
	apiv1 "github.com/mcpmon/mcpmon/pkg/api/v1"
	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/store"
)

// TestSubscribersShowCountsAndMaskedAddressesOnly: the page's tenant
// sees how many subscribers its page has and each one masked; the sealed
// address never leaves; another tenant's key gets 404.
func TestSubscribersShowCountsAndMaskedAddressesOnly(t *testing.T) {
	ah := newAuthHarness(t)
	ctx := t.Context()
	page, _ := json.Marshal(model.StatusPage{ID: "pg1", Tenant: "a", Slug: "acme", Title: "Acme"})
	if err := ah.store.PutObject(ctx, store.KindStatusPage, "pg1", page); err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	for _, s := range []model.Subscriber{
		{ID: "s1", Page: "pg1", State: model.SubscriberConfirmed, Address: "sealed:v1:abcd:secret-bytes", Masked: "j***@example.com", CreatedAt: at, ConfirmedAt: at},
		{ID: "s2", Page: "pg1", State: model.SubscriberPending, Address: "sealed:v1:abcd:more-bytes", Masked: "k***@example.org", CreatedAt: at},
	} {
		doc, _ := json.Marshal(s)
		if err := ah.store.PutObject(ctx, store.KindSubscriber, s.ID, doc); err != nil {
			t.Fatal(err)
		}
	}
	resp, body := ah.call("GET", "/v1/status-pages/pg1/subscribers", ah.keys["a/read"], "")
	var v apiv1.SubscribersView
	if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &v) != nil {
		t.Fatalf("list: %d %s", resp.StatusCode, body)
	}
	if v.Confirmed != 1 || v.Pending != 1 || len(v.Items) != 2 || v.Items[0].Address != "j***@example.com" || v.Items[1].ConfirmedAt != nil {
		t.Fatalf("view %+v: want 1 confirmed, 1 pending, masked", v)
	}
	if strings.Contains(string(body), "sealed:") {
		t.Fatalf("the stored address left the API: %s", body)
	}
	if resp, body := ah.call("GET", "/v1/status-pages/pg1/subscribers", ah.keys["b/admin"], ""); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("another tenant: %d %s, want 404", resp.StatusCode, body)
	}
}

// fakeSealer marks what it seals, so a test can see a field sealed.
type fakeSealer struct{}

func (fakeSealer) Seal(p, _ []byte) string { return "sealed:test:" + string(p) }
func (fakeSealer) Open(s string, _ []byte) ([]byte, error) {
	return []byte(strings.TrimPrefix(s, "sealed:test:")), nil
}

// TestWebhookSubscribersAreTheTenantsOwn: the page's tenant adds a
// webhook subscriber (confirmed, URL shown as scheme and host, secret
// never shown, both sealed at rest), lists it beside the e-mail ones and
// removes it; a bad URL or secret is a 400 naming the field; another
// tenant's key gets 404 for the page and for the subscriber; the page's
// cap counts webhook subscribers.
func TestWebhookSubscribersAreTheTenantsOwn(t *testing.T) {
	ah := newAuthHarness(t, func(o *api.Options) { o.SubscriberSealer = fakeSealer{}; o.MaxSubscribersPerPage = 2 })
	ctx := t.Context()
	page, _ := json.Marshal(model.StatusPage{ID: "pg1", Tenant: "a", Slug: "acme", Title: "Acme"})
	if err := ah.store.PutObject(ctx, store.KindStatusPage, "pg1", page); err != nil {
		t.Fatal(err)
	}
	const hook = `{"webhookUrl":"https://hooks.example.com/t/s3cr3t-path?token=abc","secret":"shh-signing-key"}`
	resp, body := ah.call("POST", "/v1/status-pages/pg1/subscribers", ah.keys["a/write"], hook)
	var v apiv1.SubscriberView
	if resp.StatusCode != http.StatusCreated || json.Unmarshal(body, &v) != nil {
		t.Fatalf("create: %d %s", resp.StatusCode, body)
	}
	if v.Kind != "webhook" || v.State != "confirmed" || v.ConfirmedAt == nil || v.Address != "https://hooks.example.com" {
		t.Fatalf("created %+v: want a confirmed webhook shown as scheme and host", v)
	}
	for _, leak := range []string{"s3cr3t-path", "token=abc", "shh-signing-key"} {
		if strings.Contains(string(body), leak) {
			t.Fatalf("create response shows %q: %s", leak, body)
		}
	}
	doc, err := ah.store.GetObject(ctx, store.KindSubscriber, v.ID)
	if err != nil {
		t.Fatal(err)
	}
	stored, _ := model.DecodeSubscriber(doc)
	if !strings.HasPrefix(stored.URL, "sealed:") || !strings.HasPrefix(stored.Secret, "sealed:") || stored.Page != "pg1" {
		t.Fatalf("stored %+v: want URL and secret sealed, of page pg1", stored)
	}

	for _, tt := range []struct{ body, pointer string }{
		{`{"webhookUrl":"http://hooks.example.com/x"}`, "#/webhookUrl"},
		{`{"webhookUrl":"https://u:p@hooks.example.com/x"}`, "#/webhookUrl"},
		{`{"webhookUrl":"/relative"}`, "#/webhookUrl"},
		{`{"webhookUrl":"https://hooks.example.com/x","secret":"` + strings.Repeat("x", model.MaxWebhookSecret+1) + `"}`, "#/secret"},
	} {
		resp, body := ah.call("POST", "/v1/status-pages/pg1/subscribers", ah.keys["a/write"], tt.body)
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), `"pointer":"`+tt.pointer+`"`) {
			t.Errorf("POST %s: %d %s, want 400 naming %s", tt.body, resp.StatusCode, body, tt.pointer)
		}
	}
	if resp, body := ah.call("POST", "/v1/status-pages/pg1/subscribers", ah.keys["a/write"], `{"webhookUrl":"https://x.example.com","extra":1}`); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("unknown member: %d %s, want 400", resp.StatusCode, body)
	}
	if resp, body := ah.call("POST", "/v1/status-pages/pg1/subscribers", ah.keys["b/admin"], hook); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("another tenant's create: %d %s, want 404", resp.StatusCode, body)
	}
	if resp, body := ah.call("DELETE", "/v1/status-pages/pg1/subscribers/"+v.ID, ah.keys["b/admin"], ""); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("another tenant's delete: %d %s, want 404", resp.StatusCode, body)
	}

	resp, body = ah.call("GET", "/v1/status-pages/pg1/subscribers", ah.keys["a/read"], "")
	var list apiv1.SubscribersView
	if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &list) != nil || list.Confirmed != 1 || len(list.Items) != 1 || list.Items[0].Kind != "webhook" ||
		list.Items[0].Address != "https://hooks.example.com" {
		t.Fatalf("list: %d %s, want the one webhook subscriber", resp.StatusCode, body)
	}
	if strings.Contains(string(body), "sealed:") || strings.Contains(string(body), "s3cr3t") {
		t.Fatalf("list shows a stored secret: %s", body)
	}

	// The cap (2) counts the webhook subscriber.
	if resp, body := ah.call("POST", "/v1/status-pages/pg1/subscribers", ah.keys["a/write"], `{"webhookUrl":"https://two.example.com/h"}`); resp.StatusCode != http.StatusCreated {
		t.Fatalf("second: %d %s", resp.StatusCode, body)
	}
	if resp, body := ah.call("POST", "/v1/status-pages/pg1/subscribers", ah.keys["a/write"], `{"webhookUrl":"https://three.example.com/h"}`); resp.StatusCode != http.StatusConflict {
		t.Fatalf("past the cap: %d %s, want 409", resp.StatusCode, body)
	}

	if resp, body := ah.call("DELETE", "/v1/status-pages/pg1/subscribers/"+v.ID, ah.keys["a/write"], ""); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("delete: %d %s", resp.StatusCode, body)
	}
	if _, err := ah.store.GetObject(ctx, store.KindSubscriber, v.ID); !errors.Is(err, model.ErrNotFound) {
		t.Fatalf("after delete: %v, want not found", err)
	}
	if resp, body := ah.call("DELETE", "/v1/status-pages/pg1/subscribers/"+v.ID, ah.keys["a/write"], ""); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("second delete: %d %s, want 404", resp.StatusCode, body)
	}
}

// TestDeletingAPageDeletesItsSubscribers: DELETE of a status page deletes
// its subscribers of both kinds, confirmed or pending; another page's
// subscribers stay.
func TestDeletingAPageDeletesItsSubscribers(t *testing.T) {
	ah := newAuthHarness(t, func(o *api.Options) { o.SubscriberSealer = fakeSealer{} })
	ctx := t.Context()
	var pages []string
	for _, slug := range []string{"gone", "kept"} {
		resp, body := ah.call("POST", "/v1/status-pages", ah.keys["a/write"], `{"slug":"`+slug+`","title":"`+slug+`","groups":[{"name":"All"}]}`)
		var p struct{ ID string }
		if resp.StatusCode != http.StatusCreated || json.Unmarshal(body, &p) != nil {
			t.Fatalf("create page %s: %d %s", slug, resp.StatusCode, body)
		}
		pages = append(pages, p.ID)
		if resp, body := ah.call("POST", "/v1/status-pages/"+p.ID+"/subscribers", ah.keys["a/write"], `{"webhookUrl":"https://hooks.example.com/`+slug+`"}`); resp.StatusCode != http.StatusCreated {
			t.Fatalf("webhook subscriber of %s: %d %s", slug, resp.StatusCode, body)
		}
		at := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
		for i, state := range []model.SubscriberState{model.SubscriberConfirmed, model.SubscriberPending} {
			doc, _ := json.Marshal(model.Subscriber{ID: slug + "-mail-" + string(rune('0'+i)), Page: p.ID, State: state,
				Address: "sealed:test:x@example.com", Masked: "x***@example.com", CreatedAt: at, ConfirmedAt: at})
			if err := ah.store.PutObject(ctx, store.KindSubscriber, slug+"-mail-"+string(rune('0'+i)), doc); err != nil {
				t.Fatal(err)
			}
		}
	}
	if resp, body := ah.call("DELETE", "/v1/status-pages/"+pages[0], ah.keys["a/write"], ""); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("delete page: %d %s", resp.StatusCode, body)
	}
	for i, want := range []int{0, 3} {
		if n, err := ah.store.CountObjectsOf(ctx, store.KindSubscriber, pages[i]); err != nil || n != want {
			t.Fatalf("page %d: %d subscribers (%v), want %d", i, n, err, want)
		}
	}
	docs, err := ah.store.ListObjects(ctx, store.KindSubscriber)
	if err != nil || len(docs) != 3 {
		t.Fatalf("%d subscribers stored (%v), want the kept page's 3", len(docs), err)
	}
}
