//go:build !unix

package engine

import "testing"

// reportCPU is a no-op where getrusage is not available.
func reportCPU(*testing.B) {}
