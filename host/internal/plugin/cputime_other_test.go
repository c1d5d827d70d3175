//go:build !unix

package plugin

import "time"

// processCPU is not measured off unix (the metric reads 0).
func processCPU() time.Duration { return 0 }
