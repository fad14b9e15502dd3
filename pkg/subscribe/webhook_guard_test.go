package subscribe_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpmon/mcpmon/alerter/sinks"
	"github.com/mcpmon/mcpmon/pkg/alert"
	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/netguard"
	"github.com/mcpmon/mcpmon/pkg/subscribe"
)

// TestWebhookSubscriberPrivateAddressRefusedAtSend is the send-time half of
// the SSRF guard for webhook subscribers: the API refuses private literals
// when the owner registers one, but a stored subscriber is sent to long
// after, so the client the daemon gives the notifier refuses at dial time
// too (a name that later resolves privately meets the same dial-time check,
// tested with a rebinding resolver in pkg/daemon's hostile target tests).
// The refusal is permanent (no retry budget is spent on it), names no URL,
// and the receiver sees nothing.
func TestWebhookSubscriberPrivateAddressRefusedAtSend(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hits.Add(1)
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(srv.Close)
	port := srv.URL[strings.LastIndexByte(srv.URL, ':'):]
	at := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

	for name, url := range map[string]string{
		"literal loopback":        srv.URL + "/hook?token=s3cret",
		"a name that is loopback": "http://localhost" + port + "/hook?token=s3cret",
	} {
		t.Run(name, func(t *testing.T) {
			hooks := subscribe.NewWebhooks(subscribe.WebhookOptions{Client: sinks.GuardedClient()})
			n := model.SubscriberNotice{
				Key:        "sub-s1-inc1-opened",
				Page:       model.StatusPage{ID: "p1", Slug: "acme"},
				Subscriber: model.Subscriber{ID: "s1", Kind: model.SubscriberWebhook, URL: url, State: model.SubscriberConfirmed},
				Endpoint:   model.Endpoint{ID: "e1", Name: "billing", Slug: "billing"},
				Incident:   model.Incident{ID: "inc1", OpenedAt: at},
				Event:      model.IncidentEvent{Name: model.IncidentEventOpened, Kind: model.IncidentEventOpened, At: at},
			}
			err := hooks.NotifySubscriber(t.Context(), n)
			if err == nil {
				t.Fatal("a private receiver was accepted")
			}
			if !errors.Is(err, netguard.ErrBlocked) || !errors.Is(err, alert.ErrPermanent) {
				t.Fatalf("err = %v, want a permanent netguard.ErrBlocked", err)
			}
			if strings.Contains(err.Error(), "s3cret") || strings.Contains(err.Error(), "/hook") {
				t.Fatalf("the error names the URL: %v", err)
			}
			if hits.Load() != 0 {
				t.Fatalf("the receiver got %d requests", hits.Load())
			}
		})
	}
}
