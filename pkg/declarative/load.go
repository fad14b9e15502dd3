// Package declarative owns mcpmon's declarative configuration: a YAML
// document of a tenant's endpoints, keyed by endpoint name, and status
// pages, keyed by slug (statuspages.go), that `mcpmon apply` makes true
// and `mcpmon export` writes back.
//
// Everything here is pure: Load reads files into Desired endpoints,
// Resolve fills in `${env:NAME}` and `${file:PATH}` references (through
// injected lookups, confined to the variables the operator allows and the
// file's own directory) and refuses literal secrets, MakePlan compares the
// desired endpoints with the server's (pkg/api views) and returns the
// creates, updates (as JSON merge patches) and deletes that make them
// equal, and Export turns views into the document. The effects — reading
// the server, sending the plan — belong to the caller (pkg/cli).
//
// Secrets and diffs: the API never returns a secret, so a plan cannot see
// whether a header value or a sink secret changed. It compares what the
// server shows: header names, and sinks after the same redaction the server
// applies. A changed secret value alone is therefore no diff; the
// ForceSecrets option re-sends every endpoint's headers and sinks. With
// that rule, apply → export → apply --dry-run shows no change.
package declarative

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"

	apiv1 "github.com/mcpmon/mcpmon/pkg/api/v1"
)

// Document is the file format: a list of endpoints in the API's input
// shape (camelCase members, Go durations), sinks as YAML.
//
//	endpoints:
//	  - name: search
//	    url: https://mcp.example.com/mcp
//	    schedule: "@every 1m"
//	    headers:
//	      Authorization: Bearer ${env:MCPMON_APPLY_SEARCH_TOKEN}
//	    labels: {team: search}
type Document struct {
	Endpoints []apiv1.EndpointInput `json:"endpoints"`
	// StatusPages are the tenant's status pages (statuspages.go); nil when
	// the file has no statusPages key, empty for `statusPages: []`.
	StatusPages []apiv1.StatusPageInput `json:"statusPages,omitempty"`
}

// Desired is one endpoint of the files with where it came from.
type Desired struct {
	Input apiv1.EndpointInput
	// Source is the file that declared it; ${file:} paths are relative to
	// its directory.
	Source string
}

// Load reads path, a YAML file or a directory of *.yaml and *.yml files
// (not recursive), into the endpoints they declare. Two endpoints of one
// name are refused: the name is the key apply matches on.
func Load(fsys fs.FS, path string) ([]Desired, error) {
	l, err := LoadAll(fsys, path)
	return l.Endpoints, err
}

// LoadAll reads path as Load does, with the status pages the files
// declare. Two pages of one slug are refused: the slug is the key apply
// matches pages on.
func LoadAll(fsys fs.FS, path string) (Loaded, error) {
	var l Loaded
	info, err := fs.Stat(fsys, path)
	if err != nil {
		return l, err
	}
	files := []string{path}
	if info.IsDir() {
		files = nil
		entries, err := fs.ReadDir(fsys, path)
		if err != nil {
			return l, err
		}
		for _, e := range entries {
			if ext := filepath.Ext(e.Name()); !e.IsDir() && (ext == ".yaml" || ext == ".yml") {
				files = append(files, filepath.Join(path, e.Name()))
			}
		}
		if len(files) == 0 {
			return l, fmt.Errorf("%s: no *.yaml or *.yml file in the directory", path)
		}
	}
	where, pageWhere := map[string]string{}, map[string]string{}
	for _, f := range files {
		b, err := fs.ReadFile(fsys, f)
		if err != nil {
			return Loaded{}, err
		}
		doc, err := Parse(b)
		if err != nil {
			return Loaded{}, fmt.Errorf("%s: %w", f, err)
		}
		for _, in := range doc.Endpoints {
			if prev, dup := where[in.Name]; dup {
				return Loaded{}, fmt.Errorf("endpoint name %q is declared twice (%s and %s): apply matches endpoints by name, so each must be unique", in.Name, prev, f)
			}
			where[in.Name] = f
			l.Endpoints = append(l.Endpoints, Desired{Input: in, Source: f})
		}
		l.DeclaresPages = l.DeclaresPages || doc.StatusPages != nil
		for _, p := range doc.StatusPages {
			if prev, dup := pageWhere[p.Slug]; dup {
				return Loaded{}, fmt.Errorf("status page slug %q is declared twice (%s and %s): apply matches pages by slug, so each must be unique", p.Slug, prev, f)
			}
			pageWhere[p.Slug] = f
			l.StatusPages = append(l.StatusPages, p)
		}
	}
	return l, nil
}

// Bounds on one YAML document, checked before it is interpreted: its
// size, then the nesting depth and the node count it expands to (aliases
// counted as the nodes they stand for, so an alias bomb — "billion laughs"
// — is refused for what it would become, at the cost of what it is).
const (
	MaxDocumentBytes = 4 << 20
	MaxDocumentDepth = 64
	MaxDocumentNodes = 200_000
)

// ErrTooLarge: a document over one of the bounds.
var ErrTooLarge = errors.New("document too large")

// Parse decodes one YAML document. Unknown members are refused, so a typo
// is an error rather than a silently ignored setting.
func Parse(b []byte) (Document, error) {
	var doc Document
	if len(b) > MaxDocumentBytes {
		return doc, fmt.Errorf("%w: %d bytes, more than %d", ErrTooLarge, len(b), MaxDocumentBytes)
	}
	var root yaml.Node
	if err := yaml.Unmarshal(b, &root); err != nil {
		return doc, err
	}
	if err := bounded(&root); err != nil {
		return doc, err
	}
	var generic any
	if err := root.Decode(&generic); err != nil {
		return doc, err
	}
	if generic == nil {
		return doc, nil
	}
	// Through JSON, so the API's own types (json tags, RawMessage sinks)
	// are the schema.
	j, err := json.Marshal(generic)
	if err != nil {
		return doc, fmt.Errorf("not representable as JSON: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(j))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&doc); err != nil {
		return doc, fmt.Errorf("%s", strings.TrimPrefix(err.Error(), "json: "))
	}
	for i, in := range doc.Endpoints {
		if strings.TrimSpace(in.Name) == "" {
			return doc, fmt.Errorf("endpoints[%d]: name is required: apply matches endpoints by name", i)
		}
		doc.Endpoints[i].Name = strings.TrimSpace(in.Name)
	}
	for i, p := range doc.StatusPages {
		if strings.TrimSpace(p.Slug) == "" {
			return doc, fmt.Errorf("statusPages[%d]: slug is required: apply matches status pages by slug", i)
		}
		doc.StatusPages[i].Slug = strings.TrimSpace(p.Slug)
	}
	return doc, nil
}

// bounded checks the node tree's depth and expanded size. Each node's
// figures are computed once (aliases share their anchor's), so the check
// costs the tree as written.
func bounded(root *yaml.Node) error {
	type figures struct{ depth, nodes int }
	memo := map[*yaml.Node]figures{}
	var walk func(n *yaml.Node, level int) (figures, error)
	walk = func(n *yaml.Node, level int) (figures, error) {
		if level > MaxDocumentDepth {
			return figures{}, fmt.Errorf("%w: nested deeper than %d levels", ErrTooLarge, MaxDocumentDepth)
		}
		if f, ok := memo[n]; ok {
			if f.nodes < 0 {
				return figures{}, fmt.Errorf("%w: an alias refers to a node that contains it", ErrTooLarge)
			}
			return f, nil
		}
		memo[n] = figures{nodes: -1}
		f := figures{depth: 1, nodes: 1}
		children := n.Content
		if n.Kind == yaml.AliasNode && n.Alias != nil {
			children = []*yaml.Node{n.Alias}
			f = figures{}
		}
		for _, c := range children {
			cf, err := walk(c, level+1)
			if err != nil {
				return figures{}, err
			}
			f.depth = max(f.depth, cf.depth+1)
			f.nodes += cf.nodes
			if f.nodes > MaxDocumentNodes {
				return figures{}, fmt.Errorf("%w: more than %d values once aliases are expanded", ErrTooLarge, MaxDocumentNodes)
			}
		}
		if level+f.depth-1 > MaxDocumentDepth {
			return figures{}, fmt.Errorf("%w: nested deeper than %d levels", ErrTooLarge, MaxDocumentDepth)
		}
		memo[n] = f
		return f, nil
	}
	_, err := walk(root, 0)
	return err
}

// OSFS is the file system Load reads from the process's working directory
// (absolute paths included).
type OSFS struct{}

// Open implements fs.FS over os.Open, accepting any path os accepts.
func (OSFS) Open(name string) (fs.File, error) { return os.Open(name) }

// Stat implements fs.StatFS.
func (OSFS) Stat(name string) (fs.FileInfo, error) { return os.Stat(name) }

// ReadDir implements fs.ReadDirFS.
func (OSFS) ReadDir(name string) ([]fs.DirEntry, error) { return os.ReadDir(name) }

// ReadFile implements fs.ReadFileFS.
func (OSFS) ReadFile(name string) ([]byte, error) { return os.ReadFile(name) }

// YAML renders v (anything encoding/json can marshal) as block-style YAML
// whose members keep v's JSON names and order.
func YAML(v any) ([]byte, error) {
	j, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var n yaml.Node
	if err := yaml.Unmarshal(j, &n); err != nil {
		return nil, err
	}
	block(&n)
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(&n); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// block drops the flow and quoting style JSON parsed into, so the encoder
// picks plain block YAML (quoting only what needs it).
func block(n *yaml.Node) {
	n.Style = 0
	for _, c := range n.Content {
		block(c)
	}
}

// sortedNames returns the canonical header names of h, sorted.
func sortedNames(h map[string]string) []string {
	out := make([]string, 0, len(h))
	for k := range h {
		out = append(out, http.CanonicalHeaderKey(k))
	}
	sort.Strings(out)
	return slices.Compact(out)
}
