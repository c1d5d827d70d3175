//go:build !unix

package judge

import "testing"

// reportCPU is a no-op where getrusage is not available.
func reportCPU(*testing.B) {}
