package cli

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/store/redis"
	"github.com/mcpmon/mcpmon/pkg/store/redis/redistest"
	"github.com/mcpmon/mcpmon/pkg/testpeers"
)

func runStore(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = Run(t.Context(), args, IO{Stdout: &out, Stderr: &errOut})
	return code, out.String(), errOut.String()
}

// TestStoreMigrateNeedsBothURLs: a usage error, one line, exit 2.
func TestStoreMigrateNeedsBothURLs(t *testing.T) {
	code, _, stderr := runStore(t, "store", "migrate", "--from", "redis://127.0.0.1:1")
	if code != ExitUsage || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "--to") {
		t.Fatalf("exit %d, stderr %q; want 2 and one line naming --to", code, stderr)
	}
}

// TestStoreMigrateCopiesAndChecks: on the real single Redis and cluster,
// the command prints the count table and exits 0; a record lost in the
// target afterwards makes a re-run exit 1 with one line naming the kind.
// Neither output names a server.
func TestStoreMigrateCopiesAndChecks(t *testing.T) {
	from, to := testpeers.RedisURL(t), testpeers.RedisClusterURL(t)
	ctx := t.Context()
	fromPrefix, toPrefix := redistest.RandomPrefix(), redistest.RandomPrefix()
	src, err := redis.New(ctx, from, redis.Options{Prefix: fromPrefix})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = src.Close()
		redistest.Flush(t, from, fromPrefix)
		redistest.Flush(t, to, toPrefix)
	})
	for i := range 12 {
		id := fmt.Sprintf("ep-%d", i)
		if _, err := src.CreateEndpoint(ctx, model.Endpoint{ID: id, URL: "https://" + id + ".example/mcp"}); err != nil {
			t.Fatal(err)
		}
	}
	args := []string{"store", "migrate", "--from", from, "--to", to, "--from-prefix", fromPrefix, "--to-prefix", toPrefix, "--batch", "5"}
	code, stdout, stderr := runStore(t, args...)
	if code != ExitOK || !strings.Contains(stdout, "endpoints") || !strings.Contains(stdout, "12") || !strings.Contains(stderr, "counts agree") {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", code, stdout, stderr)
	}
	if strings.Contains(stdout+stderr, "127.0.0.1") {
		t.Fatalf("output names a server:\n%s%s", stdout, stderr)
	}

	dst := redistest.OpenURL(t, to, redis.Options{Prefix: toPrefix})
	if err := dst.DeleteEndpoint(ctx, "ep-3"); err != nil {
		t.Fatal(err)
	}
	code, _, stderr = runStore(t, args...)
	if code != ExitError || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "; endpoints: 12 in the source, 11 in the target") {
		t.Fatalf("after a lost record: exit %d, stderr %q; want 1 and one line naming endpoints", code, stderr)
	}
}
