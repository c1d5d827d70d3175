package sdk

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/agentanvil/anvil/abi"
)

// DecodeConfig decodes a config object strictly into C: unknown fields and
// wrong types are invalid_config errors naming the field. An empty config
// decodes to C's zero value.
func DecodeConfig[C any](raw []byte) (*C, *abi.Error) {
	cfg := new(C)
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return cfg, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(cfg); err != nil {
		e := &abi.Error{Code: abi.CodeInvalidConfig, Message: "config: " + err.Error()}
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			e.Field = te.Field
			e.Message = fmt.Sprintf("config field %q: want %s, got JSON %s", te.Field, te.Type, te.Value)
		}
		// encoding/json names an unknown field only in its message.
		if q, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
			if name, uerr := strconv.Unquote(q); uerr == nil {
				e.Field = name
			}
		}
		return nil, e
	}
	return cfg, nil
}

// asABIError keeps an *abi.Error as it is and wraps anything else in code.
func asABIError(err error, code abi.Code) *abi.Error {
	var ae *abi.Error
	if errors.As(err, &ae) {
		return ae
	}
	return &abi.Error{Code: code, Message: err.Error()}
}
