// Package wire is the guest side of the ABI's JSON (abi/v1/README.md §6)
// for the Go SDK's transports, sdk/guest and sdk/native: how a request
// from the host is read and how an answer to it is written, the same way
// in both, through go-json-experiment.
//
// Invariants: an answer is valid UTF-8 without repeated names — what the
// host refuses (text a kind cut in the middle of a character is sent with
// U+FFFD in its place, as encoding/json did, rather than failing the
// call); a request member the SDK does not know is ignored (ABI §5), and
// names match exactly, as the host writes them.
package wire

import (
	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// Decode reads a message from the host into v.
func Decode(in []byte, v any) error { return json.Unmarshal(in, v) }

// Encode writes a message for the host.
func Encode(v any) ([]byte, error) { return json.Marshal(v, jsontext.AllowInvalidUTF8(true)) }
