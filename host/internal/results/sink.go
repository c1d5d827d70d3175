package results

// A Sink is given the cases of a run's results one at a time, in
// results.jsonl order: by the Writer once each is durable, and by
// ReadDone and EachIn as each is read. It must not change a case, and may
// keep it: nothing changes a case after it is given.
type Sink interface {
	Add(r *CaseResult)
}

// Sinks gives each case to every sink, in order.
type Sinks []Sink

// Add gives r to every sink.
func (s Sinks) Add(r *CaseResult) {
	for _, k := range s {
		k.Add(r)
	}
}
