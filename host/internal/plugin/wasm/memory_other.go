//go:build !unix

package wasm

import "github.com/tetratelabs/wazero/experimental"

// memoryAllocator is nil off unix: wazero allocates linear memories itself.
func memoryAllocator() experimental.MemoryAllocator { return nil }
