package daemon

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/mcpmon/mcpmon/"

// deps lists the mcpmon packages pkg imports, directly or not (tests
// excluded), as `go list -deps` sees them.
func deps(t *testing.T, pkg string) []string {
	t.Helper()
	out, err := exec.Command("go", "list", "-deps", module+pkg).Output()
	if err != nil {
		t.Fatalf("go list -deps %s: %v", pkg, err)
	}
	var own []string
	for _, p := range strings.Fields(string(out)) {
		if strings.HasPrefix(p, module) && p != module+pkg {
			own = append(own, strings.TrimPrefix(p, module))
		}
	}
	return own
}

// importers lists the mcpmon packages that import pkg directly.
func importers(t *testing.T, pkg string) []string {
	t.Helper()
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Imports " "}}`, module+"...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var who []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if len(f) > 1 && slices.Contains(f[1:], module+pkg) {
			who = append(who, strings.TrimPrefix(f[0], module))
		}
	}
	return who
}

// TestLayering states the architecture's import rules: the
// schedule rule is a leaf, the alerter does not reach into the aggregator,
// the SSRF guard is not the prober's, only the process assembly (and
// the harnesses that start probers) import the prober, and the API's
// clients link its wire types, not its server.
func TestLayering(t *testing.T) {
	if d := deps(t, "pkg/schedule"); len(d) != 0 {
		t.Errorf("pkg/schedule imports %v; it must import nothing of the pipeline", d)
	}
	if d := deps(t, "pkg/netguard"); len(d) != 0 {
		t.Errorf("pkg/netguard imports %v; it must import nothing of the pipeline", d)
	}
	for _, p := range []string{"alerter", "pkg/api", "pkg/store", "pkg/queue"} {
		if d := deps(t, p); slices.Contains(d, "aggregator") || slices.Contains(d, "prober") {
			t.Errorf("%s depends on %v; it must not reach the aggregator or the prober", p, d)
		}
	}
	if d := deps(t, "pkg/jsonv"); len(d) != 0 {
		t.Errorf("pkg/jsonv imports %v; the JSON decoder is a leaf every layer may use", d)
	}
	if d := deps(t, "pkg/jsonpath"); len(d) != 0 {
		t.Errorf("pkg/jsonpath imports %v; the tool check's path rule is a leaf (the API validates with it, the prober selects)", d)
	}
	allowed := []string{"pkg/daemon", "cmd/mcpmon-load", "pkg/agent"}
	for _, who := range importers(t, "prober") {
		if !slices.Contains(allowed, who) {
			t.Errorf("%s imports prober; only %v may (to probe)", who, allowed)
		}
	}
	clientSide(t)
	// Nor any package under prober/: what others need of it is a leaf
	// under pkg/.
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Imports " "}}`, module+"...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		who := strings.TrimPrefix(f[0], module)
		if who == "prober" || strings.HasPrefix(who, "prober/") || slices.Contains(allowed, who) {
			continue
		}
		for _, imp := range f[1:] {
			if strings.HasPrefix(imp, module+"prober/") {
				t.Errorf("%s imports %s; only the prober and %v may import prober/...", who, strings.TrimPrefix(imp, module), allowed)
			}
		}
	}
}

// clientSide checks that the packages that talk to a running mcpmon over
// its API (the Go client, apply's declarative plan, the registry import)
// share the server's wire types, pkg/api/v1, and link nothing of the
// server: no router, store, queue, seal or auth. Besides each other and
// the API types they may use the model (no I/O) and leaves (packages that
// import nothing of mcpmon but the JSON decoder, such as pkg/msg); the
// API types themselves import only the model and leaves.
func clientSide(t *testing.T) {
	t.Helper()
	const types = "pkg/api/v1"
	clients := []string{"pkg/client", "pkg/declarative", "pkg/registry"}
	leaf := map[string]bool{}
	isLeaf := func(p string) bool {
		l, ok := leaf[p]
		if !ok {
			l = true
			for _, d := range deps(t, p) {
				l = l && d == "pkg/jsonv" // itself a leaf (TestLayering)
			}
			leaf[p] = l
		}
		return l
	}
	for _, d := range deps(t, types) {
		if d != "pkg/model" && !isLeaf(d) {
			t.Errorf("%s imports %s; the API types import only the model and leaves", types, d)
		}
	}
	for _, c := range clients {
		reach := deps(t, c)
		for _, d := range reach {
			switch {
			case d == types, d == "pkg/model", slices.Contains(clients, d), isLeaf(d):
			default:
				t.Errorf("%s depends on %s; an API client links only %s, the model and leaves", c, d, types)
			}
		}
	}
}

// TestModelIsALeaf: the nouns depend on nothing that does I/O. pkg/model
// imports only the leaf contracts (message IDs, schedule rules), and the
// store's only mcpmon dependencies are the model and those contracts, so
// every stage can name an Endpoint without linking a backend.
func TestModelIsALeaf(t *testing.T) {
	leaves := []string{"pkg/msg", "pkg/schedule", "pkg/jsonv"}
	for _, d := range deps(t, "pkg/model") {
		if !slices.Contains(leaves, d) {
			t.Errorf("pkg/model imports %s; it may import only %v", d, leaves)
		}
	}
	for _, d := range deps(t, "pkg/store") {
		if d != "pkg/model" && !slices.Contains(leaves, d) {
			t.Errorf("pkg/store imports %s; it may import only pkg/model and %v", d, leaves)
		}
	}
}

// TestStagesImportOnlyTheModelAndContracts: a stage (prober, aggregator,
// alerter) decides over model types and talks through the queue and the
// store; besides those it may use only leaf utilities. Only the wiring
// (pkg/daemon) assembles stages, so no stage imports another.
func TestStagesImportOnlyTheModelAndContracts(t *testing.T) {
	allowed := []string{
		"pkg/model", "pkg/msg", "pkg/queue", "pkg/store", // the contracts
		"pkg/alert", "pkg/clock", "pkg/metrics", "pkg/schedule", "pkg/netguard", "pkg/jsonpath", "pkg/jsonv", // leaves
		"pkg/conformance", // the spec rules: pure, over the model and the messages (checked below)
	}
	for _, d := range deps(t, "pkg/conformance") {
		if !slices.Contains([]string{"pkg/model", "pkg/msg", "pkg/schedule", "pkg/jsonv"}, d) {
			t.Errorf("pkg/conformance imports %s; the rules import only the model and the messages", d)
		}
	}
	for _, stage := range []string{"prober", "aggregator", "alerter"} {
		for _, d := range deps(t, stage) {
			if strings.HasPrefix(d, stage+"/") {
				continue // its own subpackages (alerter/sinks, alerter/notify)
			}
			if !slices.Contains(allowed, d) {
				t.Errorf("%s imports %s; a stage may import only %v", stage, d, allowed)
			}
		}
		for _, who := range importers(t, stage) {
			// pkg/agent is the agent process's assembly: a prober alone,
			// reporting over HTTPS instead of a queue.
			agentProber := who == "pkg/agent" && stage == "prober"
			if who != "pkg/daemon" && !agentProber && !strings.HasPrefix(who, stage+"/") {
				t.Errorf("%s imports the stage %s; only pkg/daemon (and pkg/agent, a prober) assembles stages", who, stage)
			}
		}
	}
}
