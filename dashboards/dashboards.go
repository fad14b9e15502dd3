// Package dashboards owns mcpmon's Grafana dashboards (fleet.json,
// endpoint.json, pipeline.json) and embeds them, so a binary or a test can
// read them without knowing the repository layout.
//
// Data enters as hand-maintained Grafana JSON (classic model, schemaVersion
// 41) whose queries use only the metric names of pkg/metrics.Catalog; it
// leaves as Dashboard values whose panel queries the tests evaluate against a
// real Prometheus scraping a real mcpmon. deploy/grafana provisions the same
// files into Grafana.
package dashboards

import (
	"embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"sort"
)

//go:embed *.json
var files embed.FS

// FS holds the dashboard JSON files.
func FS() fs.FS { return files }

// Dashboard is the part of Grafana's classic dashboard model mcpmon checks.
type Dashboard struct {
	File          string  `json:"-"`
	UID           string  `json:"uid"`
	Title         string  `json:"title"`
	SchemaVersion int     `json:"schemaVersion"`
	Panels        []Panel `json:"panels"`
	Templating    struct {
		List []Variable `json:"list"`
	} `json:"templating"`
}

// Panel is one panel; rows carry nested panels when collapsed.
type Panel struct {
	ID         int        `json:"id"`
	Type       string     `json:"type"`
	Title      string     `json:"title"`
	Datasource Datasource `json:"datasource"`
	Targets    []Target   `json:"targets"`
	Panels     []Panel    `json:"panels"`
}

// Datasource references a data source, here always ${datasource}.
type Datasource struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

// Target is one PromQL query of a panel.
type Target struct {
	RefID      string     `json:"refId"`
	Expr       string     `json:"expr"`
	Legend     string     `json:"legendFormat"`
	Instant    bool       `json:"instant"`
	Datasource Datasource `json:"datasource"`
}

// Variable is a templating variable.
type Variable struct {
	Name       string          `json:"name"`
	Type       string          `json:"type"`
	Query      json.RawMessage `json:"query"`
	Definition string          `json:"definition"`
	Datasource *Datasource     `json:"datasource"`
}

// QueryString returns a query variable's query whether Grafana stored it as
// a string or as the Prometheus variable editor's object.
func (v Variable) QueryString() string {
	var s string
	if json.Unmarshal(v.Query, &s) == nil {
		return s
	}
	var o struct {
		Query string `json:"query"`
	}
	if json.Unmarshal(v.Query, &o) == nil && o.Query != "" {
		return o.Query
	}
	return v.Definition
}

// AllPanels returns every panel, rows' nested panels included, rows excluded.
func (d Dashboard) AllPanels() []Panel {
	var out []Panel
	var walk func([]Panel)
	walk = func(ps []Panel) {
		for _, p := range ps {
			if p.Type != "row" {
				out = append(out, p)
			}
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	return out
}

// Load parses every *.json dashboard of fsys.
func Load(fsys fs.FS) ([]Dashboard, error) {
	names, err := fs.Glob(fsys, "*.json")
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	var out []Dashboard
	for _, name := range names {
		b, err := fs.ReadFile(fsys, name)
		if err != nil {
			return nil, fmt.Errorf("dashboard %s: %w", name, err)
		}
		var d Dashboard
		if err := json.Unmarshal(b, &d); err != nil {
			return nil, fmt.Errorf("dashboard %s: invalid JSON: %w", name, err)
		}
		d.File = path.Base(name)
		out = append(out, d)
	}
	return out, nil
}

// Builtins are Grafana's global variables a query may use without defining.
var Builtins = []string{"__rate_interval", "__interval", "__interval_ms", "__range", "__range_s", "__range_ms", "__from", "__to", "__dashboard", "__org", "__user", "__name"}

var varRef = regexp.MustCompile(`\$\{([A-Za-z0-9_]+)(?::[^}]*)?\}|\$([A-Za-z0-9_]+)|\[\[([A-Za-z0-9_]+)(?::[^\]]*)?\]\]`)

// VariableRefs returns the names of the template variables s references.
func VariableRefs(s string) []string {
	var out []string
	for _, m := range varRef.FindAllStringSubmatch(s, -1) {
		for _, g := range m[1:] {
			if g != "" {
				out = append(out, g)
			}
		}
	}
	return out
}

// Substitute replaces template variable references in expr: vars first (by
// name), then Grafana's builtins with the given values.
func Substitute(expr string, vars map[string]string) string {
	return varRef.ReplaceAllStringFunc(expr, func(m string) string {
		sub := varRef.FindStringSubmatch(m)
		for _, g := range sub[1:] {
			if v, ok := vars[g]; ok && g != "" {
				return v
			}
		}
		return m
	})
}

// MetricNames returns the metric names a PromQL expression selects: the
// identifiers that are not functions, keywords, label names, grouping labels,
// strings or durations. It is a small lexer, not a parser, sized for the
// queries in these dashboards and rules.
func MetricNames(expr string) []string {
	keywords := map[string]bool{
		"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true,
		"and": true, "or": true, "unless": true, "bool": true, "offset": true, "atan2": true,
		"inf": true, "nan": true, "Inf": true, "NaN": true,
		// Aggregation operators: keywords in PromQL, never metric names.
		"sum": true, "min": true, "max": true, "avg": true, "group": true, "stddev": true, "stdvar": true,
		"count": true, "count_values": true, "bottomk": true, "topk": true, "quantile": true,
		"limitk": true, "limit_ratio": true,
	}
	grouping := map[string]bool{"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true}
	var out []string
	s := expr
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '"' || c == '\'' || c == '`':
			j := i + 1
			for j < len(s) && s[j] != c {
				if s[j] == '\\' && c != '`' {
					j++
				}
				j++
			}
			i = j + 1
		case c == '{':
			i = skipTo(s, i, '}')
		case c == '[':
			i = skipTo(s, i, ']')
		case c == '#':
			for i < len(s) && s[i] != '\n' {
				i++
			}
		case isIdentStart(c):
			j := i
			for j < len(s) && isIdent(s[j]) {
				j++
			}
			word := s[i:j]
			k := j
			for k < len(s) && (s[k] == ' ' || s[k] == '\n' || s[k] == '\t') {
				k++
			}
			i = j
			switch {
			case grouping[word]:
				if k < len(s) && s[k] == '(' {
					i = skipTo(s, k, ')')
				}
			case keywords[word]:
			case k < len(s) && s[k] == '(':
				// function call
			default:
				out = append(out, word)
			}
		case c >= '0' && c <= '9':
			for i < len(s) && (isIdent(s[i]) || s[i] == '.') {
				i++
			}
		default:
			i++
		}
	}
	return out
}

// skipTo returns the index after the first end byte at or after i that is
// not inside a quoted string.
func skipTo(s string, i int, end byte) int {
	for ; i < len(s); i++ {
		switch c := s[i]; c {
		case end:
			return i + 1
		case '"', '\'', '`':
			for i++; i < len(s) && s[i] != c; i++ {
				if s[i] == '\\' && c != '`' {
					i++
				}
			}
		}
	}
	return len(s)
}

func isIdentStart(c byte) bool {
	return c == '_' || c == ':' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
}

func isIdent(c byte) bool { return isIdentStart(c) || (c >= '0' && c <= '9') }
