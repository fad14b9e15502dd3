package testpeers

import (
	"os/exec"
	"testing"
)

// Tmpfs mounts a tmpfs of size (mount's syntax: "512k", "64m") on a new
// directory for the test: a disk that fills up for real. It skips the
// test when this process may not mount (it needs root, CAP_SYS_ADMIN).
// resize grows or shrinks it in place.
func Tmpfs(t testing.TB, size string) (dir string, resize func(size string)) {
	t.Helper()
	dir = t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("mount a %s tmpfs (a disk that fills up): %v %s; this test needs root (CAP_SYS_ADMIN)", size, err, out)
	}
	t.Cleanup(func() { _ = exec.Command("umount", "-l", dir).Run() })
	return dir, func(size string) {
		t.Helper()
		if out, err := exec.Command("mount", "-o", "remount,size="+size, dir).CombinedOutput(); err != nil {
			t.Fatalf("resize the tmpfs to %s: %v %s", size, err, out)
		}
	}
}
