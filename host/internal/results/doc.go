// Package results is a run's results: the outcome of every metric on
// every case (CaseResult, MetricResult), the files that hold them —
// results.jsonl, one line per case, and cases/<id>.json, the case with its
// outcomes — with their writer and reader, and the summary built from
// them (summary.json).
//
// Invariants:
//
//   - A line of results.jsonl is durable before anything is built from
//     it: the Writer gives a case to its Sink only after the batch holding
//     its line is fsync'd, so a summary or report never counts a case that
//     --resume would evaluate again.
//   - Everything built from the results — the summary (Summarizer), the
//     reports (report.Builder), a calibration — takes the cases one at a
//     time, in results.jsonl order, as a Sink, holding a few numbers per
//     case at most. A run builds them as it writes (and, with --resume,
//     as it reads the earlier lines once); commands that read a finished
//     run read results.jsonl once (Each, EachIn).
//   - The line format is github.com/go-json-experiment/json's encoding of
//     CaseResult; every line an earlier version wrote reads the same
//     (encoding/json's bytes), and a line that does not decode is an error
//     naming the file, the line and the member — never a wrong value.
//   - Text a plugin, dataset or judge controls is written as it is (not
//     valid UTF-8: with U+FFFD), and made printable (Printable) only where
//     a summary quotes it to a terminal.
package results
