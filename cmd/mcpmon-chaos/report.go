package main

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// printReport writes the final tables and, for every lost, duplicate or
// spurious alert (up to a limit), the evidence: the endpoint's verdicts
// around the outage and the kills that happened meanwhile.
func (h *harness) printReport(plan Plan, r report, ws windowStats, verdicts [][]verdictRow) {
	o, w := h.o, h.out
	kills, redis := h.killCounts()
	byRole := map[string]int{}
	h.mu.Lock()
	for _, k := range h.kills {
		byRole[strings.TrimRight(k.Name, "-0123456789")]++
	}
	h.mu.Unlock()
	var roles []string
	for role, n := range byRole {
		roles = append(roles, fmt.Sprintf("%s %d", role, n))
	}
	sort.Strings(roles)
	killNote := fmt.Sprintf("%d SIGKILL + restart (%s)", kills, strings.Join(roles, ", "))
	if redis && o.Mode == ModeCluster {
		killNote += fmt.Sprintf("; one Redis Cluster primary killed (its replica took over), restarted %s later as a replica", o.RedisDown)
	} else if redis {
		killNote += fmt.Sprintf("; redis-server killed once, down %s", o.RedisDown)
	}
	what := "one `mcpmon run` on a data dir (embedded queue and store)"
	if o.Mode == ModeFleet {
		what = "api, prober, aggregator, alerter × 2 processes on fauxqs + redis-server"
	}
	if o.Mode == ModeAgent {
		what = agentModeWhat
	}
	if o.Mode == ModeEmbeddedAgent {
		what = embeddedAgentModeWhat
	}
	if o.Mode == ModeCluster {
		what = "api, prober, aggregator, alerter × 2 processes on fauxqs + a 3+3 Redis Cluster (sharded layout)"
	}
	perKind := map[Mode]int{}
	for _, out := range plan.Outages {
		perKind[out.Kind]++
	}
	paged := 0
	for _, oc := range r.Outcomes {
		if oc.Open != nil && oc.Resolve != nil {
			paged++
		}
	}
	delays := "n/a"
	target := o.delayTarget()
	if len(r.Delays) > 0 {
		p99 := percentile(r.Delays, 99)
		met := "met"
		if p99 > target {
			met = "MISSED"
		}
		delays = fmt.Sprintf("%s / %s / %s (target p99 ≤ %s = 2 windows + grace + 5s: %s)",
			percentile(r.Delays, 50).Round(10*time.Millisecond), percentile(r.Delays, 95).Round(10*time.Millisecond), p99.Round(10*time.Millisecond), target, met)
	}
	verdict := "PASS: every outage paged exactly once"
	if len(r.InWindow) > 0 {
		verdict = fmt.Sprintf("PASS: every outage paged once, %d repeat(s) inside the documented claim → send → mark window", len(r.InWindow))
	}
	if r.failed() {
		verdict = "FAIL"
	}
	exits := h.unexpectedExits()
	rows := [][2]string{
		{"mode", o.Mode + ": " + what},
		{"planned outages", fmt.Sprintf("%d endpoints × %d = %d (http503 %d, hang %d, html %d), each %d windows, up %d windows between",
			o.Endpoints, o.Outages, len(plan.Outages), perKind[ModeHTTP503], perKind[ModeHang], perKind[ModeHTML], o.OutageWindows, o.UpWindows)},
		{"window / grace / probes", fmt.Sprintf("%s / %s / @every 1s, timeout %s", o.Window, o.Grace, o.ProbeTimeout)},
		{"run", fmt.Sprintf("%s plan + %s drain, seed %d", plan.End.Sub(plan.Start).Round(time.Second), o.drain(), o.Seed)},
		{"kills", killNote},
		{"unexpected exits (restarted after 1s)", fmt.Sprint(len(exits))},
		{"webhook deliveries", fmt.Sprintf("%d accepted, %d answered 500 (%.0f %% asked)", r.Accepted, r.Failed, o.SinkFailRate*100)},
		{"paged exactly once (one open + one resolve)", fmt.Sprintf("%d / %d", paged, len(plan.Outages))},
		{"**lost** (no open alert)", fmt.Sprint(len(r.LostOpen))},
		{"**lost resolve** (opened, never resolved)", fmt.Sprint(len(r.LostResolve))},
		{"where the lost ones went missing", h.causes(r, verdicts)},
		{"**duplicate** (same Idempotency-Key accepted twice, no kill explains it)", fmt.Sprint(len(r.Duplicates))},
		{fmt.Sprintf("repeat inside the documented claim → send → mark window (its sender SIGKILLed within %s of the acceptance; same Idempotency-Key)", markWindow), fmt.Sprint(len(r.InWindow))},
		{"**spurious** (matching no planned outage, or a second incident)", fmt.Sprint(len(r.Spurious))},
		{"no_data verdicts / decided endpoint-windows", fmt.Sprintf("%s (%d / %d); %d windows with no verdict at all", pct(ws.NoData, ws.Total), ws.NoData, ws.Total, ws.Gaps)},
		{"alert delay p50 / p95 / p99 (first failing probe → delivered open)", delays},
		{"result", verdict},
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| measure | value |")
	fmt.Fprintln(w, "|---|---|")
	for _, row := range rows {
		fmt.Fprintf(w, "| %s | %s |\n", row[0], row[1])
	}

	fmt.Fprintln(w)
	fmt.Fprintln(w, "| outage kind | planned | paged once | lost | lost resolve | delay p50 | windows inside outages: down / no_data / up / other |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|")
	for _, k := range OutageKinds {
		var planned, once, lost, lostRes int
		var ds []time.Duration
		for _, oc := range r.Outcomes {
			if oc.Kind != k {
				continue
			}
			planned++
			if oc.Open != nil && oc.Resolve != nil {
				once++
			}
			if oc.Open == nil {
				lost++
			}
			if oc.Resolve == nil {
				lostRes++
			}
			if d, ok := oc.Delay(); ok {
				ds = append(ds, d)
			}
		}
		sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
		p50 := "n/a"
		if len(ds) > 0 {
			p50 = percentile(ds, 50).Round(10 * time.Millisecond).String()
		}
		fmt.Fprintf(w, "| %s | %d | %d | %d | %d | %s | %s |\n", k, planned, once, lost, lostRes, p50, stateCounts(ws.ByPhase[string(k)]))
	}
	fmt.Fprintf(w, "| (up phases) | | | | | | %s |\n", stateCounts(ws.ByPhase["up"]))

	h.printFindings(plan, r, verdicts)
	if len(exits) > 0 {
		fmt.Fprintf(w, "\nunexpected exits (%d):\n", len(exits))
		for i, e := range exits {
			if i == 10 {
				fmt.Fprintf(w, "  … %d more\n", len(exits)-i)
				break
			}
			fmt.Fprintf(w, "  %s\n", e)
		}
	}
}

func pct(n, total int) string {
	if total == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.1f %%", 100*float64(n)/float64(total))
}

func stateCounts(m map[string]int) string {
	other := 0
	for s, n := range m {
		if s != "down" && s != "no_data" && s != "up" {
			other += n
		}
	}
	return fmt.Sprintf("%d / %d / %d / %d", m["down"], m["no_data"], m["up"], other)
}

const maxFindings = 8

func (h *harness) printFindings(plan Plan, r report, verdicts [][]verdictRow) {
	w := h.out
	rel := func(t time.Time) string { return fmt.Sprintf("+%.1fs", t.Sub(plan.Start).Seconds()) }
	describe := func(i int) {
		oc := r.Outcomes[i]
		fmt.Fprintf(w, "  chaos-%03d (%s) outage #%d %s %s–%s, first failing probe %s\n", oc.Endpoint, h.ids[oc.Endpoint], oc.Seq, oc.Kind,
			rel(oc.Start), rel(oc.End), relOrNone(oc.FirstBad, rel))
		from, to := oc.Start.Add(-2*h.o.Window), oc.End.Add(plan.Up+h.o.Window)
		var tl []string
		vs := append([]verdictRow(nil), verdicts[oc.Endpoint]...)
		sort.Slice(vs, func(a, b int) bool { return vs[a].Window.Before(vs[b].Window) })
		for _, v := range vs {
			if v.Window.Before(from) || v.Window.After(to) {
				continue
			}
			s := v.State
			if v.Class != "" && v.Class != "ok" {
				s += "/" + v.Class
			}
			tl = append(tl, rel(v.Window)+" "+s)
		}
		fmt.Fprintf(w, "    verdicts: %s\n", strings.Join(tl, ", "))
		if oc.Open == nil || oc.Resolve == nil {
			fmt.Fprintf(w, "    why: %s\n", diagnose(oc, verdicts[oc.Endpoint], h.o.Window, plan.Up))
		}
		var ks []string
		h.mu.Lock()
		for _, k := range h.kills {
			if !k.At.Before(from) && !k.At.After(to) {
				note := k.Name + " " + rel(k.At)
				if k.Name == "redis-server" {
					note += fmt.Sprintf(" (restarted %s later)", h.o.RedisDown)
				}
				ks = append(ks, note)
			}
		}
		h.mu.Unlock()
		if len(ks) > 0 {
			fmt.Fprintf(w, "    kills meanwhile: %s\n", strings.Join(ks, ", "))
		}
		if oc.Open != nil {
			fmt.Fprintf(w, "    open %s at %s", oc.Open.IncidentID, rel(oc.Open.At))
			if oc.Resolve != nil {
				fmt.Fprintf(w, ", resolve at %s", rel(oc.Resolve.At))
			}
			fmt.Fprintln(w)
		}
	}
	if len(r.LostOpen) > 0 {
		fmt.Fprintf(w, "\nlost outages (%d; first %d):\n", len(r.LostOpen), min(len(r.LostOpen), maxFindings))
		for _, i := range r.LostOpen[:min(len(r.LostOpen), maxFindings)] {
			describe(i)
		}
	}
	if len(r.LostResolve) > 0 {
		fmt.Fprintf(w, "\nopened but never resolved (%d; first %d):\n", len(r.LostResolve), min(len(r.LostResolve), maxFindings))
		for _, i := range r.LostResolve[:min(len(r.LostResolve), maxFindings)] {
			describe(i)
		}
	}
	listDups := func(title string, ds []duplicate) {
		if len(ds) == 0 {
			return
		}
		fmt.Fprintf(w, "\n%s (%d):\n", title, len(ds))
		for i, d := range ds {
			if i == maxFindings {
				break
			}
			var ts []string
			for _, t := range d.Times {
				ts = append(ts, rel(t))
			}
			fmt.Fprintf(w, "  %s accepted at %s\n", d.Key, strings.Join(ts, ", "))
		}
	}
	listDups("duplicates", r.Duplicates)
	listDups("repeats inside the claim → send → mark window", r.InWindow)
	if len(r.Spurious) > 0 {
		fmt.Fprintf(w, "\nspurious (%d):\n", len(r.Spurious))
		for i, f := range r.Spurious {
			if i == maxFindings {
				break
			}
			fmt.Fprintf(w, "  %s %s at %s: %s\n", f.D.Kind, f.D.IncidentID, rel(f.D.At), f.Reason)
			for e, id := range h.ids {
				if id != f.D.EndpointID {
					continue
				}
				for _, j := range plan.ByTarget[e] {
					o := plan.Outages[j]
					if f.D.At.After(o.Start.Add(-plan.Up)) && f.D.At.Before(o.End.Add(2*plan.Up)) {
						describe(j)
						break
					}
				}
			}
		}
	}
}

func relOrNone(t time.Time, rel func(time.Time) string) string {
	if t.IsZero() {
		return "none"
	}
	return rel(t)
}

// causes counts lost and never-resolved outages by diagnosis.
func (h *harness) causes(r report, verdicts [][]verdictRow) string {
	n := map[string]int{}
	for _, i := range append(append([]int(nil), r.LostOpen...), r.LostResolve...) {
		oc := r.Outcomes[i]
		n[diagnosisKind(diagnose(oc, verdicts[oc.Endpoint], h.o.Window, time.Duration(h.o.UpWindows)*h.o.Window))]++
	}
	if len(n) == 0 {
		return "-"
	}
	var parts []string
	for k, c := range n {
		parts = append(parts, fmt.Sprintf("%s: %d", k, c))
	}
	sort.Strings(parts)
	return strings.Join(parts, "; ")
}
