package abi_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentanvil/anvil/abi"
)

// fuzzDecode fuzzes decoding of one ABI message: decoding arbitrary bytes
// never panics, and whatever decodes survives encode → decode → encode
// unchanged (the host and a guest agree on what they exchanged). check, if
// set, exercises the message's helpers on both decodings.
func fuzzDecode[T any](f *testing.F, name string, check func(t *testing.T, first, second *T)) {
	seeds, _ := filepath.Glob(filepath.Join("testdata", name+".json"))
	variants, _ := filepath.Glob(filepath.Join("testdata", name+".*.json"))
	for _, p := range append(seeds, variants...) {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for _, s := range []string{
		``, `null`, `{}`, `[]`, `"x"`, `{"case":null}`, `{"error":{}}`, `{"config":null,"prepared":null}`,
		`{"case":{"extra":{"a":null,"b":"","c":{ "x" : 1 }}}}`, `{"score":1e308,"threshold":-0}`,
		`{"attrs":{"n":12345678901234567890}}`, `{"requests":[{"score":{"min":0,"max":10}}]}`,
		`{"kinds":[{"name":"a","config_schema":true}]}`, "{\"input\":\"\xff\xfe\"}",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var first T
		if json.Unmarshal(data, &first) != nil {
			return
		}
		b1, err := json.Marshal(&first)
		if err != nil {
			t.Fatalf("a decoded %T does not encode: %v", first, err)
		}
		var second T
		if err := json.Unmarshal(b1, &second); err != nil {
			t.Fatalf("the encoding of a decoded %T does not decode: %v\n%s", first, err, b1)
		}
		b2, err := json.Marshal(&second)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(b1, b2) {
			t.Fatalf("encode→decode→encode is not stable:\n%s\n%s", b1, b2)
		}
		if check != nil {
			check(t, &first, &second)
		}
	})
}

// checkCase exercises the TestCase helpers: no panics, Has agrees with
// Field, Missing agrees with Has, and the rendering of standard fields does
// not depend on whether the case crossed the wire.
func checkCase(t *testing.T, first, second *abi.TestCase) {
	for _, c := range []*abi.TestCase{first, second} {
		names := append([]string(nil), abi.StandardFields...)
		for k := range c.Extra {
			names = append(names, k)
		}
		for _, f := range names {
			text, ok := c.Field(f)
			if c.Has(f) != ok {
				t.Fatalf("Has(%q) != ok of Field", f)
			}
			if !ok && text != "" && !isToolsField(f) { // see TestKnownIssueAbsentToolsText
				t.Fatalf("Field(%q) = %q with ok false", f, text)
			}
			_ = abi.FieldTitle(f)
		}
		for _, m := range c.Missing(names) {
			if c.Has(m) {
				t.Fatalf("Missing reports %q, which Has", m)
			}
		}
	}
	for _, f := range abi.StandardFields {
		a, aok := first.Field(f)
		b, bok := second.Field(f)
		if aok != bok || (a != b && (aok || !isToolsField(f))) { // see TestKnownIssueAbsentToolsText
			t.Fatalf("Field(%q) changes across the wire: %q, %v → %q, %v", f, a, aok, b, bok)
		}
	}
}

func FuzzDecodeDescriptor(f *testing.F) {
	fuzzDecode(f, "descriptor", func(t *testing.T, d, _ *abi.Descriptor) {
		for _, k := range d.Kinds {
			got, ok := d.Kind(k.Name)
			if !ok || got.Name != k.Name {
				t.Fatalf("Kind(%q) not found in its own descriptor", k.Name)
			}
		}
		for _, c := range d.Capabilities {
			if !d.Asks(c) {
				t.Fatalf("Asks(%q) false for a listed capability", c)
			}
		}
	})
}

func FuzzDecodePrepareRequest(f *testing.F) {
	fuzzDecode[abi.PrepareRequest](f, "prepare_request", nil)
}

func FuzzDecodePrepareResult(f *testing.F) {
	fuzzDecode(f, "prepare_result", func(t *testing.T, r, _ *abi.PrepareResult) {
		if r.Error != nil {
			_ = r.Error.Error()
		}
	})
}

func FuzzDecodeMeasureRequest(f *testing.F) {
	fuzzDecode(f, "measure_request", func(t *testing.T, a, b *abi.MeasureRequest) {
		checkCase(t, &a.Case, &b.Case)
	})
}

func FuzzDecodeMeasureResult(f *testing.F) {
	fuzzDecode(f, "measure_result", func(t *testing.T, r, _ *abi.MeasureResult) {
		if r.Error != nil {
			_ = r.Error.Error()
		}
	})
}

func FuzzDecodeNodeRequest(f *testing.F) {
	fuzzDecode(f, "node_request", func(t *testing.T, a, b *abi.NodeRequest) {
		checkCase(t, &a.Case, &b.Case)
	})
}

func FuzzDecodeNodeResult(f *testing.F) {
	fuzzDecode(f, "node_result", func(t *testing.T, r, _ *abi.NodeResult) {
		if r.Error != nil {
			_ = r.Error.Error()
		}
	})
}

func FuzzDecodeJudgeBatch(f *testing.F) {
	fuzzDecode[abi.JudgeBatch](f, "judge_batch", nil)
}

func FuzzDecodeJudgeBatchResult(f *testing.F) {
	fuzzDecode(f, "judge_batch_result", func(t *testing.T, r, _ *abi.JudgeBatchResult) {
		if r.Error != nil {
			_ = r.Error.Error()
		}
		for _, resp := range r.Responses {
			if resp.Error != nil {
				_ = resp.Error.Error()
			}
		}
	})
}

func FuzzDecodeEmbedRequest(f *testing.F) {
	fuzzDecode[abi.EmbedRequest](f, "embed_request", nil)
}

func FuzzDecodeEmbedResult(f *testing.F) {
	fuzzDecode(f, "embed_result", func(t *testing.T, r, _ *abi.EmbedResult) {
		if r.Error != nil {
			_ = r.Error.Error()
		}
	})
}

func FuzzDecodeLogRecord(f *testing.F) {
	fuzzDecode[abi.LogRecord](f, "log_record", nil)
}

func FuzzDecodeError(f *testing.F) {
	fuzzDecode(f, "error", func(t *testing.T, a, b *abi.Error) {
		if a.Error() != b.Error() {
			t.Fatalf("Error() changes across the wire: %q → %q", a.Error(), b.Error())
		}
	})
}

func FuzzDecodeTestCase(f *testing.F) {
	fuzzDecode(f, "test_case", checkCase)
}
