package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// Load reads and checks a config file. Environment fallbacks (OPENAI_*)
// are applied by the judge layer, not here, so the file says what it says.
func Load(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	return Parse(path, data)
}

var yamlLine = regexp.MustCompile(`^\s*(?:yaml: )?line (\d+): `)

// Parse decodes config bytes; path is used for messages and to resolve
// relative paths.
func Parse(path string, data []byte) (*Config, error) {
	cfg := &Config{File: path, Dir: filepath.Dir(path)}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, syntaxErr(path, data, err)
	}
	if doc.Kind == 0 {
		return nil, fmt.Errorf("%s: empty config", path)
	}
	// The walk comes first: it words errors by key and line, and it keeps
	// away from yaml.v3's decoder what is known to panic it (an alias as a
	// mapping key under a merge).
	s := &strict{zeros: map[string]bool{}}
	if doc.Kind == yaml.DocumentNode && len(doc.Content) == 1 {
		s.value(doc.Content[0], reflect.TypeFor[Config](), place{})
	}
	if len(s.problems) > 0 {
		return nil, s.err(path)
	}
	if err := decode(data, cfg); err != nil {
		return nil, yamlErr(path, err) // what the walk does not word (cyclic anchors, say), located
	}
	for name, j := range cfg.Judges {
		if j != nil && s.zeros["judge max_retries "+name] {
			j.MaxRetries = -1 // judgeconfig.Config's "no retries"; its 0 means the default
		}
	}
	recordLines(cfg, &doc)
	if err := cfg.check(); err != nil {
		return nil, err
	}
	return cfg, nil
}

// decode is yaml.v3's strict decode of the one document in data.
func decode(data []byte, cfg *Config) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("yaml: cannot decode: %v", p)
		}
	}()
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(cfg); err != nil {
		return err
	}
	var next yaml.Node
	switch err := dec.Decode(&next); {
	case err == nil:
		return fmt.Errorf("line %d: a second YAML document: a config is one document", max(next.Line, 1))
	case err != io.EOF:
		return errors.New("a second YAML document: a config is one document")
	}
	return nil
}

// err joins the walk's problems in line order, each as file:line: message.
func (s *strict) err(path string) error {
	sort.SliceStable(s.problems, func(i, j int) bool { return s.problems[i].line < s.problems[j].line })
	msgs := make([]string, len(s.problems))
	for i, p := range s.problems {
		msgs[i] = fmt.Sprintf("%s:%d: %s", path, p.line, p.msg)
	}
	return errors.New(strings.Join(msgs, "\n"))
}

// yamlErr rewrites yaml.v3's "line N: msg" into "file:N: msg", one per line.
func yamlErr(path string, err error) error {
	var te *yaml.TypeError
	if errors.As(err, &te) {
		var msgs []string
		for _, e := range te.Errors {
			msgs = append(msgs, locate(path, e))
		}
		return errors.New(strings.Join(msgs, "\n"))
	}
	return errors.New(locate(path, err.Error()))
}

func locate(path, msg string) string {
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		return fmt.Sprintf("%s:%s: %s", path, m[1], msg[len(m[0]):])
	}
	return path + ": " + strings.TrimPrefix(msg, "yaml: ")
}

// parserProblems are the messages of libyaml's parser, as opposed to its
// scanner. yaml.v3 prints a parser error's line 0-based (one too low) and,
// when there is one, at the start of the enclosing block or flow collection
// rather than at the token that is wrong; a scanner error's line is 1-based.
// Neither is reachable other than through the message.
var parserProblems = map[string]bool{
	"did not find expected <stream-start>":   true,
	"did not find expected <document start>": true,
	"found undefined tag handle":             true,
	"did not find expected node content":     true,
	"did not find expected '-' indicator":    true,
	"did not find expected key":              true,
	"did not find expected ',' or ']'":       true,
	"did not find expected ',' or '}'":       true,
	"found duplicate %YAML directive":        true,
	"found incompatible YAML document":       true,
	"found duplicate %TAG directive":         true,
}

// blockProblems are parser errors inside a block collection, which yaml.v3
// locates at the collection's start.
var blockProblems = map[string]bool{
	"did not find expected '-' indicator": true,
	"did not find expected key":           true,
}

// maxRefine bounds how many lines past yaml.v3's line syntaxErr looks for
// the offending one.
const maxRefine = 2000

var unknownAnchor = regexp.MustCompile(`^yaml: unknown anchor '([^']*)' referenced$`)

// syntaxErr locates a YAML syntax error at the line that is wrong, as
// file:line: message.
func syntaxErr(path string, data []byte, err error) error {
	msg := err.Error()
	if m := unknownAnchor.FindStringSubmatch(msg); m != nil {
		if i := bytes.Index(data, []byte("*"+m[1])); i >= 0 {
			return fmt.Errorf("%s:%d: unknown anchor %q referenced", path, 1+bytes.Count(data[:i], []byte{'\n'}), m[1])
		}
	}
	line := 0
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		line, _ = strconv.Atoi(m[1])
		msg = msg[len(m[0]):]
	} else if !strings.HasPrefix(msg, "yaml: ") {
		return fmt.Errorf("%s: %s", path, msg)
	}
	msg = strings.TrimPrefix(msg, "yaml: ")
	if parserProblems[msg] {
		line++ // 0-based; and a missing line is line 0
	} else if line == 0 {
		line = 1
	}
	if !parserProblems[msg] || blockProblems[msg] {
		line = firstFailing(data, line, msg)
	}
	// At the end of the input yaml.v3 points past the last line.
	last := bytes.Count(data, []byte{'\n'})
	if len(data) > 0 && data[len(data)-1] != '\n' {
		last++
	}
	return fmt.Errorf("%s:%d: %s", path, min(line, max(last, 1)), msg)
}

// firstFailing returns the first line n >= from such that the document cut
// after line n fails with the same message: the line of the token that is
// wrong. Cutting a block collection short is valid YAML, so the cut fails
// with msg only once the offending line is in. from when none does.
func firstFailing(data []byte, from int, msg string) int {
	end := 0
	for n := 1; n < from+maxRefine; n++ {
		i := bytes.IndexByte(data[end:], '\n')
		if i < 0 {
			return from
		}
		end += i + 1
		if n < from {
			continue
		}
		var doc yaml.Node
		err := yaml.Unmarshal(data[:end], &doc)
		if err != nil && strings.HasSuffix(err.Error(), ": "+msg) {
			return n
		}
	}
	return from
}

// recordLines stores the line of each metric, plugin and judge for later
// messages.
func recordLines(cfg *Config, doc *yaml.Node) {
	root := doc
	if root.Kind == yaml.DocumentNode && len(root.Content) > 0 {
		root = root.Content[0]
	}
	if root.Kind != yaml.MappingNode {
		return
	}
	for i := 0; i+1 < len(root.Content); i += 2 {
		key, val := root.Content[i], root.Content[i+1]
		switch key.Value {
		case "metrics":
			for j, item := range val.Content {
				if j < len(cfg.Metrics) && cfg.Metrics[j] != nil {
					cfg.Metrics[j].Line = item.Line
				}
			}
		case "plugins":
			for j := 0; j+1 < len(val.Content); j += 2 {
				if p := cfg.Plugins[val.Content[j].Value]; p != nil {
					p.Line = val.Content[j].Line
				}
			}
		case "trust":
			for j := 0; j+1 < len(val.Content); j += 2 {
				if val.Content[j].Value != "publishers" {
					continue
				}
				pubs := val.Content[j+1]
				for k := 0; k+1 < len(pubs.Content); k += 2 {
					if pub := cfg.Trust.Publishers[pubs.Content[k].Value]; pub != nil {
						pub.Line = pubs.Content[k].Line
					}
				}
			}
		case "judges":
			cfg.judgeLines = map[string]int{}
			for j := 0; j+1 < len(val.Content); j += 2 {
				cfg.judgeLines[val.Content[j].Value] = val.Content[j].Line
			}
		}
	}
}

// Resolve makes a path from the config relative to the config's directory.
func (c *Config) Resolve(p string) string {
	if p == "" || filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(c.Dir, p)
}

var nameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)

// check validates what can be validated without loading plugins.
func (c *Config) check() error {
	var errs []error
	at := func(line int) string {
		if line == 0 {
			return c.File
		}
		return fmt.Sprintf("%s:%d", c.File, line)
	}
	if c.Version != 0 && c.Version != 1 {
		errs = append(errs, fmt.Errorf("%s: version %d is not supported (want 1)", c.File, c.Version))
	}
	for name, j := range c.Judges {
		switch {
		case j == nil:
			errs = append(errs, fmt.Errorf("%s: judges.%s is empty", at(c.judgeLines[name]), name))
			continue
		case j.Name != "" && j.Name != name:
			// The key is the name metrics use; a second name would be ignored.
			errs = append(errs, fmt.Errorf("%s: judge %q: name %q differs from its key %q (the key is the judge's name: drop name or make them equal)", at(c.judgeLines[name]), name, j.Name, name))
		}
		j.Name = name
	}
	for name, p := range c.Plugins {
		if p == nil || (p.Path == "" && p.Ref == "") {
			line := 0
			if p != nil {
				line = p.Line
			}
			errs = append(errs, fmt.Errorf("%s: plugins.%s: path is required (a local file; or ref: oci://REGISTRY/REPO:TAG)", at(line), name))
			continue
		}
		if !nameRE.MatchString(name) {
			errs = append(errs, fmt.Errorf("%s: plugins.%s: invalid plugin name", at(p.Line), name))
		}
		if p.Ref != "" {
			switch {
			case p.Path != "":
				errs = append(errs, fmt.Errorf("%s: plugins.%s: give path or ref, not both", at(p.Line), name))
			case !strings.HasPrefix(p.Ref, "oci://"):
				errs = append(errs, fmt.Errorf("%s: plugins.%s: ref %q: want oci://REGISTRY/REPO:TAG or oci://REGISTRY/REPO@sha256:…", at(p.Line), name, p.Ref))
			case p.SHA256 != "" || p.SHA256File != "":
				errs = append(errs, fmt.Errorf("%s: plugins.%s: a ref is pinned by anvil.lock (`anvil-host lock`), not by sha256 or sha256_file", at(p.Line), name))
			}
			continue
		}
		if p.SHA256 == "" && p.SHA256File == "" {
			errs = append(errs, fmt.Errorf("%s: plugins.%s: sha256 (or sha256_file) is required: a plugin is pinned by digest", at(p.Line), name))
		}
		if p.SHA256 != "" && p.SHA256File != "" {
			errs = append(errs, fmt.Errorf("%s: plugins.%s: give sha256 or sha256_file, not both", at(p.Line), name))
		}
	}
	for name, pub := range c.Trust.Publishers {
		where := fmt.Sprintf("%s: trust.publishers.%s", c.File, name)
		if pub != nil && pub.Line > 0 {
			where = fmt.Sprintf("%s:%d: trust.publishers.%s", c.File, pub.Line, name)
		}
		if pub == nil || pub.Key == "" {
			errs = append(errs, fmt.Errorf("%s: key (the publisher's public key file) is required", where))
			continue
		}
		for _, cap := range pub.Capabilities {
			if cap != "judge" {
				errs = append(errs, fmt.Errorf("%s: capabilities: %q is not a capability (known: judge)", where, cap))
			}
		}
	}
	if c.Defaults.Judge != "" && c.Judges[c.Defaults.Judge] == nil {
		errs = append(errs, fmt.Errorf("%s: defaults.judge: no judge named %q", c.File, c.Defaults.Judge))
	}
	if c.Defaults.Judge == "" && len(c.Judges) == 1 {
		for n := range c.Judges {
			c.Defaults.Judge = n
		}
	}
	switch c.Defaults.Cache {
	case "", "off", "rw", "replay":
	default:
		errs = append(errs, fmt.Errorf("%s: defaults.cache: %q is not one of off, rw, replay", c.File, c.Defaults.Cache))
	}
	if len(c.Metrics) == 0 {
		errs = append(errs, fmt.Errorf("%s: no metrics configured", c.File))
	}
	count := map[string]int{}
	for _, m := range c.Metrics {
		if m != nil {
			count[m.Name]++
		}
	}
	seen := map[string]int{}
	for i, m := range c.Metrics {
		if m == nil {
			errs = append(errs, fmt.Errorf("%s: metrics[%d] is empty", c.File, i))
			continue
		}
		where := at(m.Line)
		if m.Name == "" {
			errs = append(errs, fmt.Errorf("%s: metrics[%d]: name is required", where, i))
		} else if !nameRE.MatchString(m.Name) {
			errs = append(errs, fmt.Errorf("%s: metrics[%d]: name %q may hold letters, digits, _ . - only", where, i, m.Name))
		}
		if m.Kind == "" {
			errs = append(errs, fmt.Errorf("%s: metric %s: kind is required", where, m.Name))
		}
		m.Key = m.Name
		if count[m.Name] > 1 {
			seen[m.Name]++
			m.Key = fmt.Sprintf("%s#%d", m.Name, seen[m.Name])
		}
		if jn := c.JudgeName(m); m.Judge != "" && c.Judges[jn] == nil {
			errs = append(errs, fmt.Errorf("%s: metric %s: judge %q is not configured under judges", where, m.Name, jn))
		}
		errs = append(errs, c.checkPanel(where, m)...)
		errs = append(errs, c.checkCascade(where, m)...)
		if m.Params.Kind != 0 && m.Params.Kind != yaml.MappingNode {
			errs = append(errs, fmt.Errorf("%s:%d: metric %s: params must be a mapping", c.File, m.Params.Line, m.Name))
		}
	}
	return errors.Join(errs...)
}
