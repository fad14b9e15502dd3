package prober

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpmon/mcpmon/pkg/conformance"
	"github.com/mcpmon/mcpmon/pkg/msg"
	"github.com/mcpmon/mcpmon/pkg/testpeers"
)

// suitePair is a mcpmon rule and the check of the official conformance
// suite (@modelcontextprotocol/conformance, its server scenarios) that
// tests the same requirement.
type suitePair struct {
	rule, scenario, check string
	// session: the suite's check runs in a session of its client, so it
	// says nothing of its own requirement when that failed to initialize.
	session bool
}

// suitePairs are all the pairs: the suite's other server scenarios call
// its own fixture tools, resources and prompts, and mcpmon's other rules
// (batches, the MCP-Protocol-Version header, session IDs, every
// 2026-07-28 rule) have no scenario in the suite.
var suitePairs = []suitePair{
	{conformance.RuleInitializeSchema, "server-initialize", "server-initialize", false},
	{conformance.RulePingAnswered, "ping", "ping", true},
	{conformance.RuleToolsListSchema, "tools-list", "tools-list", true},
	{conformance.RuleForeignOrigin, "dns-rebinding-protection", "localhost-host-rebinding-rejected", false},
}

// disagreement is a pair whose two sides differ on a fixture on purpose:
// what each says and which the spec bears out.
type disagreement struct {
	mcpmon, suite, why string
}

// agreeFixture is a server both mcpmon and the suite judge.
type agreeFixture struct {
	name string
	// era is the revision both negotiate with it (mcpmon pinned to it).
	era   string
	start func(t *testing.T) string
	// fail are the mapped rules both fail.
	fail []string
	// noSession: the suite's client cannot initialize, so its other
	// scenarios say nothing about their own requirement (n/a).
	noSession bool
	disagree  map[string]disagreement
}

// originDisagreement: the suite's DNS-rebinding check rewrites Host and
// Origin together, which a server checking only Host refuses; mcpmon
// keeps the real Host (a remote server's proxy routes by it) and sends a
// foreign Origin, which the spec says a server MUST answer 403
// (2025-11-25, basic/transports, Security Warning). The go-sdk checks
// Host on loopback by itself and Origin only with CrossOriginProtection.
var originDisagreement = disagreement{msg.ConformanceFail, msg.ConformancePass,
	"a foreign Origin with a loopback Host is accepted: the spec's MUST answer 403 is broken (mcpmon is right); the suite only changes Host and Origin together"}

var agreeFixtures = []agreeFixture{
	{name: "go-sdk 2025-11-25", era: Version20251125, start: sdkFixture(nil, true)},
	{name: "go-sdk 2025-06-18 JSON", era: Version20250618, start: sdkFixture([]string{Version20250618}, true)},
	{name: "go-sdk 2025-11-25 without an Origin check", era: Version20251125, start: sdkFixture(nil, false),
		disagree: map[string]disagreement{conformance.RuleForeignOrigin: originDisagreement}},
	{name: "server-everything (TypeScript SDK)", era: Version20251125, start: func(t *testing.T) string {
		return tsEverything(t, "streamableHttp") + "/mcp"
	}, fail: []string{conformance.RuleForeignOrigin}},
	{name: "raw healthy", era: Version20251125, start: rawFixture("")},
	{name: "raw broken", era: Version20251125, start: rawFixture(strings.Join([]string{
		conformance.RulePingAnswered, conformance.RuleToolsListSchema, conformance.RuleForeignOrigin,
		conformance.RuleBatchRefused, conformance.RuleVersionHeader}, ",")),
		fail: []string{conformance.RulePingAnswered, conformance.RuleToolsListSchema, conformance.RuleForeignOrigin}},
	{name: "raw initialize without serverInfo", era: Version20251125, start: rawFixture(conformance.RuleInitializeSchema),
		fail: []string{conformance.RuleInitializeSchema}, noSession: true},
	{name: "raw tool without a description", era: Version20251125, start: rawFixture(breakNoDescription),
		disagree: map[string]disagreement{conformance.RuleToolsListSchema: {msg.ConformancePass, msg.ConformanceFail,
			"the suite requires a description on every tool; the schema of every era makes Tool.description optional (mcpmon is right)"}}},
}

// sdkFixture serves a go-sdk server of versions (all when nil; JSON
// answers when it is one old era), behind the standard library's
// cross-origin protection when protect, and ends the sessions the suite's
// client leaves open with the test.
func sdkFixture(versions []string, protect bool) func(t *testing.T) string {
	return func(t *testing.T) string {
		s := sdkServer(versions...)
		t.Cleanup(func() {
			for ss := range s.Sessions() {
				_ = ss.Close()
			}
		})
		var h http.Handler = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s },
			&mcp.StreamableHTTPOptions{JSONResponse: len(versions) == 1})
		if protect {
			h = http.NewCrossOriginProtection().Handler(h)
		}
		return serve(t, h).URL
	}
}

func rawFixture(broken string) func(t *testing.T) string {
	return func(t *testing.T) string {
		_, srv := newConfServer(t, Version20251125, broken)
		return srv.URL
	}
}

// want is what mcpmon and the suite are expected to say of p on f.
func (f agreeFixture) want(p suitePair) (mcpmon, suite string) {
	if d, ok := f.disagree[p.rule]; ok {
		return d.mcpmon, d.suite
	}
	mcpmon, suite = msg.ConformancePass, msg.ConformancePass
	if slices.Contains(f.fail, p.rule) {
		mcpmon, suite = msg.ConformanceFail, msg.ConformanceFail
	}
	if f.noSession && p.session {
		suite = msg.ConformanceNA
	}
	if i := slices.IndexFunc(conformance.Rules(), func(r conformance.Rule) bool { return r.ID == p.rule }); !conformance.Rules()[i].Applies(f.era) {
		mcpmon = msg.ConformanceNA
	}
	return mcpmon, suite
}

// agreementRows is the table docs/reference/conformance.md shows: one row
// per fixture and pair.
func agreementRows() []string {
	var rows []string
	for _, f := range agreeFixtures {
		for _, p := range suitePairs {
			m, s := f.want(p)
			agree := "yes"
			switch {
			case m == msg.ConformanceNA:
				agree = "n/a: the rule is not of " + f.era
			case s == msg.ConformanceNA:
				agree = "n/a: the suite's client could not initialize"
			case m != s:
				agree = "**no**: " + f.disagree[p.rule].why
			}
			rows = append(rows, fmt.Sprintf("| %s | %s | `%s` ↔ `%s/%s` | %s | %s | %s |", f.name, f.era, p.rule, p.scenario, p.check, m, s, agree))
		}
	}
	return rows
}

// TestDocsConformanceAgreementTable holds the agreement table of
// docs/reference/conformance.md to the fixtures and pairs the agreement
// test runs: every row as the code states it, and no other.
func TestDocsConformanceAgreementTable(t *testing.T) {
	b, err := os.ReadFile("../docs/reference/conformance.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	rows := agreementRows()
	for _, row := range rows {
		if !strings.Contains(doc, row+"\n") {
			t.Errorf("docs/reference/conformance.md lacks the agreement row\n%s", row)
		}
	}
	if got := len(regexp.MustCompile("(?m)^\\| [^|]+ \\| [0-9-]{10} \\| `[a-z-]+` ↔ ").FindAllString(doc, -1)); got != len(rows) {
		t.Errorf("docs/reference/conformance.md has %d agreement rows, the test %d", got, len(rows))
	}
}

// suiteCheck is one check in the suite's checks.json.
type suiteCheck struct {
	ID, Status, ErrorMessage string
}

// runSuite runs the suite's scenarios of suitePairs against url in one
// Node process (testdata/suite-scenarios.mjs), into a directory of its own,
// and returns each scenario's checks.
func runSuite(t *testing.T, url string) map[string][]suiteCheck {
	entry, node := testpeers.Conformance(t)
	out := t.TempDir()
	args := []string{"testdata/suite-scenarios.mjs", entry, url, out}
	for _, p := range suitePairs {
		if !slices.Contains(args[4:], p.scenario) {
			args = append(args, p.scenario)
		}
	}
	cmd := exec.CommandContext(t.Context(), node, args...)
	log, _ := cmd.CombinedOutput() // exit 1 when a scenario fails: read the results
	got := map[string][]suiteCheck{}
	for _, p := range suitePairs {
		dirs, _ := filepath.Glob(filepath.Join(out, "server-"+p.scenario+"-[0-9]*"))
		if len(dirs) != 1 {
			t.Fatalf("suite: %d results of scenario %s\n%s", len(dirs), p.scenario, log)
		}
		b, err := os.ReadFile(filepath.Join(dirs[0], "checks.json"))
		if err != nil {
			t.Fatal(err)
		}
		var cs []suiteCheck
		if err := json.Unmarshal(b, &cs); err != nil {
			t.Fatalf("suite %s checks.json: %v", p.scenario, err)
		}
		got[p.scenario] = cs
	}
	return got
}

// suiteOutcome is what the suite said of p: SUCCESS is pass, FAILURE and
// WARNING fail, a check not run n/a. With the session failed, the checks
// of the other scenarios say only that.
func suiteOutcome(checks map[string][]suiteCheck, p suitePair) (outcome, detail string) {
	status := func(scenario, id string) (string, string) {
		for _, c := range checks[scenario] {
			if c.ID == id {
				return c.Status, c.ErrorMessage
			}
		}
		return "", ""
	}
	if p.session {
		if s, _ := status("server-initialize", "server-initialize"); s != "SUCCESS" {
			return msg.ConformanceNA, "the suite's client could not initialize"
		}
	}
	switch s, d := status(p.scenario, p.check); s {
	case "SUCCESS":
		return msg.ConformancePass, ""
	case "FAILURE", "WARNING":
		return msg.ConformanceFail, d
	}
	return msg.ConformanceNA, "not run"
}

// TestConformanceAgreesWithTheOfficialSuite runs the suite's server
// scenarios and mcpmon's rules against the same servers (go-sdk servers of
// two eras, with and without an Origin check, the TypeScript SDK's
// reference server, and raw servers, healthy and broken) and asserts that
// for every fixture and every pair both say pass or both say fail, but
// for the disagreements documented in docs/reference/conformance.md,
// which must stay exactly as documented. It prints the agreement table.
func TestConformanceAgreesWithTheOfficialSuite(t *testing.T) {
	testpeers.Conformance(t)
	for _, f := range agreeFixtures {
		t.Run(f.name, func(t *testing.T) {
			t.Parallel()
			u := f.start(t)
			ep := endpoint(u)
			ep.ProtocolVersion = f.era
			res := testProber(t, nil).Run2(ep, testSlot, nil)
			if res.Status != msg.StatusUp || res.Conformance == nil {
				t.Fatalf("mcpmon: %s %s %q, conformance %v", res.Status, res.Class, res.Error, res.Conformance)
			}
			checks := runSuite(t, u)
			for _, p := range suitePairs {
				m, md := msg.ConformanceNA, "not of the era"
				if r, ok := res.Conformance.Rule(p.rule); ok {
					m, md = r.Outcome, r.Detail
				}
				s, sd := suiteOutcome(checks, p)
				wantM, wantS := f.want(p)
				t.Logf("| %s | %s ↔ %s/%s | mcpmon %s | suite %s |", f.name, p.rule, p.scenario, p.check, m, s)
				if m != wantM || s != wantS {
					t.Errorf("%s ↔ %s/%s: mcpmon %s (%s), suite %s (%s); want mcpmon %s, suite %s",
						p.rule, p.scenario, p.check, m, md, s, sd, wantM, wantS)
				}
			}
		})
	}
}
