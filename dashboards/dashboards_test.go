package dashboards_test

import (
	"encoding/json"
	"io/fs"
	"slices"
	"strings"
	"testing"

	"github.com/mcpmon/mcpmon/dashboards"
	"github.com/mcpmon/mcpmon/pkg/metrics"
)

func load(t *testing.T) []dashboards.Dashboard {
	t.Helper()
	ds, err := dashboards.Load(dashboards.FS())
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, d := range ds {
		files = append(files, d.File)
	}
	if want := []string{"endpoint.json", "fleet.json", "pipeline.json"}; !slices.Equal(files, want) {
		t.Fatalf("dashboards %v, want %v", files, want)
	}
	return ds
}

func TestDashboardsParseStrictly(t *testing.T) {
	names, _ := fs.Glob(dashboards.FS(), "*.json")
	for _, name := range names {
		b, _ := fs.ReadFile(dashboards.FS(), name)
		var v map[string]any
		dec := json.NewDecoder(strings.NewReader(string(b)))
		if err := dec.Decode(&v); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		if dec.More() {
			t.Errorf("%s: trailing data after the dashboard object", name)
		}
	}
}

func TestDashboardStructure(t *testing.T) {
	uids := map[string]string{}
	for _, d := range load(t) {
		t.Run(d.File, func(t *testing.T) {
			if d.UID == "" || d.Title == "" {
				t.Fatalf("uid %q title %q: both required for provisioning", d.UID, d.Title)
			}
			if prev, ok := uids[d.UID]; ok {
				t.Fatalf("uid %q also used by %s", d.UID, prev)
			}
			uids[d.UID] = d.File
			// Grafana 11 writes 39-40, Grafana 12 writes 41; older
			// schemas get migrated on every load.
			if d.SchemaVersion < 39 {
				t.Errorf("schemaVersion %d: want a Grafana 11/12 schema (>= 39)", d.SchemaVersion)
			}
			ids := map[int]string{}
			var walk func([]dashboards.Panel)
			walk = func(ps []dashboards.Panel) {
				for _, p := range ps {
					if p.ID <= 0 {
						t.Errorf("panel %q has no id", p.Title)
					}
					if prev, ok := ids[p.ID]; ok {
						t.Errorf("panel id %d used by %q and %q", p.ID, prev, p.Title)
					}
					ids[p.ID] = p.Title
					walk(p.Panels)
				}
			}
			walk(d.Panels)

			vars := map[string]dashboards.Variable{}
			for _, v := range d.Templating.List {
				vars[v.Name] = v
			}
			ds, ok := vars["datasource"]
			if !ok || ds.Type != "datasource" || ds.QueryString() != "prometheus" {
				t.Fatalf("want a template variable datasource of type datasource for prometheus, got %+v", ds)
			}
			panels := d.AllPanels()
			if len(panels) < 5 {
				t.Fatalf("only %d panels", len(panels))
			}
			for _, p := range panels {
				if p.Datasource.UID != "${datasource}" || p.Datasource.Type != "prometheus" {
					t.Errorf("panel %q: datasource %+v, want prometheus ${datasource}", p.Title, p.Datasource)
				}
				if len(p.Targets) == 0 {
					t.Errorf("panel %q has no query", p.Title)
				}
				refs := map[string]bool{}
				for _, tg := range p.Targets {
					if refs[tg.RefID] {
						t.Errorf("panel %q: refId %s twice", p.Title, tg.RefID)
					}
					refs[tg.RefID] = true
					if strings.TrimSpace(tg.Expr) == "" {
						t.Errorf("panel %q %s: empty expr", p.Title, tg.RefID)
					}
					if tg.Datasource.UID != "${datasource}" {
						t.Errorf("panel %q %s: target datasource %+v", p.Title, tg.RefID, tg.Datasource)
					}
					checkVars(t, p.Title, tg.Expr, vars)
					checkMetrics(t, p.Title, tg.Expr)
				}
			}
			for _, v := range d.Templating.List {
				if v.Type == "query" {
					if v.Datasource == nil || v.Datasource.UID != "${datasource}" {
						t.Errorf("variable %s: datasource %+v, want ${datasource}", v.Name, v.Datasource)
					}
					checkVars(t, "variable "+v.Name, v.QueryString(), vars)
					checkMetrics(t, "variable "+v.Name, labelValuesMetric(v.QueryString()))
				}
			}
		})
	}
}

// The endpoint dashboard is built around one variable; pin its query.
func TestEndpointVariable(t *testing.T) {
	for _, d := range load(t) {
		if d.File != "endpoint.json" {
			continue
		}
		for _, v := range d.Templating.List {
			if v.Name == "endpoint" {
				if got := v.QueryString(); got != "label_values(mcpmon_probe_up, endpoint)" {
					t.Fatalf("endpoint variable query %q", got)
				}
				for _, p := range d.AllPanels() {
					for _, tg := range p.Targets {
						if strings.Contains(tg.Expr, "mcpmon_") && strings.Contains(tg.Expr, "endpoint") && !strings.Contains(tg.Expr, `endpoint="$endpoint"`) {
							t.Errorf("panel %q does not filter on $endpoint: %s", p.Title, tg.Expr)
						}
					}
				}
				return
			}
		}
		t.Fatal("endpoint.json has no endpoint variable")
	}
}

func labelValuesMetric(q string) string {
	// label_values(metric, label) → metric
	q = strings.TrimPrefix(strings.TrimSpace(q), "label_values(")
	if i := strings.IndexByte(q, ','); i >= 0 {
		return q[:i]
	}
	return q
}

func checkVars(t *testing.T, where, expr string, vars map[string]dashboards.Variable) {
	t.Helper()
	for _, ref := range dashboards.VariableRefs(expr) {
		if _, ok := vars[ref]; ok || slices.Contains(dashboards.Builtins, ref) {
			continue
		}
		t.Errorf("%s: $%s is neither a template variable nor a Grafana builtin: %s", where, ref, expr)
	}
}

func checkMetrics(t *testing.T, where, expr string) {
	t.Helper()
	names := dashboards.MetricNames(expr)
	if len(names) == 0 {
		t.Errorf("%s: no metric in %q", where, expr)
	}
	for _, n := range names {
		if _, ok := metrics.Lookup(n); !ok {
			t.Errorf("%s: metric %q is not in the catalog (pkg/metrics.Catalog)", where, n)
		}
	}
}

func TestMetricNames(t *testing.T) {
	tests := []struct {
		expr string
		want []string
	}{
		{`sum by (state) (max by (endpoint, state) (mcpmon_verdict_state{state!="up"}))`, []string{"mcpmon_verdict_state"}},
		{`histogram_quantile(0.95, sum by (phase, le) (rate(mcpmon_probe_phase_seconds_bucket{endpoint="$endpoint"}[$__rate_interval])))`, []string{"mcpmon_probe_phase_seconds_bucket"}},
		{`sum(rate(a_total[5m])) / on (x) group_left (y) b offset 5m or vector(0)`, []string{"a_total", "b"}},
		{`min(m{l="}"}) - time() > 1e3 and up == 1`, []string{"m", "up"}},
		{`{__name__="x"}`, nil},
	}
	for _, tt := range tests {
		if got := dashboards.MetricNames(tt.expr); !slices.Equal(got, tt.want) {
			t.Errorf("MetricNames(%q) = %v, want %v", tt.expr, got, tt.want)
		}
	}
}

func TestSubstitute(t *testing.T) {
	got := dashboards.Substitute(`rate(x{endpoint="$endpoint",a="${endpoint}",b="[[endpoint]]"}[$__rate_interval]) $unknown`,
		map[string]string{"endpoint": "ep-1", "__rate_interval": "15s"})
	want := `rate(x{endpoint="ep-1",a="ep-1",b="ep-1"}[15s]) $unknown`
	if got != want {
		t.Fatalf("got %s\nwant %s", got, want)
	}
	if refs := dashboards.VariableRefs(`a $b ${c:raw} [[d]]`); !slices.Equal(refs, []string{"b", "c", "d"}) {
		t.Fatalf("refs %v", refs)
	}
}
