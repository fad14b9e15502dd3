package testpeers

import (
	"os"
	"path/filepath"
	"testing"
)

// RepoFile returns the text of rel, a path from the module root (the
// nearest directory above the test's working directory that holds go.mod):
// the docs tests of every package read their reference page through it.
func RepoFile(t testing.TB, rel string) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatalf("no go.mod above the working directory; cannot read %s", rel)
		}
		dir = parent
	}
	b, err := os.ReadFile(filepath.Join(dir, rel))
	if err != nil {
		t.Fatalf("read %s: %v", rel, err)
	}
	return string(b)
}
