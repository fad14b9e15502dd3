package api

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	apiv1 "github.com/mcpmon/mcpmon/pkg/api/v1"
	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/schedule"
)

// Endpoint validation: toEndpoint turns an EndpointInput into the endpoint
// it describes, one small check per field. The rules of the stored values
// themselves (URL form, transport, protocol revision, rule bounds) are the
// model's, model.Endpoint.Validate; the checks here add what belongs to a
// request and to this deployment, and place the model's field errors
// among their own. A check returns the field's value as stored and reports
// every problem through bad, so a request with several mistakes hears of
// all of them, in field order. Field details never quote header values or
// sinks: they are secrets.

// reportFunc records one field problem: ptr is a JSON pointer into the
// request body.
type reportFunc func(ptr, format string, args ...any)

// toEndpoint validates in and builds the endpoint it describes (without ID,
// timestamps or version). checkTarget runs the TargetValidator: a PATCH
// that leaves the URL alone skips it, so pausing or renaming an endpoint
// registered under a since-tightened target policy still works.
func (s *server) toEndpoint(in apiv1.EndpointInput, checkTarget bool) (model.Endpoint, []apiv1.FieldError) {
	var errs []apiv1.FieldError
	bad := func(ptr, format string, args ...any) {
		errs = append(errs, apiv1.FieldError{Pointer: ptr, Detail: fmt.Sprintf(format, args...)})
	}
	e := model.Endpoint{
		Name: strings.TrimSpace(in.Name), URL: strings.TrimSpace(in.URL), Transport: cmp.Or(in.Transport, apiv1.DefaultTransport),
		ProtocolVersion: in.ProtocolVersion, Schedule: strings.TrimSpace(in.Schedule), Paused: in.Paused,
		Public: in.Public, Slug: in.Slug, Rules: ruleCounts(in.Rules), TraceContext: in.TraceContext,
	}
	e.PublicConformance = in.PublicConformance
	var modelErrs model.FieldErrors
	errors.As(e.Validate(), &modelErrs)
	ruled := func(field string) bool { return reportModel(modelErrs, field, bad) }
	if detail := slugProblem(e.Slug, e.Public); detail != "" {
		bad("#/slug", "%s", detail)
	}
	var regionDetail string
	e.Regions, regionDetail = endpointRegions(in.Regions, s.regions)
	if regionDetail != "" {
		bad("#/regions", "%s", regionDetail)
	}
	checkName(e.Name, bad)
	// An endpoint probed by agents alone is probed from inside its
	// owner's network: the central SSRF guard is not its target policy
	// (the agent's own guard is).
	s.checkURLField(e.URL, checkTarget && schedule.Central(e.Regions), ruled("url"), bad)
	s.checkProtocol(e.Transport, e.ProtocolVersion, ruled("transport"), ruled("protocolVersion"), bad)
	var interval time.Duration
	e.Schedule, interval = checkSchedule(e.Schedule, s.clock.Now(), bad)
	e.Timeout = checkTimeout(in.Timeout, interval, bad)
	e.LatencyThreshold = checkLatencyThreshold(in.LatencyThreshold, e.Timeout, bad)
	e.Headers = checkHeaders(in.Headers, bad)
	e.Labels = checkLabels(in.Labels, bad)
	ruled("rules")
	e.Rules = checkRepeatInterval(in.Rules, e.Rules, bad)
	e.Sinks = s.checkSinks(in.Sinks, bad)
	s.deepChecks(in, &e, bad)
	// Agent-side secret references: well-formed, and only on endpoints
	// that agents alone probe (model.ValidateAgentRefs).
	for _, fe := range model.ValidateAgentRefs(e) {
		bad("#/"+fe.Field, "%s", fe.Detail)
	}
	return e, errs
}

// reportModel reports the model's errors of field (and of its members:
// "rules" takes "rules/openWindow") and says whether there were any.
func reportModel(errs model.FieldErrors, field string, bad reportFunc) bool {
	found := false
	for _, fe := range errs {
		if fe.Field == field || strings.HasPrefix(fe.Field, field+"/") {
			bad("#/"+fe.Field, "%s", fe.Detail)
			found = true
		}
	}
	return found
}

// checkName: a name is required display text of bounded length.
func checkName(name string, bad reportFunc) {
	switch n := utf8.RuneCountInString(name); {
	case n == 0:
		bad("#/name", "is required")
	case n > maxNameLen:
		bad("#/name", "must be at most %d characters", maxNameLen)
	default:
		if detail := textProblem(name); detail != "" {
			bad("#/name", "%s", detail)
		}
	}
}

// checkURLField checks, once the URL's form passed the model
// (malformed is false), that it carries no redaction placeholder, then
// (with checkTarget) the deployment's target policy; each only when the
// one before passed.
func (s *server) checkURLField(raw string, checkTarget, malformed bool, bad reportFunc) {
	if malformed {
		return
	}
	if p := redactedParam(raw); p != "" {
		bad("#/url", "query parameter %q is the redaction placeholder; send the real value (a URL on another origin does not inherit the stored one)", p)
	} else if checkTarget && s.validURL != nil {
		if err := s.validURL(raw); err != nil {
			bad("#/url", "target refused: %v", err)
		}
	}
}

// checkProtocol asks the ProtocolValidator whether the prober speaks the
// pinned revision over the transport, once both passed the model.
func (s *server) checkProtocol(transport, version string, badTransport, badVersion bool, bad reportFunc) {
	if badTransport || badVersion || s.validProt == nil {
		return
	}
	if err := s.validProt(transport, version); err != nil {
		bad("#/protocolVersion", "%v", err)
	}
}

// checkSchedule checks the schedule (empty: the default, which it
// returns) and returns its shortest time between two slots as of now, 0
// when the schedule is invalid.
func checkSchedule(spec string, now time.Time, bad reportFunc) (string, time.Duration) {
	if spec == "" {
		spec = apiv1.DefaultSchedule
	}
	if len(spec) > maxScheduleLen {
		bad("#/schedule", "must be at most %d characters", maxScheduleLen)
		return spec, 0
	}
	sl, err := schedule.New("", spec)
	if err != nil {
		bad("#/schedule", "%v", errors.Unwrap(err))
		return spec, 0
	}
	return spec, sl.ShortestInterval(now)
}

// checkTimeout returns the probe timeout. The rule: a probe must end
// before the endpoint's next slot, or every slot queues behind a hung
// probe and reports too late for its window. An explicit timeout over the
// interval is refused; the default is clamped to it.
func checkTimeout(raw string, interval time.Duration, bad reportFunc) time.Duration {
	timeout := apiv1.DefaultTimeout
	if interval > 0 {
		timeout = max(min(apiv1.DefaultTimeout, interval), apiv1.MinTimeout)
	}
	if raw == "" {
		return timeout
	}
	if len(raw) > maxDurationLen {
		bad("#/timeout", "must be at most %d characters", maxDurationLen)
	} else if d, err := time.ParseDuration(raw); err != nil {
		bad("#/timeout", "must be a Go duration such as \"10s\"")
	} else if d < apiv1.MinTimeout || d > apiv1.MaxTimeout {
		bad("#/timeout", "must be between %s and %s", apiv1.MinTimeout, apiv1.MaxTimeout)
	} else if interval > 0 && d > interval {
		bad("#/timeout", "%s is longer than the schedule's shortest interval (%s): a probe must end before the next one is due; use a timeout of at most %s or a longer schedule", d, interval, interval)
	} else {
		timeout = d
	}
	return timeout
}

// checkLatencyThreshold returns the degraded threshold (0: the prober's
// default), which must be positive and at most the timeout.
func checkLatencyThreshold(raw string, timeout time.Duration, bad reportFunc) time.Duration {
	if raw == "" {
		return 0
	}
	if len(raw) > maxDurationLen {
		bad("#/latencyThreshold", "must be at most %d characters", maxDurationLen)
	} else if d, err := time.ParseDuration(raw); err != nil {
		bad("#/latencyThreshold", "must be a Go duration such as \"2s\"")
	} else if d <= 0 || d > timeout {
		bad("#/latencyThreshold", "must be positive and at most the timeout (%s)", timeout)
	} else {
		return d
	}
	return 0
}

// checkHeaders returns the probe headers under their canonical names,
// those that pass: a valid name the prober does not set itself, a value
// without control characters that is not the redaction placeholder, and
// no two names differing only in case. Problems name the header as sent.
func checkHeaders(in map[string]string, bad reportFunc) map[string]string {
	if len(in) > maxHeaders {
		bad("#/headers", "at most %d headers", maxHeaders)
		return nil
	}
	if len(in) == 0 {
		return nil
	}
	out := make(map[string]string, len(in))
	for _, name := range slices.Sorted(maps.Keys(in)) {
		val := in[name]
		canon := http.CanonicalHeaderKey(name)
		ptr := "#/headers/" + pointerEscape(name)
		switch {
		case len(name) > maxHeaderNameLen:
			bad(ptr, "header names are at most %d characters", maxHeaderNameLen)
		case !validHeaderName(name):
			bad(ptr, "is not a valid HTTP header name")
		case reservedHeaders[canon]:
			bad(ptr, "is set by the prober and cannot be overridden")
		case !validHeaderValue(val):
			bad(ptr, "value must not contain control characters (CR, LF, NUL, VT, ESC, DEL, ...); only tab is allowed")
		case len(val) > maxHeaderValue:
			bad(ptr, "value must be at most %d bytes", maxHeaderValue)
		case val == Redacted:
			bad(ptr, "value is the redaction placeholder; send the real value")
		default:
			if _, dup := out[canon]; dup {
				bad(ptr, "duplicates another header differing only in case")
			}
			out[canon] = val
		}
	}
	return out
}

// checkLabels returns the labels that pass: a name matching labelKeyRE
// and a value of bounded, displayable text.
func checkLabels(in map[string]string, bad reportFunc) map[string]string {
	if len(in) > maxLabels {
		bad("#/labels", "at most %d labels", maxLabels)
		return nil
	}
	if len(in) == 0 {
		return nil
	}
	out := make(map[string]string, len(in))
	for _, k := range slices.Sorted(maps.Keys(in)) {
		if detail := labelProblem(k, in[k]); detail != "" {
			bad("#/labels/"+pointerEscape(k), "%s", detail)
		} else {
			out[k] = in[k]
		}
	}
	return out
}

// labelProblem says why the label k=v is not acceptable, or "": the rule
// of an endpoint's labels and of the selectors that match them.
func labelProblem(k, v string) string {
	switch {
	case len(k) > maxLabelKeyLen || !labelKeyRE.MatchString(k):
		return fmt.Sprintf("label names match %s and are at most %d characters", labelKeyRE, maxLabelKeyLen)
	case len(v) > maxLabelValLen || !utf8.ValidString(v):
		return fmt.Sprintf("label values are valid UTF-8 of at most %d bytes", maxLabelValLen)
	case v != "" && textProblem(v) != "":
		return "label value " + textProblem(v)
	}
	return ""
}

// ruleCounts is the counts of in as model rules (the model checks their
// bounds); nil without rules.
func ruleCounts(in *apiv1.RulesInput) *model.Rules {
	if in == nil {
		return nil
	}
	return &model.Rules{OpenAfter: in.OpenAfter, OpenWindow: in.OpenWindow, ResolveAfter: in.ResolveAfter, RegionQuorum: in.RegionQuorum}
}

// checkRepeatInterval parses the reminder interval into r (the rules'
// counts) and returns the rules, nil when every field is the default.
func checkRepeatInterval(in *apiv1.RulesInput, r *model.Rules, bad reportFunc) *model.Rules {
	if in == nil {
		return nil
	}
	if in.RepeatInterval != "" {
		if len(in.RepeatInterval) > maxDurationLen {
			bad("#/rules/repeatInterval", "must be at most %d characters", maxDurationLen)
		} else if d, err := time.ParseDuration(in.RepeatInterval); err != nil {
			bad("#/rules/repeatInterval", "must be a Go duration such as \"4h\"")
		} else if d < apiv1.MinRepeatInterval {
			bad("#/rules/repeatInterval", "must be at least %s", apiv1.MinRepeatInterval)
		} else {
			r.RepeatInterval = d
		}
	}
	if *r == (model.Rules{}) {
		return nil
	}
	return r
}

// checkSinks returns the endpoint's sinks document (nil when absent or
// null), kept as sent even when refused: within the size caps, without the
// redaction placeholder, and accepted by the SinkValidator.
func (s *server) checkSinks(raw json.RawMessage, bad reportFunc) json.RawMessage {
	sinks := bytes.TrimSpace(raw)
	if len(sinks) == 0 || bytes.Equal(sinks, []byte("null")) {
		return nil
	}
	if detail := sinksCapProblem(sinks); detail != "" {
		bad("#/sinks", "%s", detail)
	} else if bytes.Contains(sinks, []byte(Redacted)) || bytes.Contains(sinks, escapedRedacted) {
		bad("#/sinks", "contains the redaction placeholder; send the real values, or in a PATCH omit the members to keep them")
	} else if s.validSink != nil {
		if err := s.validSink(json.RawMessage(sinks)); err != nil {
			bad("#/sinks", "%v", err)
		}
	}
	return json.RawMessage(bytes.Clone(sinks))
}
