package conformance

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mcpmon/mcpmon/pkg/msg"
)

// The eras, by name.
const (
	Era20241105 = "2024-11-05"
	Era20250326 = "2025-03-26"
	Era20250618 = "2025-06-18"
	Era20251125 = "2025-11-25"
	Era20260728 = "2026-07-28"
)

// Rule IDs. They are stable: stored results, events and sinks' filters
// name them.
const (
	RuleInitializeSchema = "initialize-result-schema"
	RuleDiscoverSchema   = "discover-result-schema"
	RuleToolsListSchema  = "tools-list-result-schema"
	RuleCacheFields      = "cache-fields-present"
	RuleResultType       = "result-type-present"
	RuleSessionIDASCII   = "session-id-visible-ascii"
	RuleNoSession        = "no-session-id"
	RulePingAnswered     = "ping-answered"
	RuleToolsOrderStable = "tools-order-stable"
	RuleBatchRefused     = "batch-refused"
	RuleForeignOrigin    = "foreign-origin-refused"
	RuleVersionHeader    = "protocol-version-header-validated"
	RuleHeaderMismatch   = "header-mismatch-refused"
	// The deprecated and removed features, and the error codes 2026-07-28
	// fixes.
	RuleStreamableHTTP     = "streamable-http-transport"
	RulePingRemoved        = "ping-removed"
	RuleSetLevelRemoved    = "logging-set-level-removed"
	RuleHeaderMismatchCode = "header-mismatch-error-code"
	RuleUnsupportedVersion = "unsupported-version-error"
	specBase               = "https://modelcontextprotocol.io/specification/"
	maxObservedToolPages   = 8
	maxAnswerBody          = 4 << 10
	maxDetail              = msg.MaxConformanceDetail
)

// Rule is one conformance check.
type Rule struct {
	ID    string
	Title string
	// Eras are the revisions the rule applies to; under any other it is n/a.
	Eras []string
	// Spec links the section the rule checks (of the newest era it applies to).
	Spec string
	// Active rules need extra requests (Observation.Active), sent only on
	// some probes (Due); their outcome is carried between them.
	Active bool
	// Schema rules validate results against the era's schema, which costs
	// more than the rest of the rules together: their outcome is carried
	// while the results are the same bytes (msg.Conformance.Results).
	Schema bool
	check  func(o *Observation) (outcome, detail string)
}

// Applies reports whether r applies to era.
func (r Rule) Applies(era string) bool { return slices.Contains(r.Eras, era) }

var (
	initializeEras = []string{Era20241105, Era20250326, Era20250618, Era20251125}
	allEras        = []string{Era20241105, Era20250326, Era20250618, Era20251125, Era20260728}
	sessionEras    = []string{Era20250326, Era20250618, Era20251125}
	noBatchEras    = []string{Era20250618, Era20251125, Era20260728}
	streamableEras = []string{Era20250326, Era20250618, Era20251125}
)

// rules is the catalog, in the order results list them.
var rules = []Rule{
	{ID: RuleInitializeSchema, Schema: true, Title: "the initialize result validates against the era's InitializeResult schema", Eras: initializeEras,
		Spec: specBase + "2025-11-25/basic/lifecycle#initialization", check: checkInitializeSchema},
	{ID: RuleDiscoverSchema, Schema: true, Title: "the server/discover result validates against the DiscoverResult schema", Eras: []string{Era20260728},
		Spec: specBase + "2026-07-28/server/discover", check: checkDiscoverSchema},
	{ID: RuleToolsListSchema, Schema: true, Title: "every tools/list page validates against the era's ListToolsResult schema", Eras: allEras,
		Spec: specBase + "2026-07-28/server/tools#listing-tools", check: checkToolsListSchema},
	{ID: RuleCacheFields, Title: "server/discover and tools/list results carry the caching hints ttlMs (>= 0) and cacheScope", Eras: []string{Era20260728},
		Spec: specBase + "2026-07-28/server/utilities/caching", check: checkCacheFields},
	{ID: RuleResultType, Title: "server/discover and tools/list results carry resultType", Eras: []string{Era20260728},
		Spec: specBase + "2026-07-28/schema#result", check: checkResultType},
	{ID: RuleSessionIDASCII, Title: "an Mcp-Session-Id holds only visible ASCII (0x21 to 0x7E)", Eras: sessionEras,
		Spec: specBase + "2025-11-25/basic/transports#session-management", check: checkSessionASCII},
	{ID: RuleNoSession, Title: "no Mcp-Session-Id header: 2026-07-28 removed protocol sessions", Eras: []string{Era20260728},
		Spec: specBase + "2026-07-28/basic/transports/streamable-http#earlier-streamable-http-revisions", check: checkNoSession},
	{ID: RulePingAnswered, Title: "ping is answered with a result, not method-not-found", Eras: initializeEras,
		Spec: specBase + "2025-11-25/basic/utilities/ping", check: checkPing},
	{ID: RuleToolsOrderStable, Title: "the same tools are listed in the same order as at the previous probe", Eras: []string{Era20260728},
		Spec: specBase + "2026-07-28/server/tools#listing-tools", check: checkToolsOrder},
	{ID: RuleBatchRefused, Title: "a JSON-RPC batch is refused (batching was removed in 2025-06-18)", Eras: noBatchEras, Active: true,
		Spec: specBase + "2025-06-18/changelog", check: checkBatch},
	{ID: RuleForeignOrigin, Title: "a request with a foreign Origin is answered 403 (DNS rebinding)", Eras: []string{Era20251125, Era20260728}, Active: true,
		Spec: specBase + "2025-11-25/basic/transports#security-warning", check: checkOrigin},
	{ID: RuleVersionHeader, Title: "a request with an unsupported MCP-Protocol-Version is answered 400", Eras: []string{Era20250618, Era20251125}, Active: true,
		Spec: specBase + "2025-11-25/basic/transports#protocol-version-header", check: checkVersionHeader},
	{ID: RuleHeaderMismatch, Title: "a request whose Mcp-Method header contradicts its body is answered 400", Eras: []string{Era20260728}, Active: true,
		Spec: specBase + "2026-07-28/basic/transports/streamable-http#server-validation", check: checkHeaderMismatch},
	{ID: RuleStreamableHTTP, Title: "a server of a 2025-03-26 or later revision is reached over Streamable HTTP, not the HTTP+SSE transport 2025-03-26 deprecated", Eras: streamableEras,
		Spec: specBase + "2025-03-26/basic/transports#backwards-compatibility", check: checkStreamable},
	{ID: RulePingRemoved, Title: "ping is answered with an error, not a result: the 2026-07-28 schema has no PingRequest", Eras: []string{Era20260728}, Active: true,
		Spec: specBase + "2026-07-28/changelog", check: checkPingRemoved},
	{ID: RuleSetLevelRemoved, Title: "logging/setLevel is answered with an error, not a result: the 2026-07-28 schema has no SetLevelRequest", Eras: []string{Era20260728}, Active: true,
		Spec: specBase + "2026-07-28/changelog", check: checkSetLevelRemoved},
	{ID: RuleHeaderMismatchCode, Title: "a request whose Mcp-Method header contradicts its body is answered with error -32020 (HeaderMismatchError)", Eras: []string{Era20260728}, Active: true,
		Spec: specBase + "2026-07-28/schema#headermismatcherror", check: checkHeaderMismatchCode},
	{ID: RuleUnsupportedVersion, Title: "a request of an unsupported revision is answered 400 with error -32022 naming the supported versions (UnsupportedProtocolVersionError)", Eras: []string{Era20260728}, Active: true,
		Spec: specBase + "2026-07-28/schema#unsupportedprotocolversionerror", check: checkUnsupportedVersion},
}

// Rules returns the rule catalog.
func Rules() []Rule { return slices.Clone(rules) }

// RuleApplies says whether rule id exists and applies to era, without the
// catalog copy Rules makes (the prober asks it on every active round).
func RuleApplies(id, era string) bool {
	for i := range rules {
		if rules[i].ID == id {
			return rules[i].Applies(era)
		}
	}
	return false
}

// Observation is what one probe saw that the rules judge. The prober fills
// it; every field is optional (a rule without what it needs is n/a).
type Observation struct {
	// Era is the revision the probe negotiated.
	Era string
	// Initialize and Discover are the results of initialize (2025 eras)
	// and server/discover (2026-07-28).
	Initialize json.RawMessage
	Discover   json.RawMessage
	// ToolPages are the tools/list results read, at most the first
	// maxObservedToolPages; ToolsListed says tools/list was read whole.
	ToolPages   []json.RawMessage
	ToolsListed bool
	// ToolPageHeldBack, when set, says why a tools/list page read is not
	// among ToolPages (the prober's words: it lists more tools than a
	// probe reads), so the schema rule cannot pass.
	ToolPageHeldBack string
	// SessionID is the Mcp-Session-Id initialize answered (2025 eras);
	// SessionHeader says a 2026-07-28 answer carried one.
	SessionID     string
	SessionHeader bool
	// PingSent and PingNotFound: ping was asked and answered -32601.
	PingSent, PingNotFound bool
	// LegacySSE says the handshake ran over the HTTP+SSE transport.
	LegacySSE bool
	// Prev is the endpoint's previous conformance, if any.
	Prev *msg.Conformance
	// Active holds the answers to the extra requests; nil when they were
	// not sent by this probe.
	Active *Active

	// toolOrder and toolSet are Evaluate's toolDigests of ToolPages.
	toolOrder, toolSet string
}

// Active holds the answers to the extra requests of the active rules.
type Active struct {
	Batch, ForeignOrigin, BadVersion, HeaderMismatch Answer
	// Ping and SetLevel ask the methods 2026-07-28 removed; BadMetaVersion
	// is a 2026-07-28 request of FutureVersion.
	Ping, SetLevel, BadMetaVersion Answer
}

// Answer is what the server answered one extra request.
type Answer struct {
	Sent bool
	// Err is why no answer came (a transport failure), mcpmon's words.
	Err         string
	Status      int
	ContentType string
	// Body is the first bytes of the answer (MaxAnswerBody).
	Body []byte
}

// MaxAnswerBody bounds Answer.Body: the rules read a status and the start
// of a JSON-RPC answer.
const MaxAnswerBody = maxAnswerBody

// MaxToolPages bounds Observation.ToolPages.
const MaxToolPages = maxObservedToolPages

// Evaluate judges o at slot: every rule of o.Era (the others are left
// out), active rules carried from o.Prev when o.Active is nil.
// Details are mcpmon's words around the target's; the caller scrubs and
// bounds them (Bound) before they leave the process.
func Evaluate(o Observation, slot time.Time) msg.Conformance {
	c := msg.Conformance{Era: o.Era, CheckedAt: slot.UTC(), Rules: make([]msg.RuleResult, 0, len(rules))}
	o.toolOrder, o.toolSet = toolDigests(o.ToolPages, o.ToolsListed)
	c.ToolOrder, c.ToolSet = o.toolOrder, o.toolSet
	c.Results, c.SchemaAt = resultsDigest(o), slot.UTC()
	if carrySchema(o.Prev, o.Era, c.Results, resultsSize(o), slot) {
		// The outcomes carried judged the results Results names, which
		// the next probe compares with.
		c.Results, c.SchemaAt = o.Prev.Results, o.Prev.SchemaAt
	}
	sameResults := o.Prev != nil && o.Prev.Era == o.Era && o.Prev.Results == c.Results
	if o.Active != nil {
		c.ActiveAt = slot.UTC()
	} else if o.Prev != nil && o.Prev.Era == o.Era {
		c.ActiveAt = o.Prev.ActiveAt
	}
	for _, r := range rules {
		if !r.Applies(o.Era) {
			continue // kept out of the result: readers show it as n/a
		}
		res := msg.RuleResult{ID: r.ID}
		switch {
		case r.Schema && sameResults:
			if p, ok := o.Prev.Rule(r.ID); ok {
				res = p
			} else {
				res.Outcome, res.Detail = r.check(&o)
			}
		case r.Active && o.Active == nil:
			res.Outcome, res.Detail = msg.ConformanceNA, "not checked yet"
			if p, ok := o.Prev.Rule(r.ID); ok && o.Prev.Era == o.Era {
				res = p
			}
		default:
			res.Outcome, res.Detail = r.check(&o)
		}
		c.Rules = append(c.Rules, res)
	}
	return c
}

// Results of more than SchemaRecheckBytes that changed are validated at
// most every SchemaRecheck per endpoint. Validating costs about 100 ms of
// CPU per MiB of results (more for many small objects), and a target
// chooses its results: one changing a nonce in its tools/list at every
// probe, with two pages of giant input schemas, cost over 300 ms a probe,
// at a schedule of one a second. A deploy that breaks the schema of large
// results shows within SchemaRecheck, as within the active rules'
// recheck (every/RecheckDivisor); smaller results are validated whenever
// they change.
const (
	SchemaRecheck      = 5 * time.Minute
	SchemaRecheckBytes = 64 << 10
)

// carrySchema reports whether the schema rules' outcomes of prev are
// carried to a probe at slot whose results (size bytes) digest to
// results: when prev validated the same results in era, or when they are
// over SchemaRecheckBytes and prev validated less than SchemaRecheck
// before slot.
func carrySchema(prev *msg.Conformance, era, results string, size int, slot time.Time) bool {
	if prev == nil || prev.Era != era {
		return false
	}
	if prev.Results == results {
		return true
	}
	since := slot.Sub(prev.SchemaAt)
	return size > SchemaRecheckBytes && !prev.SchemaAt.IsZero() && since >= 0 && since < SchemaRecheck
}

// resultsSize is the bytes of the results the schema rules validate.
func resultsSize(o Observation) int {
	n := len(o.Initialize) + len(o.Discover)
	for _, p := range o.ToolPages {
		n += len(p)
	}
	return n
}

// Bounds of a conformance result read from outside the process (an
// agent's post), beside msg.MaxConformanceRules and MaxConformanceDetail.
// Evaluate makes digests of 16 and 24 hex characters; a longer one than
// a whole SHA-256 is no digest.
const (
	maxDigest = 64
	maxRuleID = 64
)

// Malformed reports what is wrong with a conformance result that came
// from outside the process, as the JSON pointer of the field (relative to
// the conformance object) and why; "" when nothing is. It checks shapes,
// not knowledge: an agent of a newer release may know an era or a rule
// this server does not, and its result is kept (the API shows the rule
// catalog it knows). An era is a revision date (2025-11-25), a digest
// lowercase hex, a rule ID lowercase words joined by '-', an outcome
// pass, fail or n/a.
func Malformed(c msg.Conformance) (pointer, why string) {
	if _, err := time.Parse(time.DateOnly, c.Era); err != nil || len(c.Era) != len(time.DateOnly) {
		return "era", "must be a protocol revision date such as " + Era20251125
	}
	for name, d := range map[string]string{"toolOrder": c.ToolOrder, "toolSet": c.ToolSet, "results": c.Results} {
		if len(d) > maxDigest || strings.Trim(d, "0123456789abcdef") != "" {
			return name, fmt.Sprintf("must be a digest: at most %d lowercase hex characters", maxDigest)
		}
	}
	if len(c.Rules) > msg.MaxConformanceRules {
		return "rules", fmt.Sprintf("at most %d rules", msg.MaxConformanceRules)
	}
	for i, r := range c.Rules {
		if r.ID == "" || len(r.ID) > maxRuleID || strings.Trim(r.ID, "abcdefghijklmnopqrstuvwxyz0123456789-") != "" {
			return fmt.Sprintf("rules/%d/id", i), fmt.Sprintf("must be a rule ID: 1 to %d of [a-z0-9-]", maxRuleID)
		}
		switch r.Outcome {
		case msg.ConformancePass, msg.ConformanceFail, msg.ConformanceNA:
		default:
			return fmt.Sprintf("rules/%d/outcome", i), "must be pass, fail or n/a"
		}
		if len(r.Detail) > msg.MaxConformanceDetail {
			return fmt.Sprintf("rules/%d/detail", i), fmt.Sprintf("is longer than %d bytes", msg.MaxConformanceDetail)
		}
	}
	return "", ""
}

// KnownEra reports whether this build has rules for era (Eras).
func KnownEra(era string) bool { return slices.Contains(Eras(), era) }

// Bound applies scrub to every detail and cuts it to
// msg.MaxConformanceDetail bytes (scrubbed first, so a cut never leaves a
// prefix of a secret), and drops rules beyond msg.MaxConformanceRules.
func Bound(c *msg.Conformance, scrub func(string) string) {
	if c == nil {
		return
	}
	if len(c.Rules) > msg.MaxConformanceRules {
		c.Rules = c.Rules[:msg.MaxConformanceRules]
	}
	for i := range c.Rules {
		d := scrub(c.Rules[i].Detail)
		if len(d) > maxDetail {
			d = strings.ToValidUTF8(d[:maxDetail-len("…")], "") + "…"
		}
		c.Rules[i].Detail = d
	}
}

func pass() (string, string) { return msg.ConformancePass, "" }

func fail(format string, args ...any) (string, string) {
	return msg.ConformanceFail, fmt.Sprintf(format, args...)
}

func na(why string) (string, string) { return msg.ConformanceNA, why }

func schemaCheck(era, def string, doc json.RawMessage, what string) (string, string) {
	if doc == nil {
		return na("no " + what + " result observed")
	}
	if err := Validate(era, def, doc); err != nil {
		return fail("%v", err)
	}
	return pass()
}

func checkInitializeSchema(o *Observation) (string, string) {
	return schemaCheck(o.Era, DefInitializeResult, o.Initialize, "initialize")
}

func checkDiscoverSchema(o *Observation) (string, string) {
	return schemaCheck(o.Era, DefDiscoverResult, o.Discover, "server/discover")
}

func checkToolsListSchema(o *Observation) (string, string) {
	if len(o.ToolPages) == 0 && o.ToolPageHeldBack == "" {
		return na("tools/list not read (no tools capability, or it failed)")
	}
	for i, p := range o.ToolPages {
		if err := Validate(o.Era, DefListToolsResult, p); err != nil {
			return fail("page %d: %v", i+1, err)
		}
	}
	if o.ToolPageHeldBack != "" {
		return na(o.ToolPageHeldBack + ": not validated")
	}
	return pass()
}

// cacheable is what the 2026-07-28 rules read of a result.
type cacheable struct {
	TTLMs      *json.Number `json:"ttlMs"`
	CacheScope *string      `json:"cacheScope"`
	ResultType *string      `json:"resultType"`
}

// cacheables decodes the results the 2026-07-28 rules judge, named.
func cacheables(o *Observation) (names []string, out []cacheable) {
	add := func(name string, raw json.RawMessage) {
		var c cacheable
		d := json.NewDecoder(bytes.NewReader(raw))
		d.UseNumber()
		if d.Decode(&c) == nil {
			names, out = append(names, name), append(out, c)
		}
	}
	if o.Discover != nil {
		add("server/discover", o.Discover)
	}
	for i, p := range o.ToolPages {
		add(fmt.Sprintf("tools/list page %d", i+1), p)
	}
	return names, out
}

func checkCacheFields(o *Observation) (string, string) {
	names, cs := cacheables(o)
	if len(cs) == 0 {
		return na("no result observed")
	}
	for i, c := range cs {
		switch {
		case c.TTLMs == nil:
			return fail("%s has no ttlMs", names[i])
		case c.CacheScope == nil:
			return fail("%s has no cacheScope", names[i])
		case *c.CacheScope != "public" && *c.CacheScope != "private":
			return fail("%s has cacheScope %q (want public or private)", names[i], *c.CacheScope)
		}
		if n, err := c.TTLMs.Int64(); err != nil || n < 0 {
			return fail("%s has ttlMs %s (want an integer >= 0)", names[i], c.TTLMs.String())
		}
	}
	return pass()
}

func checkResultType(o *Observation) (string, string) {
	names, cs := cacheables(o)
	if len(cs) == 0 {
		return na("no result observed")
	}
	for i, c := range cs {
		if c.ResultType == nil || *c.ResultType == "" {
			return fail("%s has no resultType", names[i])
		}
	}
	return pass()
}

func checkSessionASCII(o *Observation) (string, string) {
	if o.SessionID == "" {
		return na("the server assigned no session")
	}
	for i := 0; i < len(o.SessionID); i++ {
		if c := o.SessionID[i]; c < 0x21 || c > 0x7e {
			return fail("Mcp-Session-Id has byte 0x%02x at offset %d", c, i)
		}
	}
	return pass()
}

func checkNoSession(o *Observation) (string, string) {
	if o.SessionHeader {
		return fail("an answer carried an Mcp-Session-Id header")
	}
	return pass()
}

func checkPing(o *Observation) (string, string) {
	switch {
	case !o.PingSent:
		return na("ping not sent")
	case o.PingNotFound:
		return fail("ping answered -32601 method not found")
	}
	return pass()
}

func checkToolsOrder(o *Observation) (string, string) {
	order, set := o.toolOrder, o.toolSet
	switch {
	case order == "":
		return na("tools/list not read whole")
	case o.Prev == nil || o.Prev.ToolSet == "":
		return na("no previous listing to compare with")
	case o.Prev.ToolSet != set:
		return na("the tools changed since the previous probe")
	case o.Prev.ToolOrder != order:
		return fail("the same tools were listed in another order than at the previous probe")
	}
	return pass()
}

// resultsDigest is a digest of the results the schema rules validate.
// ResultsDigest is the digest of the answers o saw that the schema rules
// validate (the Results of the conformance Evaluate returns).
func ResultsDigest(o Observation) string { return resultsDigest(o) }

func resultsDigest(o Observation) string {
	h := sha256.New()
	for _, b := range append([]json.RawMessage{o.Initialize, o.Discover}, o.ToolPages...) {
		h.Write(b)
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil)[:12])
}

// toolDigests are the digests of the listed tool names in listed order and
// sorted, or empty when the listing was not read whole.
func toolDigests(pages []json.RawMessage, whole bool) (order, set string) {
	if !whole || len(pages) == 0 {
		return "", ""
	}
	var names []string
	for _, p := range pages {
		var lr struct {
			Tools []struct {
				Name string `json:"name"`
			} `json:"tools"`
		}
		if json.Unmarshal(p, &lr) != nil {
			return "", ""
		}
		for _, t := range lr.Tools {
			names = append(names, t.Name)
		}
	}
	digest := func(ns []string) string {
		h := sha256.New()
		for _, n := range ns {
			h.Write([]byte(n))
			h.Write([]byte{0})
		}
		return hex.EncodeToString(h.Sum(nil)[:8])
	}
	order = digest(names)
	slices.Sort(names)
	return order, digest(names)
}

// answerNA is the n/a of an active rule whose request got no answer.
func answerNA(a Answer) (string, string, bool) {
	switch {
	case !a.Sent:
		return msg.ConformanceNA, "not sent", true
	case a.Err != "":
		return msg.ConformanceNA, "no answer: " + a.Err, true
	}
	return "", "", false
}

// jsonRPCBody is the JSON text of an answer: the body, or the data of the
// first SSE event that has some.
func jsonRPCBody(a Answer) []byte {
	b := bytes.TrimSpace(a.Body)
	if !strings.HasPrefix(a.ContentType, "text/event-stream") {
		return b
	}
	for _, line := range bytes.Split(b, []byte("\n")) {
		if d, ok := bytes.CutPrefix(bytes.TrimRight(line, "\r"), []byte("data:")); ok && len(bytes.TrimSpace(d)) > 0 {
			return bytes.TrimSpace(d)
		}
	}
	return nil
}

func checkBatch(o *Observation) (string, string) {
	a := o.Active.Batch
	if out, d, ok := answerNA(a); ok {
		return out, d
	}
	if a.Status < 200 || a.Status > 299 {
		return pass() // refused at the HTTP layer
	}
	b := jsonRPCBody(a)
	if len(b) > 0 && b[0] == '[' {
		return fail("a batch was answered HTTP %d with a batch of responses", a.Status)
	}
	var one struct {
		Result json.RawMessage `json:"result"`
		Error  json.RawMessage `json:"error"`
	}
	if json.Unmarshal(b, &one) == nil && one.Error != nil {
		return pass() // a JSON-RPC error: refused
	}
	return fail("a batch was answered HTTP %d without an error", a.Status)
}

func checkOrigin(o *Observation) (string, string) {
	a := o.Active.ForeignOrigin
	if out, d, ok := answerNA(a); ok {
		return out, d
	}
	if a.Status != 403 {
		return fail("a request with Origin %s was answered HTTP %d, want 403", ForeignOrigin, a.Status)
	}
	return pass()
}

func checkVersionHeader(o *Observation) (string, string) {
	a := o.Active.BadVersion
	if out, d, ok := answerNA(a); ok {
		return out, d
	}
	if a.Status != 400 {
		return fail("a request with MCP-Protocol-Version %s was answered HTTP %d, want 400", UnsupportedVersion, a.Status)
	}
	return pass()
}

func checkHeaderMismatch(o *Observation) (string, string) {
	a := o.Active.HeaderMismatch
	if out, d, ok := answerNA(a); ok {
		return out, d
	}
	if a.Status != 400 {
		return fail("a tools/list request with Mcp-Method %s was answered HTTP %d, want 400", MismatchedMethod, a.Status)
	}
	return pass()
}

func checkStreamable(o *Observation) (string, string) {
	if o.LegacySSE {
		return fail("the server spoke %s over the HTTP+SSE transport, which that revision replaced with Streamable HTTP", o.Era)
	}
	return pass()
}

// rpcAnswer is what the rules read of a JSON-RPC answer.
type rpcAnswer struct {
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code json.Number `json:"code"`
		Data struct {
			Requested *string  `json:"requested"`
			Supported []string `json:"supported"`
		} `json:"data"`
	} `json:"error"`
}

// decodeAnswer reads a's JSON-RPC answer; ok is false when it has none.
func decodeAnswer(a Answer) (rpcAnswer, bool) {
	var ra rpcAnswer
	d := json.NewDecoder(bytes.NewReader(jsonRPCBody(a)))
	d.UseNumber()
	if d.Decode(&ra) != nil || (ra.Result == nil && ra.Error == nil) {
		return ra, false
	}
	return ra, true
}

// checkRemoved fails a removed method answered with a result.
func checkRemoved(a Answer, method string) (string, string) {
	if out, d, ok := answerNA(a); ok {
		return out, d
	}
	if ra, ok := decodeAnswer(a); ok && ra.Error == nil && a.Status >= 200 && a.Status <= 299 {
		return fail("%s was answered HTTP %d with a result; 2026-07-28 removed it (want -32601 method not found)", method, a.Status)
	}
	return pass()
}

func checkPingRemoved(o *Observation) (string, string) { return checkRemoved(o.Active.Ping, "ping") }

func checkSetLevelRemoved(o *Observation) (string, string) {
	return checkRemoved(o.Active.SetLevel, "logging/setLevel")
}

// wrongCode says how a is not a JSON-RPC error of code want, or is "".
func wrongCode(a Answer, want string) string {
	ra, ok := decodeAnswer(a)
	switch {
	case !ok:
		return fmt.Sprintf("answered HTTP %d without a JSON-RPC answer", a.Status)
	case ra.Error == nil:
		return fmt.Sprintf("answered HTTP %d with a result", a.Status)
	case ra.Error.Code.String() != want:
		return "answered error " + ra.Error.Code.String()
	}
	return ""
}

func checkHeaderMismatchCode(o *Observation) (string, string) {
	a := o.Active.HeaderMismatch
	if out, d, ok := answerNA(a); ok {
		return out, d
	}
	if why := wrongCode(a, "-32020"); why != "" {
		return fail("a tools/list request with Mcp-Method %s was %s, want error -32020", MismatchedMethod, why)
	}
	return pass()
}

func checkUnsupportedVersion(o *Observation) (string, string) {
	a := o.Active.BadMetaVersion
	if out, d, ok := answerNA(a); ok {
		return out, d
	}
	if why := wrongCode(a, "-32022"); why != "" {
		return fail("a request of protocol version %s was %s, want 400 with error -32022", FutureVersion, why)
	}
	if a.Status != 400 {
		return fail("a request of protocol version %s was answered HTTP %d, want 400", FutureVersion, a.Status)
	}
	ra, _ := decodeAnswer(a)
	if ra.Error.Data.Requested == nil || !slices.Contains(ra.Error.Data.Supported, Era20260728) {
		return fail("the -32022 error's data does not name the requested version and list %s among the supported ones", Era20260728)
	}
	return pass()
}

// What the active requests send.
const (
	// ForeignOrigin is the Origin of the DNS-rebinding check: a name no
	// server's allow-list holds (.invalid is reserved, RFC 2606).
	ForeignOrigin = "https://rebind.mcpmon.invalid"
	// UnsupportedVersion is a revision no server speaks.
	UnsupportedVersion = "1999-01-01"
	// FutureVersion is a revision newer than any server speaks: what a
	// client newer than the server asks, and must be told -32022 with the
	// versions to fall back to. (An older unknown one may be taken for a
	// 2025-era header and answered a plain 400.)
	FutureVersion = "2099-01-01"
	// MismatchedMethod is the Mcp-Method header sent with a tools/list
	// body.
	MismatchedMethod = "prompts/list"
)

// ActiveEvery is how often the active rules' requests are sent per
// endpoint by default: they cost the target a few extra requests.
const ActiveEvery = time.Hour

// RecheckDivisor bounds the early rounds Due grants a server whose answers
// changed: at most this many per period of every.
const RecheckDivisor = 12

// Due reports whether the probe at slot sends the active rules' requests:
// when prev has none (never sent, or another era), when prev's were sent in
// an earlier period of every, or when the server's answers (results, the
// ResultsDigest of this probe's observation) differ from prev's and prev's
// requests are at least every/RecheckDivisor old. A deploy that brings a
// regression changes the answers, so it shows within minutes instead of up
// to a period later, and a server whose answers change on every probe costs
// at most RecheckDivisor extra rounds a period. Each endpoint's periods are
// offset by a hash of its ID, so a fleet's extra requests spread over the
// period instead of all landing at the top of the hour. every <= 0 means
// never.
func Due(endpointID string, prev *msg.Conformance, era, results string, slot time.Time, every time.Duration) bool {
	if every <= 0 {
		return false
	}
	if prev == nil || prev.ActiveAt.IsZero() || (era != "" && prev.Era != era) {
		return true
	}
	if results != "" && prev.Results != "" && results != prev.Results && slot.Sub(prev.ActiveAt) >= every/RecheckDivisor {
		return true
	}
	var h uint64 = 14695981039346656037
	for i := 0; i < len(endpointID); i++ {
		h ^= uint64(endpointID[i])
		h *= 1099511628211
	}
	offset := int64(h % uint64(every))
	period := func(t time.Time) int64 { return (t.UnixNano() + offset) / int64(every) }
	return period(prev.ActiveAt) != period(slot)
}
