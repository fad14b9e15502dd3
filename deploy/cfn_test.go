package deploy_test

import (
	"fmt"
	"os"
	"strings"
	"testing"

	yaml "go.yaml.in/yaml/v3"
)

// CloudFormation YAML uses short-form intrinsic tags (!Ref, !Sub, !GetAtt,
// !If, !Equals, ...). loadCFN decodes a template into plain Go values with
// each tagged node turned into its long form ({"Ref": x}, {"Fn::Sub": x},
// {"Fn::GetAtt": [res, attr]}), so the test evaluates exactly what
// CloudFormation would.
func loadCFN(t *testing.T, path string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var root yaml.Node
	if err := yaml.Unmarshal(b, &root); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	v, err := cfnValue(&root)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	m, ok := v.(map[string]any)
	if !ok {
		t.Fatalf("%s: template is not a mapping", path)
	}
	return m
}

func cfnValue(n *yaml.Node) (any, error) {
	switch n.Kind {
	case yaml.DocumentNode:
		return cfnValue(n.Content[0])
	case yaml.AliasNode:
		return nil, fmt.Errorf("line %d: CloudFormation does not support YAML aliases", n.Line)
	}
	var v any
	switch n.Kind {
	case yaml.MappingNode:
		m := map[string]any{}
		for i := 0; i < len(n.Content); i += 2 {
			k := n.Content[i].Value
			if _, dup := m[k]; dup {
				return nil, fmt.Errorf("line %d: duplicate key %q", n.Content[i].Line, k)
			}
			val, err := cfnValue(n.Content[i+1])
			if err != nil {
				return nil, err
			}
			m[k] = val
		}
		v = m
	case yaml.SequenceNode:
		s := []any{}
		for _, c := range n.Content {
			val, err := cfnValue(c)
			if err != nil {
				return nil, err
			}
			s = append(s, val)
		}
		v = s
	case yaml.ScalarNode:
		if strings.HasPrefix(n.Tag, "!!") || n.Tag == "" {
			if err := n.Decode(&v); err != nil {
				return nil, err
			}
			return v, nil
		}
		v = n.Value
	}
	if !strings.HasPrefix(n.Tag, "!") || strings.HasPrefix(n.Tag, "!!") {
		return v, nil
	}
	name := strings.TrimPrefix(n.Tag, "!")
	switch name {
	case "Ref", "Condition":
		return map[string]any{name: v}, nil
	case "GetAtt":
		if s, ok := v.(string); ok {
			res, attr, _ := strings.Cut(s, ".")
			return map[string]any{"Fn::GetAtt": []any{res, attr}}, nil
		}
		return map[string]any{"Fn::GetAtt": v}, nil
	case "Sub", "If", "Equals", "Not", "And", "Or", "Join", "Select", "Split", "FindInMap", "GetAZs", "ImportValue", "Base64", "Cidr":
		return map[string]any{"Fn::" + name: v}, nil
	default:
		return nil, fmt.Errorf("line %d: unknown tag %s", n.Line, n.Tag)
	}
}

// cfnEval resolves intrinsic functions against parameter values and
// conditions. GetAtt X.Arn resolves to the ARN of X's evaluated QueueName;
// Ref of a queue resource to its name (standing in for the URL).
type cfnEval struct {
	t          *testing.T
	params     map[string]string
	conditions map[string]bool
	resources  map[string]any
	region     string
	account    string
}

func newCFNEval(t *testing.T, tpl map[string]any, params map[string]string) *cfnEval {
	e := &cfnEval{t: t, params: map[string]string{}, conditions: map[string]bool{},
		resources: tpl["Resources"].(map[string]any), region: "eu-west-1", account: "111122223333"}
	for name, p := range tpl["Parameters"].(map[string]any) {
		if d, ok := p.(map[string]any)["Default"]; ok {
			e.params[name] = fmt.Sprint(d)
		}
	}
	for k, v := range params {
		e.params[k] = v
	}
	if conds, ok := tpl["Conditions"].(map[string]any); ok {
		for name, c := range conds {
			e.conditions[name] = e.cond(c)
		}
	}
	return e
}

func (e *cfnEval) cond(c any) bool {
	m, ok := c.(map[string]any)
	if !ok || len(m) != 1 {
		e.t.Fatalf("condition %v: want one function", c)
	}
	for fn, arg := range m {
		args, _ := arg.([]any)
		switch fn {
		case "Fn::Equals":
			return fmt.Sprint(e.eval(args[0])) == fmt.Sprint(e.eval(args[1]))
		case "Fn::Not":
			return !e.cond(args[0])
		case "Condition":
			return e.conditions[arg.(string)]
		}
		e.t.Fatalf("unsupported condition function %s", fn)
	}
	return false
}

func (e *cfnEval) eval(v any) any {
	switch x := v.(type) {
	case []any:
		out := make([]any, len(x))
		for i := range x {
			out[i] = e.eval(x[i])
		}
		return out
	case map[string]any:
		if len(x) == 1 {
			for fn, arg := range x {
				switch fn {
				case "Ref":
					name := arg.(string)
					if p, ok := e.params[name]; ok {
						return p
					}
					if _, ok := e.resources[name]; ok {
						return e.queueName(name)
					}
					switch name {
					case "AWS::Region":
						return e.region
					case "AWS::AccountId":
						return e.account
					case "AWS::Partition":
						return "aws"
					}
					e.t.Fatalf("Ref to unknown %q", name)
				case "Fn::Sub":
					return e.sub(arg.(string))
				case "Fn::If":
					args := arg.([]any)
					c, ok := e.conditions[args[0].(string)]
					if !ok {
						e.t.Fatalf("Fn::If on undefined condition %v", args[0])
					}
					if c {
						return e.eval(args[1])
					}
					return e.eval(args[2])
				case "Fn::GetAtt":
					args := arg.([]any)
					res, attr := args[0].(string), args[1].(string)
					if _, ok := e.resources[res]; !ok {
						e.t.Fatalf("GetAtt of unknown resource %q", res)
					}
					switch attr {
					case "Arn":
						return e.queueARN(e.queueName(res))
					case "QueueName":
						return e.queueName(res)
					}
					e.t.Fatalf("GetAtt %s.%s unsupported", res, attr)
				}
			}
		}
		out := map[string]any{}
		for k, val := range x {
			out[k] = e.eval(val)
		}
		return out
	}
	return v
}

func (e *cfnEval) sub(s string) string {
	var b strings.Builder
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		j := strings.IndexByte(s[i:], '}')
		if j < 0 {
			e.t.Fatalf("Fn::Sub %q: unterminated ${", s)
		}
		b.WriteString(s[:i])
		name := s[i+2 : i+j]
		b.WriteString(fmt.Sprint(e.eval(map[string]any{"Ref": name})))
		s = s[i+j+1:]
	}
}

func (e *cfnEval) queueName(res string) string {
	r := e.resources[res].(map[string]any)
	if r["Type"] != "AWS::SQS::Queue" {
		e.t.Fatalf("%s is %v, not a queue", res, r["Type"])
	}
	return e.eval(r["Properties"].(map[string]any)["QueueName"]).(string)
}

func (e *cfnEval) queueARN(name string) string {
	return "arn:aws:sqs:" + e.region + ":" + e.account + ":" + name
}
