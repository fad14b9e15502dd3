package deploy_test

import (
	"bytes"
	"errors"
	"flag"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	yaml "go.yaml.in/yaml/v3"

	"github.com/mcpmon/mcpmon/dashboards"
	"github.com/mcpmon/mcpmon/pkg/config"
	"github.com/mcpmon/mcpmon/pkg/metrics"
	"github.com/mcpmon/mcpmon/pkg/msg"
)

// roles are the processes `mcpmon <role>` runs, with the queue each one
// consumes (the queue its consumers autoscale on).
var roles = map[string]string{"api": "", "prober": msg.QueueCommands, "aggregator": msg.QueueResults, "alerter": msg.QueueVerdicts}

type obj = map[string]any

func yamlDocs(t *testing.T, path string) []obj {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	var out []obj
	for {
		var d obj
		err := dec.Decode(&d)
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if d != nil {
			out = append(out, d)
		}
	}
}

// dig walks nested maps and lists: dig(o, "spec", "template", 0).
func dig(v any, path ...any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, ok := v.(obj)
			if !ok {
				return nil
			}
			v = m[k]
		case int:
			s, ok := v.([]any)
			if !ok || k >= len(s) {
				return nil
			}
			v = s[k]
		}
	}
	return v
}

func str(v any, path ...any) string {
	s, _ := dig(v, path...).(string)
	return s
}

func labelsMatch(selector, labels any) bool {
	sel, _ := selector.(obj)
	lab, _ := labels.(obj)
	if len(sel) == 0 {
		return false
	}
	for k, v := range sel {
		if lab[k] != v {
			return false
		}
	}
	return true
}

func TestKubernetesManifests(t *testing.T) {
	byKind := map[string][]obj{}
	files, _ := filepath.Glob("kubernetes/*.yaml")
	for _, f := range files {
		if filepath.Base(f) == "kustomization.yaml" {
			continue
		}
		for _, d := range yamlDocs(t, f) {
			if str(d, "apiVersion") == "" || str(d, "kind") == "" || str(d, "metadata", "name") == "" {
				t.Errorf("%s: document without apiVersion/kind/metadata.name: %v", f, d)
			}
			if k := str(d, "kind"); k != "Namespace" && k != "Kustomization" && str(d, "metadata", "namespace") != "mcpmon" {
				t.Errorf("%s: %s/%s not in namespace mcpmon", f, k, str(d, "metadata", "name"))
			}
			byKind[str(d, "kind")] = append(byKind[str(d, "kind")], d)
		}
	}
	find := func(kind, name string) obj {
		for _, d := range byKind[kind] {
			if str(d, "metadata", "name") == name {
				return d
			}
		}
		return nil
	}
	for role, consumes := range roles {
		t.Run(role, func(t *testing.T) {
			name := "mcpmon-" + role
			dep := find("Deployment", name)
			if dep == nil {
				t.Fatalf("no Deployment %s", name)
			}
			podLabels := dig(dep, "spec", "template", "metadata", "labels")
			if !labelsMatch(dig(dep, "spec", "selector", "matchLabels"), podLabels) {
				t.Errorf("Deployment selector does not match its pod labels")
			}
			c := dig(dep, "spec", "template", "spec", "containers", 0)
			if args, _ := dig(c, "args").([]any); len(args) != 1 || args[0] != role {
				t.Errorf("container args %v, want [%s] (mcpmon %s)", args, role, role)
			}
			if str(c, "ports", 0, "name") != "http" || dig(c, "ports", 0, "containerPort") != 8080 {
				t.Errorf("want container port http:8080, got %v", dig(c, "ports"))
			}
			for probe, path := range map[string]string{"livenessProbe": "/healthz", "readinessProbe": "/readyz"} {
				if str(c, probe, "httpGet", "path") != path || str(c, probe, "httpGet", "port") != "http" {
					t.Errorf("%s: want GET %s on port http, got %v", probe, path, dig(c, probe))
				}
			}
			for _, r := range [][]any{{"requests", "cpu"}, {"requests", "memory"}, {"limits", "memory"}} {
				if dig(c, append([]any{"resources"}, r...)...) == nil {
					t.Errorf("missing resources.%s.%s", r[0], r[1])
				}
			}
			if dig(c, "securityContext", "readOnlyRootFilesystem") != true || dig(dep, "spec", "template", "spec", "securityContext", "runAsNonRoot") != true {
				t.Errorf("want runAsNonRoot and a read-only root filesystem")
			}
			env := map[string]bool{}
			for _, e := range dig(c, "env").([]any) {
				env[str(e, "name")] = true
				if strings.Contains(strings.ToLower(str(e, "value")), "redis://") {
					t.Errorf("env %s carries a Redis URL in clear: use the Secret", str(e, "name"))
				}
			}
			if !env["MCPMON_REDIS_URL"] {
				t.Errorf("MCPMON_REDIS_URL not set from the mcpmon-redis Secret")
			}
			if role == "prober" && !env["MCPMON_REGION"] {
				t.Errorf("prober without MCPMON_REGION: results would carry no region label")
			}
			if sa := str(dep, "spec", "template", "spec", "serviceAccountName"); find("ServiceAccount", sa) == nil {
				t.Errorf("service account %q not defined", sa)
			}

			pdb := find("PodDisruptionBudget", name)
			if pdb == nil || !labelsMatch(dig(pdb, "spec", "selector", "matchLabels"), podLabels) {
				t.Errorf("no PodDisruptionBudget selecting %s's pods", name)
			}
			svc := find("Service", name+"-pods")
			if svc == nil || !labelsMatch(dig(svc, "spec", "selector"), podLabels) || str(svc, "spec", "clusterIP") != "None" {
				t.Errorf("no headless Service %s-pods selecting the pods (Prometheus DNS discovery)", name)
			}

			so := find("ScaledObject", name)
			if consumes == "" {
				if so != nil {
					t.Errorf("%s consumes no queue but has a ScaledObject", role)
				}
				return
			}
			if so == nil {
				t.Fatalf("no ScaledObject scaling %s on the %s queue", role, consumes)
			}
			if str(so, "spec", "scaleTargetRef", "name") != name {
				t.Errorf("ScaledObject targets %q", str(so, "spec", "scaleTargetRef", "name"))
			}
			trig := dig(so, "spec", "triggers", 0)
			if str(trig, "type") != "aws-sqs-queue" || str(trig, "metadata", "queueURL") != "mcpmon-"+consumes+".fifo" {
				t.Errorf("trigger %v: want aws-sqs-queue on mcpmon-%s.fifo", trig, consumes)
			}
			if a := str(trig, "authenticationRef", "name"); find("TriggerAuthentication", a) == nil {
				t.Errorf("TriggerAuthentication %q not defined", a)
			}
			if dig(dep, "spec", "replicas") != nil {
				t.Errorf("replicas set on an autoscaled Deployment: every apply would fight KEDA")
			}
			if min, _ := dig(so, "spec", "minReplicaCount").(int); min < 2 {
				t.Errorf("minReplicaCount %d: the PDB (minAvailable 1) needs at least 2 to allow a drain", min)
			}
		})
	}
	if find("Service", "mcpmon-api") == nil {
		t.Error("no Service for the REST API")
	}

	// kustomization lists every manifest except the operator-only PodMonitor.
	k := yamlDocs(t, "kubernetes/kustomization.yaml")[0]
	var listed []string
	for _, r := range dig(k, "resources").([]any) {
		listed = append(listed, r.(string))
	}
	var want []string
	for _, f := range files {
		if b := filepath.Base(f); b != "kustomization.yaml" && b != "podmonitor.yaml" {
			want = append(want, b)
		}
	}
	if !slices.Equal(slices.Sorted(slices.Values(listed)), want) {
		t.Errorf("kustomization resources %v, want %v", listed, want)
	}
}

func TestComposeStack(t *testing.T) {
	d := yamlDocs(t, "compose.yaml")[0]
	services, _ := d["services"].(obj)
	for _, want := range []string{"redis", "sqs", "queues", "api", "prober-eu", "prober-us", "aggregator", "alerter", "prometheus", "grafana"} {
		if services[want] == nil {
			t.Errorf("compose: no service %s", want)
		}
	}
	cmdOf := func(s string) string {
		c, _ := dig(services, s, "command").([]any)
		var parts []string
		for _, p := range c {
			parts = append(parts, p.(string))
		}
		return strings.Join(parts, " ")
	}
	for s, want := range map[string]string{"queues": "queues ensure", "api": "api", "prober-eu": "prober", "prober-us": "prober", "aggregator": "aggregator", "alerter": "alerter"} {
		if got := cmdOf(s); got != want {
			t.Errorf("compose %s: command %q, want %q", s, got, want)
		}
		if str(services, s, "image") != "mcpmon/mcpmon:dev" {
			t.Errorf("compose %s: image %q", s, str(services, s, "image"))
		}
		env, _ := dig(services, s, "environment").(obj)
		if env["MCPMON_QUEUE"] != "sqs" || env["MCPMON_STORE"] != "redis" || env["MCPMON_LISTEN"] != "0.0.0.0:8080" {
			t.Errorf("compose %s: want queue sqs, store redis, listen 0.0.0.0:8080; env %v", s, env)
		}
	}
	if a, b := str(services, "prober-eu", "environment", "MCPMON_REGION"), str(services, "prober-us", "environment", "MCPMON_REGION"); a == "" || a == b {
		t.Errorf("the two probers need distinct regions, got %q and %q", a, b)
	}
	for name, s := range services {
		for _, p := range asSlice(dig(s, "ports")) {
			if !strings.HasPrefix(p.(string), "127.0.0.1:") {
				t.Errorf("compose %s publishes %v on every interface", name, p)
			}
		}
	}
	// Every Prometheus static target is a compose service on the listen port.
	prom := yamlDocs(t, "prometheus/prometheus.yml")[0]
	for _, sc := range asSlice(prom["scrape_configs"]) {
		for _, st := range asSlice(dig(sc, "static_configs")) {
			for _, tg := range asSlice(dig(st, "targets")) {
				host, port, _ := strings.Cut(tg.(string), ":")
				if host == "localhost" {
					continue
				}
				if services[host] == nil || port != "8080" {
					t.Errorf("prometheus target %s is not a compose service on :8080", tg)
				}
			}
		}
	}
	// Grafana's provider path is where compose mounts dashboards/.
	prov := yamlDocs(t, "grafana/provisioning/dashboards/mcpmon.yaml")[0]
	path := str(prov, "providers", 0, "options", "path")
	mounted := false
	for _, v := range asSlice(dig(services, "grafana", "volumes")) {
		if v.(string) == "../dashboards:"+path+":ro" {
			mounted = true
		}
	}
	if !mounted {
		t.Errorf("grafana provider reads %s but compose does not mount ../dashboards there", path)
	}
	ds := yamlDocs(t, "grafana/provisioning/datasources/mcpmon.yaml")[0]
	if str(ds, "datasources", 0, "type") != "prometheus" || str(ds, "datasources", 0, "url") != "http://prometheus:9090" {
		t.Errorf("datasource provisioning: %v", ds)
	}
}

func asSlice(v any) []any { s, _ := v.([]any); return s }

// --- Prometheus rules ---------------------------------------------------------

func TestRulesUseCatalogAndAreAllTested(t *testing.T) {
	rules := yamlDocs(t, "prometheus/rules.yml")[0]
	alerts := map[string]bool{}
	for _, g := range asSlice(rules["groups"]) {
		for _, r := range asSlice(dig(g, "rules")) {
			name := str(r, "alert")
			if name == "" {
				t.Errorf("recording rule %v: only alerts expected", r)
				continue
			}
			alerts[name] = true
			for _, m := range dashboards.MetricNames(str(r, "expr")) {
				if _, ok := metrics.Lookup(m); !ok {
					t.Errorf("%s: metric %s is not in the catalog", name, m)
				}
			}
			if str(r, "labels", "severity") == "" || str(r, "annotations", "summary") == "" {
				t.Errorf("%s: needs a severity label and a summary", name)
			}
		}
	}
	for _, want := range []string{"MCPMonPipelineStalled", "MCPMonDLQNotEmpty", "MCPMonAlertDeliveryFailing", "MCPMonProbersMissing"} {
		if !alerts[want] {
			t.Errorf("rules.yml has no %s", want)
		}
	}
	// Each alert has a test case where it fires and one where it must not.
	fires, quiet := map[string]bool{}, map[string]bool{}
	tests := yamlDocs(t, "prometheus/rules_test.yml")[0]
	for _, tc := range asSlice(tests["tests"]) {
		for _, a := range asSlice(dig(tc, "alert_rule_test")) {
			if len(asSlice(dig(a, "exp_alerts"))) > 0 {
				fires[str(a, "alertname")] = true
			} else {
				quiet[str(a, "alertname")] = true
			}
		}
	}
	for _, a := range slices.Sorted(maps.Keys(alerts)) {
		if !fires[a] || !quiet[a] {
			t.Errorf("%s: rules_test.yml needs a firing case (%v) and a quiet case (%v)", a, fires[a], quiet[a])
		}
	}
}

// promtool finds promtool: MCPMON_TEST_PROMTOOL (set by `make test` through
// .ci/start-prometheus.sh), else PATH; skips when absent unless
// MCPMON_REQUIRE_PEERS=1.
func promtool(t *testing.T) string {
	t.Helper()
	return findTool(t, "MCPMON_TEST_PROMTOOL", "promtool")
}

func findTool(t *testing.T, env, name string) string {
	t.Helper()
	if p := os.Getenv(env); p != "" {
		return p
	}
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	if os.Getenv("MCPMON_REQUIRE_PEERS") == "1" {
		t.Fatalf("%s not set and %s not on PATH but MCPMON_REQUIRE_PEERS=1: .ci/start-prometheus.sh should have installed it", env, name)
	}
	t.Skipf("%s not set: run `make test` (or eval \"$(.ci/start-prometheus.sh DIR)\") for Debian's prometheus package", env)
	return ""
}

func TestPromtool(t *testing.T) {
	bin := promtool(t)
	for _, args := range [][]string{
		{"check", "config", "prometheus.yml"},
		{"check", "config", "prometheus-kubernetes.yml"},
		{"check", "rules", "rules.yml"},
		{"test", "rules", "rules_test.yml"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			cmd := exec.Command(bin, args...)
			cmd.Dir = "prometheus"
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
			}
			if !strings.Contains(string(out), "SUCCESS") {
				t.Fatalf("promtool %s printed no SUCCESS:\n%s", strings.Join(args, " "), out)
			}
		})
	}
}

// Every MCPMON_* variable the manifests set must be a real flag's variable:
// a typo would be silently ignored by the process.
func TestManifestEnvIsRealConfig(t *testing.T) {
	fs := flag.NewFlagSet("mcpmon", flag.ContinueOnError)
	o := config.Defaults()
	o.Register(fs)
	known := map[string]bool{}
	fs.VisitAll(func(f *flag.Flag) { known[config.EnvName(f.Name)] = true })
	known[config.EnvSecretsKey] = true // environment only, on purpose

	seen := map[string]string{}
	note := func(where string, names ...string) {
		for _, n := range names {
			if strings.HasPrefix(n, "MCPMON_") {
				seen[n] = where
			}
		}
	}
	files, _ := filepath.Glob("kubernetes/*.yaml")
	for _, f := range files {
		for _, d := range yamlDocs(t, f) {
			switch str(d, "kind") {
			case "ConfigMap":
				note(f, slices.Collect(maps.Keys(dig(d, "data").(obj)))...)
			case "Deployment":
				for _, e := range asSlice(dig(d, "spec", "template", "spec", "containers", 0, "env")) {
					note(f, str(e, "name"))
				}
			}
		}
	}
	compose := yamlDocs(t, "compose.yaml")[0]
	for name, s := range compose["services"].(obj) {
		if env, ok := dig(s, "environment").(obj); ok {
			note("compose.yaml "+name, slices.Collect(maps.Keys(env))...)
		}
	}
	if len(seen) < 5 {
		t.Fatalf("found only %d MCPMON_ variables: %v", len(seen), seen)
	}
	for _, n := range slices.Sorted(maps.Keys(seen)) {
		if !known[n] {
			t.Errorf("%s sets %s, which is no mcpmon flag's variable", seen[n], n)
		}
	}
}
