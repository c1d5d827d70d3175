package dag

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"
)

// jsonToNode reads one JSON value into a yaml.Node tree carrying line and
// column numbers, keys in order and duplicates kept, so that JSON and YAML
// configurations go through the same strict Parse.
func jsonToNode(data []byte) (*yaml.Node, error) {
	b := &jsonBuilder{data: data, dec: json.NewDecoder(bytes.NewReader(data))}
	b.dec.UseNumber()
	for i, c := range data {
		if c == '\n' {
			b.lines = append(b.lines, i)
		}
	}
	n, err := b.value()
	if err != nil {
		return nil, err
	}
	if _, err := b.dec.Token(); !errors.Is(err, io.EOF) {
		line, _ := b.pos()
		return nil, fmt.Errorf("line %d: unexpected data after the JSON value", line)
	}
	return n, nil
}

type jsonBuilder struct {
	data  []byte
	dec   *json.Decoder
	lines []int // offsets of '\n'
}

// pos is the line and column of the next token.
func (b *jsonBuilder) pos() (line, col int) {
	off := int(b.dec.InputOffset())
	for off < len(b.data) && strings.IndexByte(" \t\r\n,:", b.data[off]) >= 0 {
		off++
	}
	i := sort.SearchInts(b.lines, off) // newlines before off
	start := 0
	if i > 0 {
		start = b.lines[i-1] + 1
	}
	return i + 1, off - start + 1
}

func (b *jsonBuilder) fail(err error, line int) error {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		i := sort.SearchInts(b.lines, int(se.Offset))
		return fmt.Errorf("line %d: json: %v", i+1, err)
	}
	if errors.Is(err, io.EOF) {
		return fmt.Errorf("line %d: json: unexpected end of input", line)
	}
	return fmt.Errorf("line %d: json: %v", line, err)
}

func (b *jsonBuilder) value() (*yaml.Node, error) {
	line, col := b.pos()
	tok, err := b.dec.Token()
	if err != nil {
		return nil, b.fail(err, line)
	}
	n := &yaml.Node{Line: line, Column: col}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			n.Kind, n.Tag = yaml.MappingNode, "!!map"
			for b.dec.More() {
				kl, kc := b.pos()
				kt, err := b.dec.Token()
				if err != nil {
					return nil, b.fail(err, kl)
				}
				key, ok := kt.(string)
				if !ok {
					return nil, fmt.Errorf("line %d: json: object key must be a string", kl)
				}
				v, err := b.value()
				if err != nil {
					return nil, err
				}
				n.Content = append(n.Content,
					&yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: key, Line: kl, Column: kc}, v)
			}
		case '[':
			n.Kind, n.Tag = yaml.SequenceNode, "!!seq"
			for b.dec.More() {
				v, err := b.value()
				if err != nil {
					return nil, err
				}
				n.Content = append(n.Content, v)
			}
		default:
			return nil, fmt.Errorf("line %d: json: unexpected %q", line, t)
		}
		el, _ := b.pos()
		if _, err := b.dec.Token(); err != nil { // closing delimiter
			return nil, b.fail(err, el)
		}
	case string:
		n.Kind, n.Tag, n.Value = yaml.ScalarNode, "!!str", t
	case json.Number:
		n.Kind, n.Tag, n.Value = yaml.ScalarNode, "!!int", t.String()
		if strings.ContainsAny(n.Value, ".eE") {
			n.Tag = "!!float"
		}
	case bool:
		n.Kind, n.Tag, n.Value = yaml.ScalarNode, "!!bool", fmt.Sprint(t)
	case nil:
		n.Kind, n.Tag, n.Value = yaml.ScalarNode, "!!null", "null"
	}
	return n, nil
}
