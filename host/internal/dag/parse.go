package dag

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// maxNodes bounds the YAML nodes one Parse visits, so that an alias bomb
// fails instead of exhausting memory.
const maxNodes = 100_000

// Parse decodes a dag configuration from a YAML mapping node (or a document
// node holding one). Decoding is strict: unknown keys, duplicate keys and
// wrong types are errors. Every problem is reported, each naming file:line
// and, inside a node, the node id. Parse checks shape only; Validate checks
// meaning.
func Parse(node *yaml.Node, file string) (*Spec, error) {
	p := &parser{problems: problems{file: file}}
	spec := p.spec(node)
	if err := p.err(); err != nil {
		return nil, err
	}
	spec.File = file
	return spec, nil
}

// ParseYAML parses a YAML document holding a dag configuration.
func ParseYAML(data []byte, file string) (spec *Spec, err error) {
	var doc yaml.Node
	if err := unmarshalYAML(data, &doc); err != nil {
		return nil, &Error{Problems: []string{at(file, 0) + err.Error()}}
	}
	return Parse(&doc, file)
}

// ParseJSON parses a JSON object holding a dag configuration, with the same
// strictness and messages (file:line) as Parse.
func ParseJSON(data []byte, file string) (*Spec, error) {
	node, err := jsonToNode(data)
	if err != nil {
		return nil, &Error{Problems: []string{at(file, 0) + err.Error()}}
	}
	return Parse(node, file)
}

func unmarshalYAML(data []byte, n *yaml.Node) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("yaml: %v", r)
		}
	}()
	return yaml.Unmarshal(data, n)
}

type parser struct {
	problems
	visited int
	halted  bool
}

// deref follows aliases and counts visited nodes; nil means give up (the
// problem is recorded).
func (p *parser) deref(n *yaml.Node) *yaml.Node {
	if p.halted {
		return nil
	}
	for hops := 0; n != nil && n.Kind == yaml.AliasNode; hops++ {
		if hops > 100 || n.Alias == nil {
			p.add(n.Line, "", "unresolvable alias")
			return nil
		}
		n = n.Alias
	}
	if n == nil {
		return nil
	}
	p.visited++
	if p.visited > maxNodes {
		p.halted = true
		p.add(n.Line, "", "configuration too large (more than %d YAML nodes after aliases)", maxNodes)
		return nil
	}
	return n
}

func isNull(n *yaml.Node) bool {
	return n == nil || (n.Kind == yaml.ScalarNode && n.Tag == "!!null")
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		switch n.Tag {
		case "!!null":
			return "null"
		case "!!int", "!!float":
			return "a number"
		case "!!bool":
			return "a boolean"
		}
		return fmt.Sprintf("the string %q", n.Value)
	}
	return "something else"
}

// pairs iterates a mapping's key/value pairs with string keys, reporting
// non-scalar, null and duplicate keys.
func (p *parser) pairs(m *yaml.Node, id string, f func(key string, k, v *yaml.Node)) {
	seen := map[string]int{}
	for i := 0; i+1 < len(m.Content); i += 2 {
		k := p.deref(m.Content[i])
		if k == nil {
			return
		}
		if k.Kind != yaml.ScalarNode || isNull(k) {
			p.add(k.Line, id, "key must be a string, got %s", kindName(k))
			continue
		}
		if k.Tag == "!!merge" {
			p.add(k.Line, id, "merge keys (<<) are not supported")
			continue
		}
		key := k.Value
		if k.Tag == "!!bool" {
			key = canonicalBool(k)
		}
		if prev, dup := seen[key]; dup {
			p.add(k.Line, id, "duplicate key %q (first at line %d)", key, prev)
			continue
		}
		seen[key] = k.Line
		f(key, k, m.Content[i+1])
	}
}

// canonicalBool spells a YAML boolean key as "true" or "false".
func canonicalBool(n *yaml.Node) string {
	var b bool
	if n.Decode(&b) == nil {
		return strconv.FormatBool(b)
	}
	return n.Value
}

func (p *parser) spec(root *yaml.Node) *Spec {
	n := p.deref(root)
	if n != nil && n.Kind == yaml.DocumentNode {
		if len(n.Content) == 0 {
			n = nil
		} else {
			n = p.deref(n.Content[0])
		}
	}
	if n == nil || n.Kind == 0 || isNull(n) {
		p.add(0, "", "empty dag configuration")
		return nil
	}
	if n.Kind != yaml.MappingNode {
		p.add(n.Line, "", "dag configuration must be a mapping, got %s", kindName(n))
		return nil
	}
	s := &Spec{Line: n.Line}
	hasNodes := false
	p.pairs(n, "", func(key string, k, v *yaml.Node) {
		switch key {
		case "aggregate":
			s.Aggregate = p.str(v, "", key)
		case "reason":
			s.Reason = p.str(v, "", key)
		case "roots":
			s.Roots = p.strs(v, "", key)
		case "nodes":
			hasNodes = true
			s.Nodes = p.nodes(v)
		default:
			p.add(k.Line, "", "unknown key %q (want aggregate, reason, roots, nodes)", key)
		}
	})
	if !hasNodes {
		p.add(n.Line, "", "no nodes: key \"nodes\" is required")
	}
	return s
}

func (p *parser) nodes(v *yaml.Node) []NodeSpec {
	v = p.deref(v)
	if v == nil || isNull(v) {
		return nil
	}
	if v.Kind != yaml.SequenceNode {
		p.add(v.Line, "", "nodes: want a list of nodes, got %s", kindName(v))
		return nil
	}
	out := make([]NodeSpec, 0, len(v.Content))
	for i, c := range v.Content {
		c = p.deref(c)
		if c == nil {
			return out
		}
		if c.Kind != yaml.MappingNode {
			p.add(c.Line, "", "nodes[%d]: want a mapping, got %s", i, kindName(c))
			continue
		}
		out = append(out, p.node(c, i))
	}
	return out
}

// nodeID finds a node's id before the rest is decoded, so that every
// message about the node can name it.
func (p *parser) nodeID(m *yaml.Node, i int) string {
	for j := 0; j+1 < len(m.Content); j += 2 {
		k, v := m.Content[j], m.Content[j+1]
		if k.Kind == yaml.ScalarNode && k.Value == "id" {
			for hops := 0; v != nil && v.Kind == yaml.AliasNode && hops < 100; hops++ {
				v = v.Alias
			}
			if v != nil && v.Kind == yaml.ScalarNode && !isNull(v) && v.Value != "" {
				return v.Value
			}
		}
	}
	return fmt.Sprintf("nodes[%d]", i)
}

func (p *parser) node(m *yaml.Node, i int) NodeSpec {
	id := p.nodeID(m, i)
	ns := NodeSpec{Line: m.Line}
	p.pairs(m, id, func(key string, k, v *yaml.Node) {
		switch key {
		case "id":
			ns.ID = p.str(v, id, key)
		case "kind":
			ns.Kind = p.str(v, id, key)
		case "config":
			ns.Config = p.config(v, id)
		case "instructions":
			ns.Instructions = p.str(v, id, key)
		case "output_label":
			ns.OutputLabel = p.str(v, id, key)
		case "criteria":
			ns.Criteria = p.str(v, id, key)
		case "params":
			ns.Params = p.strs(v, id, key)
		case "children":
			ns.Children = p.strs(v, id, key)
		case "verdicts":
			ns.Verdicts = p.verdicts(v, id)
		default:
			p.add(k.Line, id, "unknown key %q (want id, kind, config, instructions, output_label, criteria, params, children, verdicts)", key)
		}
	})
	if ns.ID == "" {
		p.add(m.Line, id, "missing id")
	}
	if ns.Kind == "" {
		p.add(m.Line, id, "missing kind")
	}
	return ns
}

func (p *parser) verdicts(v *yaml.Node, id string) Verdicts {
	v = p.deref(v)
	if v == nil || isNull(v) {
		return nil
	}
	if v.Kind != yaml.MappingNode {
		p.add(v.Line, id, "verdicts: want a mapping of verdict to outcome, got %s", kindName(v))
		return nil
	}
	out := Verdicts{}
	p.pairs(v, id, func(key string, k, o *yaml.Node) {
		vd := Verdict{Key: strings.TrimSpace(key), Line: k.Line}
		o = p.deref(o)
		switch {
		case o == nil, isNull(o):
			// no outcome: Validate reports it
		case o.Kind != yaml.MappingNode:
			p.add(o.Line, id, "verdict %q: want a mapping with one of score, then, metric; got %s", key, kindName(o))
		default:
			p.pairs(o, id, func(ok string, kn, val *yaml.Node) {
				switch ok {
				case "score":
					vd.Score = p.score(val, id, key)
				case "then":
					vd.Then = p.str(val, id, "verdict "+strconv.Quote(key)+": then")
				case "metric":
					vd.Metric = p.str(val, id, "verdict "+strconv.Quote(key)+": metric")
				default:
					p.add(kn.Line, id, "verdict %q: unknown key %q (want score, then or metric)", key, ok)
				}
			})
		}
		out = append(out, vd)
	})
	return out
}

func (p *parser) score(v *yaml.Node, id, verdict string) *float64 {
	v = p.deref(v)
	if v == nil {
		return nil
	}
	if v.Kind != yaml.ScalarNode || (v.Tag != "!!int" && v.Tag != "!!float") {
		p.add(v.Line, id, "verdict %q: score must be a number from 0 to 10, got %s", verdict, kindName(v))
		return nil
	}
	var f float64
	if err := v.Decode(&f); err != nil {
		p.add(v.Line, id, "verdict %q: score %q is not a number", verdict, v.Value)
		return nil
	}
	return &f
}

// str decodes a scalar as its text; null is "".
func (p *parser) str(v *yaml.Node, id, what string) string {
	v = p.deref(v)
	if v == nil || isNull(v) {
		return ""
	}
	if v.Kind != yaml.ScalarNode {
		p.add(v.Line, id, "%s: want a string, got %s", what, kindName(v))
		return ""
	}
	return v.Value
}

// strs decodes a list of strings.
func (p *parser) strs(v *yaml.Node, id, what string) []string {
	v = p.deref(v)
	if v == nil || isNull(v) {
		return nil
	}
	if v.Kind != yaml.SequenceNode {
		p.add(v.Line, id, "%s: want a list of strings, got %s", what, kindName(v))
		return nil
	}
	out := make([]string, 0, len(v.Content))
	for i, c := range v.Content {
		c = p.deref(c)
		if c == nil {
			return out
		}
		if c.Kind != yaml.ScalarNode || isNull(c) {
			p.add(c.Line, id, "%s[%d]: want a string, got %s", what, i, kindName(c))
			continue
		}
		out = append(out, c.Value)
	}
	return out
}

// config converts a node's config mapping to JSON, keys in order.
func (p *parser) config(v *yaml.Node, id string) json.RawMessage {
	v = p.deref(v)
	if v == nil || isNull(v) {
		return nil
	}
	if v.Kind != yaml.MappingNode {
		p.add(v.Line, id, "config: want a mapping, got %s", kindName(v))
		return nil
	}
	var b bytes.Buffer
	if !p.toJSON(&b, v, id, 0) {
		return nil
	}
	return json.RawMessage(b.Bytes())
}

func (p *parser) toJSON(b *bytes.Buffer, n *yaml.Node, id string, depth int) bool {
	n = p.deref(n)
	if n == nil {
		return false
	}
	if depth > 200 {
		p.add(n.Line, id, "config: nested too deeply")
		return false
	}
	switch n.Kind {
	case yaml.MappingNode:
		b.WriteByte('{')
		ok, first := true, true
		p.pairs(n, id, func(key string, _, v *yaml.Node) {
			if !ok {
				return
			}
			if !first {
				b.WriteByte(',')
			}
			first = false
			writeJSONString(b, key)
			b.WriteByte(':')
			ok = p.toJSON(b, v, id, depth+1)
		})
		b.WriteByte('}')
		return ok
	case yaml.SequenceNode:
		b.WriteByte('[')
		for i, c := range n.Content {
			if i > 0 {
				b.WriteByte(',')
			}
			if !p.toJSON(b, c, id, depth+1) {
				return false
			}
		}
		b.WriteByte(']')
		return true
	case yaml.ScalarNode:
		return p.scalarJSON(b, n, id)
	}
	p.add(n.Line, id, "config: unsupported YAML node")
	return false
}

func (p *parser) scalarJSON(b *bytes.Buffer, n *yaml.Node, id string) bool {
	switch n.Tag {
	case "!!null":
		b.WriteString("null")
	case "!!bool":
		var v bool
		if n.Decode(&v) != nil {
			p.add(n.Line, id, "config: bad boolean %q", n.Value)
			return false
		}
		b.WriteString(strconv.FormatBool(v))
	case "!!int", "!!float":
		if isJSONNumber(n.Value) {
			b.WriteString(n.Value)
			return true
		}
		if n.Tag == "!!int" {
			var i int64
			if n.Decode(&i) == nil {
				b.WriteString(strconv.FormatInt(i, 10))
				return true
			}
		}
		var f float64
		if n.Decode(&f) != nil || math.IsInf(f, 0) || math.IsNaN(f) {
			p.add(n.Line, id, "config: number %q has no JSON form", n.Value)
			return false
		}
		b.WriteString(strconv.FormatFloat(f, 'g', -1, 64))
	default:
		writeJSONString(b, n.Value)
	}
	return true
}

func writeJSONString(b *bytes.Buffer, s string) {
	enc, _ := json.Marshal(s) // a string always marshals
	b.Write(enc)
}

// isJSONNumber reports whether s is a JSON number literal.
func isJSONNumber(s string) bool {
	i := 0
	if i < len(s) && s[i] == '-' {
		i++
	}
	digits := func() int {
		j := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		return i - j
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case digits() == 0:
		return false
	}
	if i < len(s) && s[i] == '.' {
		i++
		if digits() == 0 {
			return false
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if digits() == 0 {
			return false
		}
	}
	return i == len(s)
}
