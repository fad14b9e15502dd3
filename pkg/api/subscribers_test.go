package api_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

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
