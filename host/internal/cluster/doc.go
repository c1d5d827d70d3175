// Package cluster runs an evaluation on NATS JetStream: a coordinator
// (`anvil-host run --cluster URL`) publishes the run and its cases, any
// number of workers (`anvil-host worker --cluster URL`) evaluate them with
// the engine, and the coordinator writes the outputs with the engine's own
// writer, exactly as a local run does.
//
// What travels where:
//   - KV bucket ANVIL_RUNS, key = run id: the run description (config
//     file bytes, plugin digests, the coordinator's once-per-run work,
//     the versions a worker must match). A worker serves the runs it finds
//     there and stops when the key is deleted.
//   - Object store ANVIL_PLUGINS, name = digest: plugin bytes, and the
//     recordings of judges the coordinator replays (offline_recording).
//     A worker checks every byte it fetches against the digest before
//     using it, and replays exactly the judges the coordinator replays.
//   - Stream ANVIL_CASES (work queue), subject anvil.cases.<run>: one
//     message per case, consumed through the durable consumer cases-<run>
//     (explicit ack, ack deadline and MaxDeliver set by the coordinator).
//   - Stream ANVIL_EXHAUSTED: JetStream's own advisories
//     ($JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.ANVIL_CASES.cases-<run>)
//     of cases that reached MaxDeliver unacknowledged; the coordinator
//     writes each such case as an error result. Kept in a stream so a
//     resumed coordinator still reads them.
//   - Core subject anvil.deliveries.<run>: a worker saying it took a case
//     (which delivery), so an exhausted case names the last worker seen.
//   - Stream ANVIL_RESULTS, subject anvil.results.<run>: one message per
//     finished case, de-duplicated by case id (Nats-Msg-Id) and again by
//     the coordinator, which writes a case once whatever arrives twice.
//   - Core subject anvil.faults.<run>: a worker that refuses the run (a
//     different ABI or build, a plugin whose bytes do not match) or whose
//     judge went down says so there.
//   - Core subjects anvil.permit.<run>[.release|.renew]: the cluster's one
//     judge budget. The coordinator holds each judge's limiter
//     (judge.NewLimiter) and grants leased permits by request/reply; every
//     judge call on every worker takes one.
//   - KV bucket ANVIL_JUDGE_CACHE: the shared judge cache, keyed by the
//     judge's own cache keys.
//
// Invariants: local mode does not link this package (engine, judge, store
// and report import no NATS: TestLocalPathLinksNoNATS); peers do not trust
// each other's messages — every message is size-bounded, strictly decoded
// (unknown fields are errors) and checked (ids, digests, versions, a
// result's metrics against the coordinator's own configuration) before it
// is used; a case is acknowledged only after its result is stored in the
// results stream, so a worker killed mid-case loses nothing (the case is
// redelivered after the ack deadline), and a case no worker finishes in
// MaxDeliver deliveries is written as an error, never waited for forever;
// a refused result publishes its case again at most MaxDeliver times, so a
// peer's messages cannot buy evaluations; a fault of the infrastructure —
// a lost worker, a transport that failed while a case ran — ends as an
// error marked retryable, which --resume evaluates again, while the same
// error with the transport healthy is the judge's or the plugin's and
// stays; a coordinator that writes nothing for StallAfter says so, and
// why as far as it knows; the judge API key never travels
// through NATS — each worker reads its own environment. Who may publish
// what is NATS permissions' to decide (examples/cluster/nats-server.conf).
package cluster
