package prober

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mcpmon/mcpmon/pkg/msg"
)

func TestDecideBlindness(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 22, 0, 0, 0, time.UTC)
	at := func(i int) time.Time { return t0.Add(time.Duration(i) * time.Second) }
	type step struct {
		reached bool
		change  BlindChange
		blind   bool
	}
	const F, R = false, true
	cases := []struct {
		name  string
		steps []step
		// since is the spell's start as the last step leaves it.
		since time.Time
	}{
		{"sighted stays sighted", []step{{R, NoChange, false}, {R, NoChange, false}}, time.Time{}},
		{"fewer failures than blindAfter are not blind",
			[]step{{F, NoChange, false}, {F, NoChange, false}, {R, NoChange, false}, {F, NoChange, false}}, at(3)},
		{"blindAfter failures in a row make blind, since the first of them",
			[]step{{R, NoChange, false}, {F, NoChange, false}, {F, NoChange, false}, {F, WentBlind, true}}, at(1)},
		{"more failures while blind change nothing",
			[]step{{F, NoChange, false}, {F, NoChange, false}, {F, WentBlind, true}, {F, NoChange, true}, {F, NoChange, true}}, at(0)},
		{"one reaching round is not recovery",
			[]step{{F, NoChange, false}, {F, NoChange, false}, {F, WentBlind, true}, {R, NoChange, true}, {F, NoChange, true}, {R, NoChange, true}}, at(0)},
		{"sightedAfter reaching rounds in a row recover",
			[]step{{F, NoChange, false}, {F, NoChange, false}, {F, WentBlind, true}, {R, NoChange, true}, {R, Recovered, false}, {R, NoChange, false}}, time.Time{}},
		{"a new spell after recovery starts at its own first failure",
			[]step{{F, NoChange, false}, {F, NoChange, false}, {F, WentBlind, true}, {R, NoChange, true}, {R, Recovered, false},
				{F, NoChange, false}, {F, NoChange, false}, {F, WentBlind, true}}, at(5)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var b Blindness
			for i, s := range c.steps {
				var change BlindChange
				b, change = DecideBlindness(b, s.reached, at(i), 3, 2)
				if change != s.change || b.Blind != s.blind {
					t.Fatalf("step %d (reached=%v): change %v blind %v, want %v %v (state %+v)", i, s.reached, change, b.Blind, s.change, s.blind, b)
				}
			}
			if !b.Since.Equal(c.since) {
				t.Fatalf("since = %v, want %v", b.Since, c.since)
			}
		})
	}
}

func TestCanaryAnyHTTPAnswerIsReachable(t *testing.T) {
	p := testProber(t, nil)
	check := newCanaryCheck(p, 2*time.Second)
	serverError := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "broken", http.StatusInternalServerError)
	}))
	defer serverError.Close()
	redirect := httptest.NewServer(http.RedirectHandler("http://192.0.2.1/elsewhere", http.StatusFound))
	defer redirect.Close()
	reset := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		conn, _, _ := w.(http.Hijacker).Hijack()
		_ = conn.Close() // no HTTP answer at all
	}))
	defer reset.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := "http://" + ln.Addr().String() + "/"
	_ = ln.Close()

	for _, c := range []struct {
		name, url string
		reached   bool
	}{
		{"500", serverError.URL, true},
		{"redirect, not followed", redirect.URL, true},
		{"connection closed without an answer", reset.URL, false},
		{"refused", refused, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			if err := check(t.Context(), c.url); (err == nil) != c.reached {
				t.Fatalf("check(%s) = %v, want reached %v", c.url, err, c.reached)
			}
		})
	}
}

func TestCanaryURLsPassTheTargetGuard(t *testing.T) {
	guarded := New(Options{})
	for _, raw := range []string{"http://127.0.0.1:8080/", "http://169.254.169.254/latest", "ftp://example.com/", "example.com"} {
		if _, err := NewCanary(guarded, CanaryOptions{URLs: []string{raw}}); !errors.Is(err, ErrCanaryURL) {
			t.Errorf("NewCanary(%q) = %v, want ErrCanaryURL", raw, err)
		}
	}
	if _, err := NewCanary(guarded, CanaryOptions{URLs: []string{"https://example.com/"}}); err != nil {
		t.Errorf("public canary refused: %v", err)
	}
	allowed := New(Options{AllowPrivateTargets: true})
	if _, err := NewCanary(allowed, CanaryOptions{URLs: []string{"http://127.0.0.1:8080/"}}); err != nil {
		t.Errorf("loopback canary refused with private targets allowed: %v", err)
	}
}

// fakeNet is the canaries' network in the synctest tests: each URL is up
// or down.
type fakeNet struct {
	mu   sync.Mutex
	down map[string]bool
	n    atomic.Int64 // checks made
}

func (f *fakeNet) set(url string, down bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.down[url] = down
}

func (f *fakeNet) check(ctx context.Context, url string) error {
	f.n.Add(1)
	f.mu.Lock()
	down := f.down[url]
	f.mu.Unlock()
	if down {
		<-ctx.Done() // a dead network answers nothing: the round's timeout ends it
		return ctx.Err()
	}
	return nil
}

type noticesFake struct {
	mu   sync.Mutex
	got  []msg.BlindSpell
	fail bool
}

func (n *noticesFake) NotifyBlindness(_ context.Context, s msg.BlindSpell) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.fail {
		return errors.New("sink down")
	}
	n.got = append(n.got, s)
	return nil
}

func (n *noticesFake) all() []msg.BlindSpell {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]msg.BlindSpell(nil), n.got...)
}

func newTestCanary(t *testing.T, fn *fakeNet, notices BlindNotifier) *Canary {
	t.Helper()
	p := New(Options{AllowPrivateTargets: true, Region: "eu"})
	c, err := NewCanary(p, CanaryOptions{URLs: []string{"http://a.example/", "http://b.example/"},
		Interval: 30 * time.Second, Timeout: 5 * time.Second, Recheck: time.Second, Notifier: notices})
	if err != nil {
		t.Fatal(err)
	}
	c.check = fn.check
	return c
}

func TestCanaryBlindOnlyWhenEveryCanaryFails(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fn := &fakeNet{down: map[string]bool{}}
		notices := &noticesFake{}
		c := newTestCanary(t, fn, notices)
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		go func() { _ = c.Run(ctx) }()

		fn.set("http://a.example/", true)
		time.Sleep(10 * time.Minute) // fake time: twenty rounds with one canary answering
		if _, blind := c.Blind(); blind || len(notices.all()) != 0 {
			t.Fatalf("blind with one canary answering (notices %v)", notices.all())
		}

		lost := time.Now()
		fn.set("http://b.example/", true)
		// The next scheduled round fails, then two rechecks: blind within
		// one interval plus three rounds.
		time.Sleep(30*time.Second + 3*(5*time.Second+time.Second))
		since, blind := c.Blind()
		if !blind || since.Before(lost) || since.After(lost.Add(30*time.Second)) {
			t.Fatalf("Blind() = %v, %v after every canary went; want blind since the first failed round after %v", since, blind, lost)
		}
		time.Sleep(time.Hour)
		if got := notices.all(); len(got) != 1 || got[0].Region != "eu" || !got[0].Since.Equal(since) || !got[0].Until.IsZero() {
			t.Fatalf("notices after an hour blind = %v, want one blind notice since %v", got, since)
		}

		fn.set("http://a.example/", false)
		time.Sleep(2*30*time.Second + time.Second)
		if _, blind := c.Blind(); blind {
			t.Fatal("still blind two rounds after a canary answered again")
		}
		time.Sleep(time.Hour)
		got := notices.all()
		if len(got) != 2 || got[1].ID() != got[0].ID() || got[1].Until.IsZero() {
			t.Fatalf("notices = %v, want the blind one and one recovered notice of the same spell", got)
		}
		cancel()
		synctest.Wait()
	})
}

func TestCanaryKeepsANoticeOwedUntilItIsDelivered(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fn := &fakeNet{down: map[string]bool{"http://a.example/": true, "http://b.example/": true}}
		notices := &noticesFake{fail: true}
		c := newTestCanary(t, fn, notices)
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		go func() { _ = c.Run(ctx) }()
		time.Sleep(5 * time.Minute)
		if _, blind := c.Blind(); !blind {
			t.Fatal("not blind with every canary down")
		}
		notices.mu.Lock()
		notices.fail = false
		notices.mu.Unlock()
		time.Sleep(time.Minute)
		if got := notices.all(); len(got) != 1 {
			t.Fatalf("notices once the sink is back = %v, want the one owed", got)
		}
		cancel()
		synctest.Wait()
	})
}

// TestResultsBeforeBlindnessIsEstablishedAreMarked: a probe that failed at
// the network level in the first seconds of an outage of the prober's own
// network, before BlindAfter canary rounds have failed, is held until the
// canaries have had their word and goes out blind, not down.
func TestResultsBeforeBlindnessIsEstablishedAreMarked(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fn := &fakeNet{down: map[string]bool{}}
		c := newTestCanary(t, fn, nil)
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		go func() { _ = c.Run(ctx) }()
		synctest.Wait() // the first round reached both canaries
		w := &Worker{canary: c}

		fn.set("http://a.example/", true)
		fn.set("http://b.example/", true)
		res := msg.ProbeResult{Status: msg.StatusDown, Class: ClassTimeout, FinishedAt: time.Now()}
		start := time.Now()
		w.markBlind(t.Context(), &res)
		if !res.Blind || res.BlindSince.IsZero() {
			t.Fatalf("result failed with the network = %+v, want it marked blind", res)
		}
		if waited := time.Since(start); waited > c.SettleBound() {
			t.Fatalf("held %s, more than the bound %s", waited, c.SettleBound())
		}

		// Back: a target failing on its own is not held past one round
		// and not marked.
		fn.set("http://a.example/", false)
		fn.set("http://b.example/", false)
		time.Sleep(2 * time.Minute)
		own := msg.ProbeResult{Status: msg.StatusDown, Class: ClassRefused, FinishedAt: time.Now()}
		start = time.Now()
		w.markBlind(t.Context(), &own)
		if own.Blind {
			t.Fatalf("a target's own failure with the canaries answering is marked blind: %+v", own)
		}
		if waited := time.Since(start); waited > time.Second+c.opts.Timeout {
			t.Fatalf("held a sighted failure %s", waited)
		}
		// An answer from the target is never held.
		checks := fn.n.Load()
		answered := msg.ProbeResult{Status: msg.StatusDown, Class: ClassHTTP5xx, FinishedAt: time.Now()}
		w.markBlind(t.Context(), &answered)
		if answered.Blind || fn.n.Load() != checks {
			t.Fatal("a 5xx answer waited for the canaries")
		}
		cancel()
		synctest.Wait()
	})
}

func TestBlindProberMarksEveryResult(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fn := &fakeNet{down: map[string]bool{"http://a.example/": true, "http://b.example/": true}}
		c := newTestCanary(t, fn, nil)
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		go func() { _ = c.Run(ctx) }()
		time.Sleep(time.Minute)
		w := &Worker{canary: c}
		up := msg.ProbeResult{Status: msg.StatusUp, Class: ClassOK, FinishedAt: time.Now()}
		w.markBlind(t.Context(), &up)
		since, _ := c.Blind()
		if !up.Blind || !up.BlindSince.Equal(since) {
			t.Fatalf("an up result while blind = %+v, want it marked blind since %v", up, since)
		}
		cancel()
		synctest.Wait()
	})
}
