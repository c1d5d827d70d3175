package config

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
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
		return nil, yamlErr(path, err)
	}
	if doc.Kind == 0 {
		return nil, fmt.Errorf("%s: empty config", path)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(cfg); err != nil {
		return nil, yamlErr(path, err)
	}
	recordLines(cfg, &doc)
	if err := cfg.check(); err != nil {
		return nil, err
	}
	return cfg, nil
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

// recordLines stores the line of each metric and plugin for later messages.
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
	at := func(line int) string { return fmt.Sprintf("%s:%d", c.File, line) }
	if c.Version != 0 && c.Version != 1 {
		errs = append(errs, fmt.Errorf("%s: version %d is not supported (want 1)", c.File, c.Version))
	}
	for name, j := range c.Judges {
		if j == nil {
			errs = append(errs, fmt.Errorf("%s: judges.%s is empty", c.File, name))
			continue
		}
		if j.Name == "" {
			j.Name = name
		}
	}
	for name, p := range c.Plugins {
		if p == nil || p.Path == "" {
			errs = append(errs, fmt.Errorf("%s: plugins.%s: path is required", c.File, name))
			continue
		}
		if !nameRE.MatchString(name) {
			errs = append(errs, fmt.Errorf("%s: plugins.%s: invalid plugin name", at(p.Line), name))
		}
		if p.SHA256 == "" && p.SHA256File == "" {
			errs = append(errs, fmt.Errorf("%s: plugins.%s: sha256 (or sha256_file) is required: a plugin is pinned by digest", at(p.Line), name))
		}
		if p.SHA256 != "" && p.SHA256File != "" {
			errs = append(errs, fmt.Errorf("%s: plugins.%s: give sha256 or sha256_file, not both", at(p.Line), name))
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
	if err := checkThreshold(c.Defaults.Threshold); err != nil {
		errs = append(errs, fmt.Errorf("%s: defaults.threshold: %w", c.File, err))
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
		if err := checkThreshold(m.Threshold); err != nil {
			errs = append(errs, fmt.Errorf("%s: metric %s: threshold: %w", where, m.Name, err))
		}
		if m.Params.Kind != 0 && m.Params.Kind != yaml.MappingNode {
			errs = append(errs, fmt.Errorf("%s:%d: metric %s: params must be a mapping", c.File, m.Params.Line, m.Name))
		}
	}
	return errors.Join(errs...)
}

func checkThreshold(t *float64) error {
	if t != nil && (*t < 0 || *t > 1) {
		return fmt.Errorf("%v is outside [0, 1]", *t)
	}
	return nil
}
