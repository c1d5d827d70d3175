package config

import (
	"encoding"
	"fmt"
	"maps"
	"math"
	"reflect"
	"sort"
	"strings"
	"unicode/utf8"

	"gopkg.in/yaml.v3"

	"github.com/agentanvil/anvil/host/internal/duration"
)

// The rule for numbers, one for the whole file: a key that is absent (or
// null) takes its default; a key that is given says what it means. So every
// count, limit and timeout given must be > 0 — an explicit 0 or a negative
// number is an error, never a silent default — except where 0 has a meaning
// of its own, listed in zeroMeans. Fractions (threshold, max_error_rate)
// are within [0, 1], other floats (prices, temperature) >= 0, and no number
// is NaN or infinite. The rule is applied by Go kind, so a field added to
// judgeconfig.Config or pluginconfig.Limits is covered without a line here.
//
// Keys are "<entity kind> <key path>".
var zeroMeans = map[string]string{
	"judge max_retries": "no retries",
}

// unitKeys are the fractions.
var unitKeys = map[string]bool{"metric threshold": true, "defaults threshold": true, "metric max_error_rate": true,
	"metric samples.stop_at_ci_width": true}

// entities name the items of the top-level collections in messages.
var entities = map[string]string{"judges": "judge", "plugins": "plugin", "metrics": "metric"}

var (
	nodeType            = reflect.TypeFor[yaml.Node]()
	durationType        = reflect.TypeFor[duration.Duration]()
	yamlUnmarshalerType = reflect.TypeFor[yaml.Unmarshaler]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
	samplesType         = reflect.TypeFor[Samples]()
)

// place is where a value sits, for messages: the entity it belongs to
// (`metric "x"`, `judge "k"`, "defaults", or "" at the top) and its key path
// inside that entity ("limits.timeout").
type place struct {
	entity string // as printed
	name   string // the judges or plugins map key, the metric name
	kind   string // judge, plugin, metric, defaults or ""
	path   string
}

func (p place) in() string {
	if p.entity == "" {
		return ""
	}
	return " in " + p.entity
}

func (p place) key(k string) place {
	if p.path != "" {
		k = p.path + "." + k
	}
	p.path = k
	return p
}

// problem is one error found by the strict walk.
type problem struct {
	line int
	msg  string
}

// strict walks the YAML document against the Go types it decodes into and
// reports, with the line and the key, what yaml.v3 reports by Go type and
// field name (or not at all): unknown keys with a suggestion, values of the
// wrong type, repeated keys, and numbers outside the rule above. yaml.v3's
// decode runs after it, as the authority on what decodes.
type strict struct {
	problems []problem
	// zeros are the keys of zeroMeans given as an explicit 0, as
	// "<kind> <path> <entity name>" ("judge max_retries default").
	zeros  map[string]bool
	depth  int
	visits int
}

// The walk follows aliases and merges, so it bounds its depth (a cyclic
// anchor) and the nodes it visits (an alias bomb, merges of merges). The
// config's typed part is shallow — Params, where nesting is free, is not
// walked — so real files are far below both.
const (
	maxDepth  = 64
	maxVisits = 1 << 20
)

func (s *strict) add(line int, format string, args ...any) {
	s.problems = append(s.problems, problem{line, fmt.Sprintf(format, args...)})
}

// value checks node n against type t.
func (s *strict) value(n *yaml.Node, t reflect.Type, at place) {
	n = resolve(n)
	if n == nil || isNull(n) || t == nodeType {
		return // absent, or kept as YAML for a later, kind-specific check
	}
	if s.visits++; s.visits == maxVisits {
		s.add(n.Line, "the config expands to more than %d values through its aliases", maxVisits)
	}
	if s.visits >= maxVisits {
		return
	}
	if s.depth++; s.depth > maxDepth {
		s.depth--
		return
	}
	defer func() { s.depth-- }()
	if t == samplesType {
		// A number, or the adaptive samples' mapping.
		if n.Kind == yaml.MappingNode {
			s.mapping(n, reflect.TypeFor[adaptiveSamples](), at, nil)
		} else {
			s.leaf(n, reflect.TypeFor[int](), at)
		}
		return
	}
	if isLeaf(t) {
		s.leaf(n, t, at)
		return
	}
	switch t.Kind() {
	case reflect.Pointer:
		s.value(n, t.Elem(), at)
	case reflect.Struct:
		if s.want(n, yaml.MappingNode, t, at) {
			s.mapping(n, t, at, nil)
		}
	case reflect.Map:
		if !s.want(n, yaml.MappingNode, t, at) {
			return
		}
		var entries func(n *yaml.Node)
		entries = func(n *yaml.Node) {
			s.eachKey(n, at, func(k, v *yaml.Node) {
				if k.Tag == "!!merge" {
					for _, src := range mergeSources(v) {
						if src.Kind == yaml.MappingNode && s.depth < maxDepth {
							s.depth++
							entries(src)
							s.depth--
						}
					}
					return
				}
				s.entry(k, v, t, at)
			})
		}
		entries(n)
	case reflect.Slice:
		if !s.want(n, yaml.SequenceNode, t, at) {
			return
		}
		for i, item := range n.Content {
			if ent := entities[at.path]; ent != "" && at.entity == "" {
				name := scalarValue(item, "name")
				label := fmt.Sprintf("%s %q", ent, name)
				if name == "" {
					label = fmt.Sprintf("%s[%d]", at.path, i)
				}
				s.value(item, t.Elem(), place{entity: label, name: name, kind: ent})
				continue
			}
			s.value(item, t.Elem(), at.key(fmt.Sprint(i)))
		}
	default:
		s.leaf(n, t, at)
	}
}

// entry checks the value of key k of a map of t.
func (s *strict) entry(k, v *yaml.Node, t reflect.Type, at place) {
	if ent := entities[at.path]; ent != "" && at.entity == "" {
		s.value(v, t.Elem(), place{entity: fmt.Sprintf("%s %q", ent, k.Value), name: k.Value, kind: ent})
		return
	}
	s.value(v, t.Elem(), at.key(k.Value))
}

// mapping checks a mapping against struct type t. skip holds keys given
// directly in an outer mapping, which override the same keys merged in
// with <<.
func (s *strict) mapping(n *yaml.Node, t reflect.Type, at place, skip map[string]bool) {
	fields := yamlFields(t)
	direct := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		direct[n.Content[i].Value] = true
	}
	s.eachKey(n, at, func(k, v *yaml.Node) {
		if skip[k.Value] {
			return
		}
		if k.Tag == "!!merge" {
			merged := maps.Clone(skip)
			if merged == nil {
				merged = map[string]bool{}
			}
			for d := range direct {
				merged[d] = true
			}
			for _, src := range mergeSources(v) {
				if src.Kind == yaml.MappingNode && s.depth < maxDepth {
					s.depth++ // a mapping may merge itself: &a {<<: *a}
					s.mapping(src, t, at, merged)
					s.depth--
				}
			}
			return
		}
		f, ok := fields[k.Value]
		if !ok {
			s.add(k.Line, "unknown key %q%s%s", at.key(k.Value).path, at.in(), suggest(k.Value, fields, at))
			return
		}
		s.value(v, f.Type, s.enter(at, t, k.Value))
	})
}

// enter is the place of key k of struct t. Defaults is an entity of its own.
func (s *strict) enter(at place, t reflect.Type, k string) place {
	if at.entity == "" && t == reflect.TypeFor[Config]() {
		if k == "defaults" {
			return place{entity: "defaults", kind: "defaults"}
		}
		return place{path: k}
	}
	return at.key(k)
}

// eachKey calls f for each key of mapping n, reporting repeated keys.
func (s *strict) eachKey(n *yaml.Node, at place, f func(k, v *yaml.Node)) {
	first := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			s.add(k.Line, "a key%s is not a plain name", at.in())
			continue
		}
		if line, dup := first[k.Value]; dup && k.Tag != "!!merge" {
			s.add(k.Line, "key %q%s given twice (first at line %d)", at.key(k.Value).path, at.in(), line)
			continue
		}
		first[k.Value] = k.Line
		f(k, v)
	}
}

// want reports a type error unless n is of kind k.
func (s *strict) want(n *yaml.Node, k yaml.Kind, t reflect.Type, at place) bool {
	if n.Kind == k {
		return true
	}
	s.typeError(n, t, at)
	return false
}

func (s *strict) typeError(n *yaml.Node, t reflect.Type, at place) {
	if at.path == "" {
		what := at.entity
		if what == "" {
			what = "the config"
		}
		s.add(n.Line, "%s: want %s, got %s", what, wantText(t), gotText(n))
		return
	}
	s.add(n.Line, "key %q%s: want %s, got %s", at.path, at.in(), wantText(t), gotText(n))
}

// leaf decodes a scalar as yaml.v3 would, then applies the number rule.
func (s *strict) leaf(n *yaml.Node, t reflect.Type, at place) {
	if n.Kind != yaml.ScalarNode {
		s.typeError(n, t, at)
		return
	}
	tag := n.ShortTag()
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		// yaml.v3 truncates 1.5 to 1 (and 0.5 to 0) in an integer field.
		if t != durationType && tag != "!!int" {
			s.typeError(n, t, at)
			return
		}
	case reflect.Float32, reflect.Float64:
		if tag != "!!int" && tag != "!!float" {
			s.typeError(n, t, at)
			return
		}
	}
	v := reflect.New(t)
	if err := n.Decode(v.Interface()); err != nil {
		if isLeaf(t) && t != durationType {
			// A type with its own decoder says best what it wants.
			s.add(n.Line, "key %q%s: %s", at.path, at.in(), strings.TrimPrefix(err.Error(), "yaml: "))
			return
		}
		if tag == "!!int" && isInteger(t) {
			s.add(n.Line, "key %q%s: %s is out of range%s", at.path, at.in(), n.Value, nonNegative(t))
			return
		}
		s.typeError(n, t, at)
		return
	}
	s.number(n, v.Elem(), at)
}

func nonNegative(t reflect.Type) string {
	if t.Kind() >= reflect.Uint && t.Kind() <= reflect.Uint64 {
		return " (want a number > 0)"
	}
	return ""
}

// number applies the rule for numbers to a decoded value.
func (s *strict) number(n *yaml.Node, v reflect.Value, at place) {
	rule := at.kind + " " + at.path
	bad := func(format string, args ...any) {
		s.add(n.Line, "key %q%s: %s", at.path, at.in(), fmt.Sprintf(format, args...))
	}
	switch v.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		x := v.Int()
		if rule == " version" {
			if x != 1 {
				bad("version %s is not supported (want 1)", shown(n))
			}
			return
		}
		if meaning, ok := zeroMeans[rule]; ok {
			switch {
			case x < 0:
				bad("%s is negative (0 means %s)", shown(n), meaning)
			case x == 0:
				s.zeros[rule+" "+at.name] = true
			}
			return
		}
		if x <= 0 {
			bad("%s must be > 0 (leave the key out for the default)", shown(n))
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if v.Uint() == 0 {
			bad("%s must be > 0 (leave the key out for the default)", shown(n))
		}
	case reflect.Float32, reflect.Float64:
		x := v.Float()
		switch {
		case math.IsNaN(x) || math.IsInf(x, 0):
			bad("want a finite number, got %s", shown(n))
		case unitKeys[rule] && (x < 0 || x > 1):
			bad("%s is outside [0, 1]", shown(n))
		case x < 0:
			bad("%s must not be negative", shown(n))
		}
	}
}

// shown is a scalar as the message quotes it.
func shown(n *yaml.Node) string {
	if n.Value == "" || n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle) != 0 {
		return fmt.Sprintf("%q", n.Value)
	}
	return n.Value
}

// isLeaf reports whether t decodes from a scalar by itself.
func isLeaf(t reflect.Type) bool {
	if t == durationType {
		return true
	}
	p := reflect.PointerTo(t)
	return p.Implements(yamlUnmarshalerType) || p.Implements(textUnmarshalerType)
}

func isInteger(t reflect.Type) bool {
	return t.Kind() >= reflect.Int && t.Kind() <= reflect.Uint64 && t != durationType
}

func wantText(t reflect.Type) string {
	if t == durationType {
		return `a duration like "30s" or a number of seconds`
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a whole number"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Bool:
		return "true or false"
	case reflect.String:
		return "a string"
	case reflect.Struct, reflect.Map:
		return "a mapping"
	case reflect.Slice:
		return "a list"
	case reflect.Pointer:
		return wantText(t.Elem())
	}
	return t.String()
}

func gotText(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	}
	v := n.Value
	if utf8.RuneCountInString(v) > 40 {
		v = string([]rune(v)[:40]) + "…"
	}
	if n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle) != 0 {
		return fmt.Sprintf("the string %q", v)
	}
	return fmt.Sprintf("%q", v)
}

// yamlFields maps the yaml keys of struct t to its fields, as yaml.v3 does:
// the tag's name, else the lowercased field name; "-" and unexported
// fields are not keys.
func yamlFields(t reflect.Type) map[string]reflect.StructField {
	out := map[string]reflect.StructField{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("yaml")
		name, opts, _ := strings.Cut(tag, ",")
		if name == "-" {
			continue
		}
		if strings.Contains(opts, "inline") && f.Type.Kind() == reflect.Struct {
			for k, v := range yamlFields(f.Type) {
				out[k] = v
			}
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		out[name] = f
	}
	return out
}

// suggest names the known key closest to an unknown one, when it is close.
func suggest(key string, fields map[string]reflect.StructField, at place) string {
	best, bestD := "", math.MaxInt
	names := make([]string, 0, len(fields))
	for k := range fields {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		if d := EditDistance(strings.ToLower(key), k); d < bestD {
			best, bestD = k, d
		}
	}
	if best == "" || bestD > 1+len(key)/4 || bestD >= len(key) {
		return ""
	}
	return fmt.Sprintf(" (did you mean %q?)", at.key(best).path)
}

// EditDistance is the optimal string alignment distance: insertions,
// deletions, substitutions and transpositions of adjacent characters. It
// is what every "did you mean" of the host measures.
func EditDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev2 := make([]int, len(rb)+1)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(rb)]
}

// resolve follows aliases.
func resolve(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode && i < maxDepth; i++ {
		n = n.Alias
	}
	if n != nil && n.Kind == yaml.AliasNode {
		return nil
	}
	return n
}

func isNull(n *yaml.Node) bool { return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" }

// mergeSources are the mappings a << key merges in: one, or a list.
func mergeSources(v *yaml.Node) []*yaml.Node {
	v = resolve(v)
	if v == nil {
		return nil
	}
	if v.Kind == yaml.SequenceNode {
		var out []*yaml.Node
		for _, c := range v.Content {
			if c = resolve(c); c != nil {
				out = append(out, c)
			}
		}
		return out
	}
	return []*yaml.Node{v}
}

// scalarValue is the value of key k in mapping n, if it is a scalar.
func scalarValue(n *yaml.Node, k string) string {
	n = resolve(n)
	if n == nil || n.Kind != yaml.MappingNode {
		return ""
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == k {
			if v := resolve(n.Content[i+1]); v != nil && v.Kind == yaml.ScalarNode {
				return v.Value
			}
		}
	}
	return ""
}
