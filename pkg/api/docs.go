package api

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"html/template"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"strings"
)

// GET /docs renders openapi.yaml as one HTML page on the server, with
// html/template: no scripts, no CDN, nothing fetched by the browser. The
// page is built once in New from the embedded document, so what a reader
// sees is exactly the contract the tests hold the handlers to.

//go:embed docs.html.tmpl
var docsTemplate string

type docPage struct {
	Title, Version, Summary, Description string
	Tags                                 []docTag
	Schemas                              []docSchema
}

type docTag struct {
	Name, Description string
	Ops               []docOp
}

type docOp struct {
	Method, Path, ID, Summary, Description string
	// Scope is the key scope the operation needs, or "" for a public one.
	Scope     string
	Params    []docParam
	Body      *docBody
	Responses []docResponse
}

type docParam struct {
	Name, In, Description, Default, Example string
	Required                                bool
	Type                                    docType
}

type docBody struct {
	Required   bool
	MediaTypes []string
	Type       docType
	Example    string
}

type docResponse struct {
	Status, Description, MediaType string
	Headers                        []string
	Type                           docType
	Example                        string
}

type docSchema struct {
	Name, Description string
	Type              docType
	Props             []docProp
	Example           string
}

type docProp struct {
	Name, Description string
	Required          bool
	Type              docType
}

// docType is a schema's type as text, with Ref naming the component
// schema it links to, if any.
type docType struct{ Text, Ref string }

// docsHandler serves the rendered page.
func docsHandler() http.HandlerFunc {
	page, err := renderDocs()
	if err != nil {
		panic("api: rendering the API docs: " + err.Error())
	}
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		// Nothing on the page runs or loads: say so to the browser too.
		w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'")
		_, _ = w.Write(page)
	}
}

// renderDocs builds the HTML page from the embedded document.
func renderDocs() ([]byte, error) {
	doc, err := openAPIDoc()
	if err != nil {
		return nil, err
	}
	tmpl, err := template.New("docs").Funcs(template.FuncMap{"prose": prose}).Parse(docsTemplate)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	if err := tmpl.Execute(&b, buildDocPage(doc)); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// docMethods is the order operations appear in under a path.
var docMethods = []string{"get", "post", "put", "patch", "delete"}

func buildDocPage(doc map[string]any) docPage {
	info := obj(doc["info"])
	comps := obj(doc["components"])
	p := docPage{Title: str(info["title"]), Version: str(info["version"]), Summary: str(info["summary"]), Description: str(info["description"])}

	byTag := map[string]*docTag{}
	for _, t := range list(doc["tags"]) {
		tm := obj(t)
		p.Tags = append(p.Tags, docTag{Name: str(tm["name"]), Description: str(tm["description"])})
	}
	for i := range p.Tags {
		byTag[p.Tags[i].Name] = &p.Tags[i]
	}
	defaultScope := requirementScope(list(doc["security"]))
	paths := obj(doc["paths"])
	for _, path := range slices.Sorted(maps.Keys(paths)) {
		item := obj(paths[path])
		for _, m := range docMethods {
			op, ok := item[m].(map[string]any)
			if !ok {
				continue
			}
			d := docOp{Method: strings.ToUpper(m), Path: path, ID: str(op["operationId"]), Summary: str(op["summary"]), Description: str(op["description"]), Scope: defaultScope}
			if sec, ok := op["security"]; ok {
				d.Scope = requirementScope(list(sec))
			}
			for _, raw := range append(list(item["parameters"]), list(op["parameters"])...) {
				pm := resolve(comps, obj(raw))
				d.Params = append(d.Params, docParam{
					Name: str(pm["name"]), In: str(pm["in"]), Description: str(pm["description"]), Required: pm["required"] == true,
					Type: schemaType(obj(pm["schema"])), Default: jsonText(obj(pm["schema"])["default"]), Example: str(pm["example"]),
				})
			}
			if rb := resolve(comps, obj(op["requestBody"])); len(rb) > 0 {
				body := &docBody{Required: rb["required"] == true}
				content := obj(rb["content"])
				for _, mt := range slices.Sorted(maps.Keys(content)) {
					body.MediaTypes = append(body.MediaTypes, mt)
					c := obj(content[mt])
					if body.Type.Text == "" {
						body.Type = schemaType(obj(c["schema"]))
					}
					if body.Example == "" {
						body.Example = prettyJSON(c["example"])
					}
				}
				d.Body = body
			}
			resps := obj(op["responses"])
			for _, status := range slices.Sorted(maps.Keys(resps)) {
				r := resolve(comps, obj(resps[status]))
				dr := docResponse{Status: status, Description: str(r["description"])}
				dr.Headers = slices.Sorted(maps.Keys(obj(r["headers"])))
				content := obj(r["content"])
				for _, mt := range slices.Sorted(maps.Keys(content)) {
					c := obj(content[mt])
					dr.MediaType, dr.Type, dr.Example = mt, schemaType(obj(c["schema"])), prettyJSON(c["example"])
				}
				d.Responses = append(d.Responses, dr)
			}
			tags := list(op["tags"])
			name := "other"
			if len(tags) > 0 {
				name = str(tags[0])
			}
			t, ok := byTag[name]
			if !ok {
				p.Tags = append(p.Tags, docTag{Name: name})
				byTag = map[string]*docTag{}
				for i := range p.Tags {
					byTag[p.Tags[i].Name] = &p.Tags[i]
				}
				t = byTag[name]
			}
			t.Ops = append(t.Ops, d)
		}
	}

	schemas := obj(comps["schemas"])
	for _, name := range slices.Sorted(maps.Keys(schemas)) {
		s := obj(schemas[name])
		ds := docSchema{Name: name, Description: str(s["description"]), Type: schemaType(s), Example: prettyJSON(s["example"])}
		required := map[string]bool{}
		for _, r := range list(s["required"]) {
			required[str(r)] = true
		}
		props := obj(s["properties"])
		for _, pn := range slices.Sorted(maps.Keys(props)) {
			ps := obj(props[pn])
			ds.Props = append(ds.Props, docProp{Name: pn, Description: str(ps["description"]), Required: required[pn], Type: schemaType(ps)})
		}
		p.Schemas = append(p.Schemas, ds)
	}
	return p
}

// requirementScope reads the scopes of a security requirement list: ""
// for none (a public operation).
func requirementScope(reqs []any) string {
	var scopes []string
	for _, r := range reqs {
		for _, roles := range obj(r) {
			for _, s := range list(roles) {
				scopes = append(scopes, str(s))
			}
		}
	}
	return strings.Join(scopes, ", ")
}

// resolve follows a local $ref ("#/components/parameters/limit") once.
func resolve(comps map[string]any, v map[string]any) map[string]any {
	ref, ok := v["$ref"].(string)
	if !ok {
		return v
	}
	parts := strings.Split(strings.TrimPrefix(ref, "#/components/"), "/")
	if len(parts) != 2 {
		return v
	}
	return obj(obj(comps[parts[0]])[parts[1]])
}

// schemaType describes a schema in a few words.
func schemaType(s map[string]any) docType {
	if ref, ok := s["$ref"].(string); ok {
		name := ref[strings.LastIndex(ref, "/")+1:]
		return docType{Text: name, Ref: name}
	}
	var t string
	switch v := s["type"].(type) {
	case string:
		t = v
	case []any:
		var ts []string
		for _, x := range v {
			ts = append(ts, str(x))
		}
		t = strings.Join(ts, " | ")
	default:
		t = "any JSON"
	}
	switch {
	case t == "array":
		it := schemaType(obj(s["items"]))
		return docType{Text: "array of " + it.Text, Ref: it.Ref}
	case s["format"] != nil:
		t += " (" + str(s["format"]) + ")"
	}
	if e := list(s["enum"]); len(e) > 0 {
		var vs []string
		for _, x := range e {
			vs = append(vs, str(x))
		}
		t += ": " + strings.Join(vs, " | ")
	}
	if c, ok := s["const"]; ok {
		t += " = " + jsonText(c)
	}
	var bounds []string
	for _, k := range []string{"minimum", "maximum", "minLength", "maxLength", "maxProperties", "pattern"} {
		if v, ok := s[k]; ok {
			bounds = append(bounds, k+" "+jsonText(v))
		}
	}
	if len(bounds) > 0 {
		t += " [" + strings.Join(bounds, ", ") + "]"
	}
	return docType{Text: t}
}

func obj(v any) map[string]any { m, _ := v.(map[string]any); return m }
func list(v any) []any         { l, _ := v.([]any); return l }

func str(v any) string {
	switch v := v.(type) {
	case nil:
		return ""
	case string:
		return v
	}
	return fmt.Sprint(v)
}

func jsonText(v any) string {
	if v == nil {
		return ""
	}
	if s, ok := v.(string); ok {
		return s
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func prettyJSON(v any) string {
	if v == nil {
		return ""
	}
	// html/template escapes the page; JSON's own HTML escaping would show
	// "<token>" as "\u003ctoken\u003e".
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
	return strings.TrimSpace(b.String())
}

var (
	codeSpan   = regexp.MustCompile("`([^`]+)`")
	strongSpan = regexp.MustCompile(`\*\*([^*]+)\*\*`)
)

// prose renders a description: paragraphs split at blank lines, lines
// within one joined, and the two bits of Markdown the document uses
// (`code` and **strong**). The text is escaped first, so the markup
// added here is the only markup on the page.
func prose(s string) template.HTML {
	var b strings.Builder
	for para := range strings.SplitSeq(strings.TrimSpace(s), "\n\n") {
		text := template.HTMLEscapeString(strings.Join(strings.Fields(para), " "))
		text = codeSpan.ReplaceAllString(text, "<code>$1</code>")
		text = strongSpan.ReplaceAllString(text, "<strong>$1</strong>")
		b.WriteString("<p>" + text + "</p>")
	}
	return template.HTML(b.String()) //nolint:gosec // built from escaped text above
}
