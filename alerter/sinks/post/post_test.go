package post

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mcpmon/mcpmon/pkg/alert"
)

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	for _, tc := range []struct {
		in   string
		want time.Duration
	}{
		{"", DefaultRetryAfter},
		{"5", 5 * time.Second},
		{" 1.5 ", 1500 * time.Millisecond},
		{"0", time.Second}, // never a hot loop
		{"-3", DefaultRetryAfter},
		{"soon", DefaultRetryAfter},
		{now.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second},
		{now.Add(-time.Hour).Format(http.TimeFormat), time.Second},
		{"86400", MaxRetryAfter},
	} {
		if got := RetryAfter(tc.in, now); got != tc.want {
			t.Errorf("RetryAfter(%q) = %s, want %s", tc.in, got, tc.want)
		}
	}
}

func TestScrub(t *testing.T) {
	u := "https://user:hunter2pass@hooks.example.com/services/T0/B0/PATHTOKEN123?token=QUERYTOKEN456&x=1"
	msg := "echo: " + u + " | PATHTOKEN123 | QUERYTOKEN456 | hunter2pass | SECRETVALUE | host hooks.example.com"
	got := Scrub(msg, u, []string{"SECRETVALUE", "ab"})
	for _, leak := range []string{"PATHTOKEN123", "QUERYTOKEN456", "hunter2pass", "SECRETVALUE", "/services/T0"} {
		if strings.Contains(got, leak) {
			t.Errorf("Scrub left %q in %q", leak, got)
		}
	}
	if !strings.Contains(got, "host hooks.example.com") || !strings.Contains(Scrub("about", "", []string{"ab"}), "about") {
		t.Errorf("Scrub redacted short or ordinary words: %q", got)
	}
}

func TestClient(t *testing.T) {
	if c := Client(nil, 3*time.Second); c.Timeout != 3*time.Second || c.CheckRedirect == nil {
		t.Errorf("nil client: timeout %s, redirect policy set %v", c.Timeout, c.CheckRedirect != nil)
	}
	shared := &http.Client{Timeout: time.Minute}
	if c := Client(shared, 3*time.Second); c.Timeout != 3*time.Second || c == shared {
		t.Errorf("long-timeout client not capped (or modified in place)")
	}
	if shared.Timeout != time.Minute || shared.CheckRedirect != nil {
		t.Error("Client modified the caller's client")
	}
	if c := Client(&http.Client{Timeout: time.Second}, 3*time.Second); c.Timeout != time.Second {
		t.Errorf("shorter timeout not kept: %s", c.Timeout)
	}
}

func TestDoSetsDefaultsAndRejectsBadURL(t *testing.T) {
	var ct, ua string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ct, ua = r.Header.Get("Content-Type"), r.Header.Get("User-Agent")
		_, _ = w.Write([]byte("fine"))
	}))
	defer srv.Close()
	resp, err := Do(context.Background(), Client(nil, time.Second), Request{Sink: "s", URL: srv.URL, Body: []byte(`{}`)})
	if err != nil || resp.Status != 200 || string(resp.Body) != "fine" {
		t.Fatalf("Do = %+v, %v", resp, err)
	}
	if ct != "application/json" || ua != "mcpmon-alerter" {
		t.Errorf("Content-Type %q, User-Agent %q", ct, ua)
	}
	_, err = Do(context.Background(), Client(nil, time.Second), Request{Sink: "s", URL: "http://h/\x7fTOKEN-IN-BAD-URL"})
	if !errors.Is(err, alert.ErrPermanent) || strings.Contains(err.Error(), "TOKEN-IN-BAD-URL") {
		t.Errorf("bad URL: %v, want permanent without the URL", err)
	}
	if _, err := Do(context.Background(), nil, Request{Sink: "s", URL: srv.URL}); err == nil {
		t.Error("nil client accepted")
	}
}

func TestCanceledContextIsNotPermanent(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Do(ctx, Client(nil, time.Second), Request{Sink: "s", URL: srv.URL + "/PATHTOKEN123"})
	if !errors.Is(err, context.Canceled) || errors.Is(err, alert.ErrPermanent) || strings.Contains(err.Error(), "PATHTOKEN123") {
		t.Errorf("canceled: %v, want context.Canceled kept, not permanent, no URL", err)
	}
}
