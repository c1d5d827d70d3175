package plugin

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/host/internal/strictjson"
)

// decodeStrict decodes one JSON object a guest wrote — a result, a
// descriptor, a judge batch, a log record — into out. Beyond what
// encoding/json checks, it refuses what that decoder would silently
// accept and another reader might take differently:
//
//   - a key that occurs twice in one object, anywhere in the value
//     (details and config_schema included), also when the two spellings
//     differ only in case: encoding/json matches field names without
//     regard to case and keeps the last, so {"score":0.9,"Score":0.1}
//     would score 0.1;
//   - a number that is not a finite float64 (1e400): Go would keep it
//     verbatim in a json.RawMessage and fail later, in whatever reads
//     the result back;
//   - anything but exactly one object.
//
// A number that does not fit the Go type of its field (an abi_minor of
// 2.5 or 1e30) is refused by encoding/json itself. The error names the
// offending key by its path from the root ($.details.x).
func decodeStrict(raw []byte, out any) error {
	if len(bytes.TrimSpace(raw)) == 0 {
		return errors.New("no output (the guest returned without writing one, or exited)")
	}
	// The fast path accepts what it is sure of; checkJSON decides the rest
	// and names what it refuses.
	if !quickCheckJSON(raw) {
		if err := checkJSON(raw); err != nil {
			return err
		}
	}
	// Results are most of what guests write; decodeMeasureResult gives
	// what json.Unmarshal would, or leaves raw to it.
	if r, ok := out.(*abi.MeasureResult); ok && decodeMeasureResult(raw, r) {
		return nil
	}
	if err := json.Unmarshal(raw, out); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return fmt.Errorf("$.%s: JSON %s does not fit %s", te.Field, te.Value, te.Type)
		}
		return err
	}
	return nil
}

// checkJSON is strictjson.Check: see decodeStrict for what it refuses.
func checkJSON(raw []byte) error { return strictjson.Check(raw) }
