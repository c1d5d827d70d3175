// Package csdk carries the C SDK's one header, anvil.h, to Go code:
// `anvil-host plugin new --lang c` writes it into the project it creates,
// so a C plugin builds without an Anvil checkout and always gets the
// header of the host that scaffolded it.
package csdk

import _ "embed"

// Header is sdk/c/anvil.h.
//
//go:embed anvil.h
var Header []byte
