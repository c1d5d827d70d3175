package results

// RetryOnResume reports whether --resume evaluates a written case again:
// one of its metrics ended in an error marked retryable — a fault of the
// judge (an outage, a rate limit) or of the infrastructure (a cluster
// worker lost, a transport that timed out), not of the case or of a
// plugin. ReadDone applies the same rule to the lines it reads.
func RetryOnResume(r *CaseResult) bool {
	for i := range r.Metrics {
		if e := r.Metrics[i].Error; e != nil && e.Retryable {
			return true
		}
	}
	return false
}
