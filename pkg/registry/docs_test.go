package registry

import (
	"fmt"
	"maps"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/mcpmon/mcpmon/pkg/testpeers"
)

// docs/reference/registry-import.md lists every member of the registry's
// v0.1 answer the importer decodes, by its JSON path in a page of
// GET /v0.1/servers. The list is checked against the types DecodePage
// fills: a member added to them without a row fails here, and so does a
// row for a member they no longer have.

const registryDoc = "docs/reference/registry-import.md"

// jsonPaths are the JSON members a value of type t decodes, as paths:
// `a.b` for an object member (`a["x.y/z"]` for a namespaced key), `a[]`
// for an array's items, `a.<name>` for a map's values. A struct type already on the path (Input's variables of
// Inputs) is named but not entered again.
func jsonPaths(t reflect.Type) []string {
	var out []string
	var walk func(prefix string, t reflect.Type, seen []reflect.Type)
	walk = func(prefix string, t reflect.Type, seen []reflect.Type) {
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		switch t.Kind() {
		case reflect.Slice:
			if t.Elem().Kind() == reflect.Uint8 || t.Elem() == reflect.TypeFor[[]byte]() {
				return
			}
			walk(prefix+"[]", t.Elem(), seen)
			return
		case reflect.Map:
			walk(prefix+".<name>", t.Elem(), seen)
			return
		case reflect.Struct:
		default:
			return
		}
		if t.PkgPath() != "" && t.PkgPath() != reflect.TypeFor[Input]().PkgPath() {
			return // time.Time and the like are values, not objects
		}
		if slices.Contains(seen, t) {
			return
		}
		seen = append(seen, t)
		for i := range t.NumField() {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if f.Anonymous && name == "" {
				walk(prefix, f.Type, seen) // embedded: its members are this object's
				continue
			}
			if name == "" || name == "-" || !f.IsExported() {
				continue
			}
			p := name
			switch {
			case strings.ContainsAny(name, "./"):
				p = prefix + `["` + name + `"]` // a namespaced _meta key
			case prefix != "":
				p = prefix + "." + name
			}
			out = append(out, p)
			walk(p, f.Type, seen)
		}
	}
	walk("", t, nil)
	return out
}

var docMemberRow = regexp.MustCompile("(?m)^\\| `([a-zA-Z_][^`]*)` \\|")

func memberDrift(doc string, paths []string) []string {
	_, table, ok := strings.Cut(doc, "| member | ")
	if !ok {
		return []string{registryDoc + " has no table of registry members (a header row starting \"| member | \")"}
	}
	table, _, _ = strings.Cut(table, "\n\n")
	documented := map[string]bool{}
	for _, m := range docMemberRow.FindAllStringSubmatch(table, -1) {
		documented[m[1]] = true
	}
	var msgs []string
	for _, p := range paths {
		if !documented[p] {
			msgs = append(msgs, fmt.Sprintf("%s: the table of registry members has no row for `%s`", registryDoc, p))
		}
		delete(documented, p)
	}
	for _, p := range slices.Sorted(maps.Keys(documented)) {
		msgs = append(msgs, fmt.Sprintf("%s has a row for `%s`, which the importer does not decode (ServerList)", registryDoc, p))
	}
	return msgs
}

// TestDocsRegistryMembers keeps the page's table of registry members equal
// to what DecodePage decodes.
func TestDocsRegistryMembers(t *testing.T) {
	for _, msg := range memberDrift(testpeers.RepoFile(t, registryDoc), jsonPaths(reflect.TypeFor[ServerList]())) {
		t.Error(msg)
	}
}

// TestDocsRegistryMemberDriftIsReported proves the check fails both ways.
func TestDocsRegistryMemberDriftIsReported(t *testing.T) {
	type remote struct {
		Remote
		Auth string `json:"authorization"`
	}
	paths := jsonPaths(reflect.TypeFor[struct {
		Remotes []remote `json:"remotes"`
	}]())
	if !slices.Contains(paths, "remotes[].url") || !slices.Contains(paths, "remotes[].authorization") {
		t.Fatalf("jsonPaths misses embedded or added members: %v", paths)
	}
	doc := strings.Replace(testpeers.RepoFile(t, registryDoc), "| member | what the importer does with it |\n|---|---|\n", "| member | what the importer does with it |\n|---|---|\n| `servers[].server.icon` | gone |\n", 1)
	msgs := memberDrift(doc, append(jsonPaths(reflect.TypeFor[ServerList]()), "servers[].server.remotes[].authorization"))
	joined := strings.Join(msgs, "\n")
	for _, want := range []string{
		"no row for `servers[].server.remotes[].authorization`",
		"has a row for `servers[].server.icon`, which the importer does not decode",
	} {
		if !strings.Contains(joined, want) {
			t.Errorf("drift messages lack %q:\n%s", want, joined)
		}
	}
}
