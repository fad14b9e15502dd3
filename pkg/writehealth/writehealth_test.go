package writehealth

import (
	"bytes"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpmon/mcpmon/pkg/clock"
)

func TestHealthHoldsAFailureAndLogsItOncePerHold(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC))
	var logs bytes.Buffer
	h := New(Options{What: "the store's file /d/store.db", Fix: "free space on its disk", Now: clk.Now,
		Log: slog.New(slog.NewTextHandler(&logs, nil))})
	if err := h.Check(); err != nil {
		t.Fatalf("Check before any failure: %v", err)
	}
	disk := errors.New("write /d/store.db: no space left on device")
	for range 5 {
		h.Failed(disk)
		clk.Advance(time.Second)
	}
	if n := h.Failures(); n != 5 {
		t.Errorf("Failures = %d, want 5", n)
	}
	if n := strings.Count(logs.String(), "level=ERROR"); n != 1 {
		t.Errorf("%d error lines for 5 failures within %s, want 1:\n%s", n, Hold, logs.String())
	}
	err := h.Check()
	if err == nil || !strings.Contains(err.Error(), "/d/store.db") || !strings.Contains(err.Error(), "no space left") || !strings.Contains(err.Error(), "free space") {
		t.Fatalf("Check right after failures = %v, want the backend, the error and what to do", err)
	}
	clk.Advance(Hold - 2*time.Second) // Hold-1s after the last failure
	if h.Check() == nil {
		t.Fatalf("Check %s after the last failure is nil, want it held for %s", Hold-time.Second, Hold)
	}
	clk.Advance(time.Second)
	if err := h.Check(); err != nil {
		t.Fatalf("Check %s after the last failure: %v, want ready again", Hold, err)
	}
	h.Failed(disk)
	if n := strings.Count(logs.String(), "level=ERROR"); n != 2 {
		t.Errorf("a failure %s after the first logged: %d error lines, want 2", Hold, n)
	}
}

func TestStillNamedReportsADeletedOrReplacedFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "store.db")
	if err := os.WriteFile(path, []byte("a"), 0o600); err != nil {
		t.Fatal(err)
	}
	opened, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("written since"), 0o600); err != nil { // the same file, written
		t.Fatal(err)
	}
	if err := StillNamed(opened, path); err != nil {
		t.Fatalf("the file written in place: %v, want nil", err)
	}
	other := filepath.Join(dir, "other.db")
	if err := os.WriteFile(other, []byte("b"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(other, path); err != nil {
		t.Fatal(err)
	}
	if err := StillNamed(opened, path); err == nil || !strings.Contains(err.Error(), "replaced") {
		t.Errorf("another file renamed over it: %v, want it reported replaced", err)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := StillNamed(opened, path); err == nil || !strings.Contains(err.Error(), path+" was deleted") || !strings.Contains(err.Error(), "backup") {
		t.Errorf("the file deleted: %v, want it named, reported deleted and what to do", err)
	}
}
