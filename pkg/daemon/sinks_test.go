package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/mcpmon/mcpmon/alerter/sinks"
	"github.com/mcpmon/mcpmon/pkg/alert"
	"github.com/mcpmon/mcpmon/pkg/config"
	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/netguard"
)

// hitCounter is a real local receiver counting the requests that reach it.
type hitCounter struct {
	mu   sync.Mutex
	hits map[string]int
}

func (h *hitCounter) ServeHTTP(_ http.ResponseWriter, r *http.Request) {
	h.mu.Lock()
	h.hits[r.URL.Path]++
	h.mu.Unlock()
}

func (h *hitCounter) get(path string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.hits[path]
}

// TestEndpointSinksGuardedWhenSending: a per-endpoint sink stored with a
// name that resolves to loopback (one registered before validation refused
// it, or a DNS name an attacker controls) is refused when it connects, as a
// permanent failure, with no request reaching the receiver; the operator's
// global sink at the same address is trusted and delivers; with
// --allow-private-targets the endpoint's sink delivers too.
func TestEndpointSinksGuardedWhenSending(t *testing.T) {
	hc := &hitCounter{hits: map[string]int{}}
	rcv := httptest.NewServer(hc)
	defer rcv.Close()
	_, port, _ := net.SplitHostPort(rcv.Listener.Addr().String())
	smtp, err := (&net.ListenConfig{}).Listen(t.Context(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer smtp.Close()
	smtpConns := make(chan struct{}, 1)
	go func() {
		if c, err := smtp.Accept(); err == nil {
			smtpConns <- struct{}{}
			c.Close()
		}
	}()
	_, smtpPort, _ := net.SplitHostPort(smtp.Addr().String())

	ep := model.Endpoint{ID: "ep1", Sinks: json.RawMessage(fmt.Sprintf(`[
		{"name": "own", "type": "webhook", "url": "http://localhost:%s/own"},
		{"name": "own-mail", "type": "email", "smtpAddr": "localhost:%s", "smtpTLS": "none", "from": "a@b.example", "to": ["c@d.example"]}
	]`, port, smtpPort))}
	n := alert.Notification{Key: "alert-ep1-ep1-x:open:own", Kind: alert.KindOpen, EndpointID: "ep1", IncidentID: "ep1-x"}

	resolve := func(t *testing.T, allowPrivate bool) map[string]alert.Sink {
		t.Helper()
		o := config.Defaults()
		o.WebhookURL = model.SecretURL(rcv.URL + "/global")
		o.AllowPrivateTargets = allowPrivate
		d := &Daemon{opts: o, log: slog.New(slog.DiscardHandler)}
		set, err := d.sinks()
		if err != nil {
			t.Fatal(err)
		}
		got, err := set.forEndpoint(t.Context(), ep)
		if err != nil {
			t.Fatal(err)
		}
		byName := map[string]alert.Sink{}
		for _, s := range got {
			byName[s.Name()] = s
		}
		if len(byName) != 3 {
			t.Fatalf("sinks %v, want the global one and the endpoint's two", byName)
		}
		return byName
	}

	t.Run("guarded", func(t *testing.T) {
		ss := resolve(t, false)
		for _, name := range []string{"own", "own-mail"} {
			err := ss[name].Notify(t.Context(), n)
			if !errors.Is(err, netguard.ErrBlocked) || !errors.Is(err, alert.ErrPermanent) {
				t.Errorf("sink %s: Notify = %v, want a permanent netguard.ErrBlocked", name, err)
			}
		}
		if h := hc.get("/own"); h != 0 {
			t.Fatalf("the endpoint's webhook reached the receiver %d times", h)
		}
		select {
		case <-smtpConns:
			t.Fatal("the endpoint's email sink connected to the local SMTP listener")
		default:
		}
		if err := ss[sinks.FlagWebhookName].Notify(t.Context(), n); err != nil || hc.get("/global") != 1 {
			t.Fatalf("global sink: %v, %d deliveries, want 1: operator sinks are not guarded", err, hc.get("/global"))
		}
	})
	t.Run("allow-private-targets", func(t *testing.T) {
		ss := resolve(t, true)
		if err := ss["own"].Notify(context.WithoutCancel(t.Context()), n); err != nil || hc.get("/own") != 1 {
			t.Fatalf("endpoint sink with private targets allowed: %v, %d deliveries, want 1", err, hc.get("/own"))
		}
	})
}

// TestEndpointSinksCountedByType: per-endpoint sinks keep their own names
// (their ledger keys) but are counted in metrics under their type, so
// user-chosen names cannot grow the alert series without bound; an edit
// replaces the endpoint's cached sinks rather than adding to them.
func TestEndpointSinksCountedByType(t *testing.T) {
	o := config.Defaults()
	o.WebhookURL = model.SecretURL("http://127.0.0.1:9/global")
	d := &Daemon{opts: o, log: slog.New(slog.DiscardHandler)}
	set, err := d.sinks()
	if err != nil {
		t.Fatal(err)
	}
	ep := model.Endpoint{ID: "ep1", Sinks: json.RawMessage(`[{"name": "team-a-hook", "type": "webhook", "url": "https://hooks.example/a"}]`)}
	labels := func() map[string]string {
		t.Helper()
		got, err := set.forEndpoint(t.Context(), ep)
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]string{}
		for _, s := range got {
			m[s.Name()] = alert.MetricLabel(s)
		}
		return m
	}
	if got := labels(); got["webhook"] != "webhook" || got["team-a-hook"] != "endpoint:webhook" {
		t.Fatalf("metric labels by sink name = %v", got)
	}
	ep.Sinks = json.RawMessage(`[{"name": "team-b-hook", "type": "slack", "url": "https://hooks.example/b"}]`)
	if got := labels(); got["team-b-hook"] != "endpoint:slack" || got["team-a-hook"] != "" {
		t.Fatalf("after the edit, metric labels by sink name = %v", got)
	}
}
