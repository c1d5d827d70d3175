package wasm

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/host/internal/plugin/transport"
)

// conversationalCase has every field of ABI minor 4 and the single-turn
// fields a minor-3 guest reads.
func conversationalCase() abi.TestCase {
	return abi.TestCase{
		ID:             "chat-1",
		ActualOutput:   "Paris",
		ExpectedOutput: "Paris",
		Context:        []string{"France's capital is Paris."},
		Turns: []abi.Turn{
			{Role: abi.RoleSystem, Content: "Answer in one word."},
			{Role: abi.RoleUser, Content: "Capital of France?"},
			{Role: abi.RoleAssistant, Content: "Paris", ToolsCalled: []abi.ToolCall{{Name: "atlas", Arguments: json.RawMessage(`{"q":"France"}`)}},
				RetrievalContext: []string{"Paris is the capital of France."}},
		},
		Scenario:        "A geography question.",
		ExpectedOutcome: "The user learns the capital.",
		ChatbotRole:     "A terse geography tutor.",
		Extra:           map[string]json.RawMessage{"channel": json.RawMessage(`"chat"`)},
	}
}

// TestOldGuestIgnoresConversationalFields: a guest of minor 3 (its
// TestCase frozen as released, decoded as the minor-3 Go SDK decoded it)
// given a case with the minor-4 fields reads the fields it knows and
// nothing else, and a conversational case without them is, to it, a case
// lacking actual_output.
func TestOldGuestIgnoresConversationalFields(t *testing.T) {
	ctx := context.Background()
	p := load(t, "oldcase", transport.Options{})
	if got := p.Info().Descriptor.ABIMinor; got != 3 {
		t.Fatalf("oldcase says abi_minor %d, want 3", got)
	}
	c := conversationalCase()
	res, err := p.Measure(ctx, nil, &abi.MeasureRequest{Kind: "seen", Metric: "m", Threshold: 0.5, Case: c})
	if err != nil || res.Error != nil {
		t.Fatalf("minor-3 guest on a case with minor-4 fields: %+v, %v", res, err)
	}
	var seen map[string]any
	if err := json.Unmarshal(res.Details, &seen); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"id": "chat-1", "actual_output": "Paris", "expected_output": "Paris",
		"context": []any{"France's capital is Paris."}, "extra": map[string]any{"channel": "chat"},
	}
	if !reflect.DeepEqual(seen, want) {
		t.Errorf("minor-3 guest read %v, want %v", seen, want)
	}

	c.ActualOutput, c.ExpectedOutput = "", ""
	res, err = p.Measure(ctx, nil, &abi.MeasureRequest{Kind: "seen", Metric: "m", Threshold: 0.5, Case: c})
	if err != nil || res.Error == nil || res.Error.Code != abi.CodeMissingField || res.Error.Field != abi.FieldActualOutput {
		t.Fatalf("minor-3 guest on a conversational case: %+v, %v; want missing_field actual_output", res, err)
	}
}

// TestBuiltOldGuestIgnoresConversationalFields runs a module built with an
// earlier SDK — ANVIL_OLD_GUEST, else bin/wasm/textcheck.wasm when
// scripts/build-plugins built it before minor 4 — on a case with the
// minor-4 fields. Skipped when neither is an old guest: a clean clone has
// no prebuilt module, and a current build is no longer old.
func TestBuiltOldGuestIgnoresConversationalFields(t *testing.T) {
	path := os.Getenv("ANVIL_OLD_GUEST")
	if path == "" {
		path = filepath.FromSlash("../../../bin/wasm/textcheck.wasm")
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Skipf("no built module to test (%v); run with ANVIL_OLD_GUEST=<textcheck.wasm built before ABI minor 4>", err)
	}
	ctx := context.Background()
	p, err := testRT.Load(ctx, path, transport.DigestOf(b), transport.Options{})
	if err != nil {
		t.Fatalf("load %s: %v", path, err)
	}
	defer p.Close(ctx)
	d := p.Info().Descriptor
	if d.ABIMinor >= 4 {
		t.Skipf("%s says abi_minor %d: not an old guest; set ANVIL_OLD_GUEST", path, d.ABIMinor)
	}
	if d.Name != "textcheck" {
		t.Skipf("%s is %s, not textcheck", path, d.Name)
	}
	c := conversationalCase()
	res, err := p.Measure(ctx, nil, &abi.MeasureRequest{Kind: "exact_match", Metric: "m", Threshold: 0.5, Case: c})
	if err != nil || res.Error != nil || res.Score == nil || *res.Score != 1 {
		t.Fatalf("%s (abi_minor %d) exact_match on a case with minor-4 fields: %+v, %v; want score 1", path, d.ABIMinor, res, err)
	}
	c.ActualOutput, c.ExpectedOutput = "", ""
	res, err = p.Measure(ctx, nil, &abi.MeasureRequest{Kind: "exact_match", Metric: "m", Threshold: 0.5, Case: c})
	if err != nil || res.Error == nil || res.Error.Code != abi.CodeMissingField {
		t.Fatalf("%s exact_match on a conversational case: %+v, %v; want missing_field", path, res, err)
	}
	t.Logf("%s (abi_minor %d): ignores the minor-4 fields", path, d.ABIMinor)
}
