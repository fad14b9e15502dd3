package main

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	pmodel "github.com/prometheus/common/model"
	"go.yaml.in/yaml/v3"
)

// The generated configurations are JSON written for YAML parsers; each
// must say, once parsed as YAML, what a user of that monitor would write.
func TestGatusConfigPostsInitializeWithAStatusCondition(t *testing.T) {
	b, err := gatusConfig("127.0.0.1:8080", []string{"http://127.0.0.1:9/e/0", "http://127.0.0.1:9/e/1"})
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		Metrics bool `yaml:"metrics"`
		Web     struct {
			Address string `yaml:"address"`
			Port    int    `yaml:"port"`
		} `yaml:"web"`
		Endpoints []struct {
			Name       string            `yaml:"name"`
			URL        string            `yaml:"url"`
			Method     string            `yaml:"method"`
			Interval   time.Duration     `yaml:"interval"`
			Headers    map[string]string `yaml:"headers"`
			Body       string            `yaml:"body"`
			Conditions []string          `yaml:"conditions"`
		} `yaml:"endpoints"`
	}
	if err := yaml.Unmarshal(b, &c); err != nil {
		t.Fatalf("not YAML: %v\n%s", err, b)
	}
	if !c.Metrics || c.Web.Address != "127.0.0.1" || c.Web.Port != 8080 || len(c.Endpoints) != 2 {
		t.Fatalf("metrics %v, web %+v, %d endpoints; want metrics on 127.0.0.1:8080 and 2 endpoints", c.Metrics, c.Web, len(c.Endpoints))
	}
	e := c.Endpoints[1]
	if e.Name != "mcp-1" || e.URL != "http://127.0.0.1:9/e/1" || e.Method != "POST" || e.Interval != time.Second ||
		!strings.Contains(e.Body, `"method":"initialize"`) || e.Headers["Accept"] != "application/json, text/event-stream" ||
		len(e.Conditions) != 1 || e.Conditions[0] != "[STATUS] == 200" {
		t.Fatalf("endpoint %+v: want a POST of initialize every 1s with the Streamable HTTP headers and [STATUS] == 200", e)
	}
}

func TestPrometheusScrapesEveryTargetThroughTheBlackboxModule(t *testing.T) {
	var c struct {
		Global struct {
			Interval string `yaml:"scrape_interval"`
		} `yaml:"global"`
		Scrapes []struct {
			Path    string                       `yaml:"metrics_path"`
			Params  map[string][]string          `yaml:"params"`
			Static  []struct{ Targets []string } `yaml:"static_configs"`
			Relabel []struct {
				Source      []string `yaml:"source_labels"`
				Target      string   `yaml:"target_label"`
				Replacement string   `yaml:"replacement"`
			} `yaml:"relabel_configs"`
		} `yaml:"scrape_configs"`
	}
	if err := yaml.Unmarshal(prometheusConfig("127.0.0.1:9115", []string{"http://a/e/0"}), &c); err != nil {
		t.Fatal(err)
	}
	if c.Global.Interval != "1s" || len(c.Scrapes) != 1 {
		t.Fatalf("%+v: want one scrape config every 1s", c)
	}
	s := c.Scrapes[0]
	var modules struct {
		Modules map[string]struct {
			HTTP struct {
				Method string `yaml:"method"`
				Codes  []int  `yaml:"valid_status_codes"`
			} `yaml:"http"`
		} `yaml:"modules"`
	}
	if err := yaml.Unmarshal(blackboxConfig(), &modules); err != nil {
		t.Fatal(err)
	}
	m, ok := modules.Modules[s.Params["module"][0]]
	if s.Path != "/probe" || !ok || m.HTTP.Method != "POST" || len(m.HTTP.Codes) != 1 || m.HTTP.Codes[0] != 200 {
		t.Fatalf("scrape %+v, module %+v: want /probe with the POST module that wants a 200", s, m)
	}
	if len(s.Static) != 1 || len(s.Static[0].Targets) != 1 || len(s.Relabel) != 3 ||
		s.Relabel[0].Target != "__param_target" || s.Relabel[2].Target != "__address__" || s.Relabel[2].Replacement != "127.0.0.1:9115" {
		t.Fatalf("%+v: want the target as ?target= and the exporter as the address", s)
	}
}

func TestCounterSumsTheSeriesThatCarryEveryWantedLabel(t *testing.T) {
	text := `# TYPE gatus_results_total counter
gatus_results_total{key="a",success="true"} 7
gatus_results_total{key="a",success="false"} 2
gatus_results_total{key="b",success="true"} 3
`
	p := expfmt.NewTextParser(pmodel.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		want   map[string]string
		expect float64
	}{
		{nil, 12},
		{map[string]string{"success": "true"}, 10},
		{map[string]string{"success": "true", "key": "b"}, 3},
		{map[string]string{"success": "maybe"}, 0},
	} {
		if got := counter(mfs, "gatus_results_total", tc.want); got != tc.expect {
			t.Errorf("counter(%v) = %g, want %g", tc.want, got, tc.expect)
		}
	}
	if got := counter(mfs, "absent_total", nil); got != 0 {
		t.Errorf("absent counter = %g, want 0", got)
	}
}

func TestPromScalarReadsOneSampleAndRejectsTheRest(t *testing.T) {
	for _, tc := range []struct {
		body    string
		want    float64
		wantErr bool
	}{
		{`{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1700000000.5,"1234"]}]}}`, 1234, false},
		{`{"status":"success","data":{"resultType":"vector","result":[]}}`, 0, false},
		{`{"status":"error","error":"bad"}`, 0, true},
		{`{"status":"success","data":{"result":[{"value":[1,"1"]},{"value":[1,"2"]}]}}`, 0, true},
		{`{"status":"success","data":{"result":[{"value":[1,2]}]}}`, 0, true},
		{`not json`, 0, true},
	} {
		got, err := promScalar([]byte(tc.body))
		if (err != nil) != tc.wantErr || got != tc.want {
			t.Errorf("promScalar(%s) = %g, %v; want %g, error %v", tc.body, got, err, tc.want, tc.wantErr)
		}
	}
}

func TestVersusRowsSetEachMonitorBesideMcpmon(t *testing.T) {
	const n = 101
	rs := []measured{
		{name: monitorMcpmon, endpoints: n, procNames: []string{"mcpmon"}, cpu: []time.Duration{6 * time.Second}, rss: 60 << 20, checks: 6000, ok: 6000},
		{name: monitorGatus, endpoints: n, procNames: []string{"gatus"}, cpu: []time.Duration{3 * time.Second}, rss: 40 << 20, checks: 6000, ok: 5940},
		{name: monitorBlackbox, endpoints: n, procNames: []string{"blackbox_exporter", "prometheus"}, cpu: []time.Duration{2 * time.Second, 4 * time.Second}, rss: 100 << 20, checks: 3000, ok: 3000},
		{name: monitorMcpmon, endpoints: 1, cpu: []time.Duration{time.Second}, rss: 50 << 20, checks: 60},
		{name: monitorGatus, endpoints: 1, cpu: []time.Duration{time.Second}, rss: 40<<20 - 100<<10, checks: 60},
	}
	rows := versusRows(rs, n, time.Minute)
	byLabel := map[string][]string{}
	for _, r := range rows[1:] {
		byLabel[strings.SplitN(r[0], " (", 2)[0]] = r
	}
	if len(rows) != 1+3+2 {
		t.Fatalf("%d rows, want a header, 3 monitors and blackbox's 2 processes:\n%v", len(rows), rows)
	}
	for label, want := range map[string][]string{
		monitorMcpmon:                  {"100.0 (100 %)", "1ms", "10.0 %", "60.0 MiB", "102.4 KiB", "1.00×"},
		monitorGatus:                   {"100.0 (99 %)", "500µs", "5.0 %", "40.0 MiB", "1.0 KiB", "2.00×"},
		monitorBlackbox:                {"50.0 (100 %)", "2ms", "10.0 %", "100.0 MiB", "—", "0.50×"},
		"  of which prometheus":        {"50.0 (100 %)", "1.333ms", "6.7 %", "", "", "0.75×"},
		"  of which blackbox_exporter": {"50.0 (100 %)", "667µs", "3.3 %", "", "", "1.50×"},
	} {
		got, ok := byLabel[label]
		if !ok {
			t.Errorf("no row %q in %v", label, rows)
			continue
		}
		if strings.Join(got[1:], " | ") != strings.Join(want, " | ") {
			t.Errorf("row %q = %v, want %v", label, got[1:], want)
		}
	}
}
