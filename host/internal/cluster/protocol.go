package cluster

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/host/internal/engine"
	"github.com/agentanvil/anvil/host/internal/identity"
	"github.com/agentanvil/anvil/host/internal/results"
)

// protocolVersion changes when a message changes incompatibly; a worker
// refuses a run of another version. 2: the run's identity (resolved
// judges, built-in kinds' source digests) replaced the builtins' versions.
const protocolVersion = 2

// Names in JetStream.
const (
	casesStream   = "ANVIL_CASES"
	resultsStream = "ANVIL_RESULTS"
	runsBucket    = "ANVIL_RUNS"
	pluginsBucket = "ANVIL_PLUGINS"
	// exhaustedStream keeps JetStream's own advisories of cases that
	// reached the consumer's MaxDeliver, so a coordinator that was down
	// when one was sent (`--resume`) still reads it.
	exhaustedStream = "ANVIL_EXHAUSTED"
	exhaustedPrefix = "$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES." + casesStream + "."
)

func casesSubject(runID string) string   { return "anvil.cases." + runID }
func resultsSubject(runID string) string { return "anvil.results." + runID }
func faultsSubject(runID string) string  { return "anvil.faults." + runID }
func casesConsumer(runID string) string  { return "cases-" + runID }
func deliveriesSubject(runID string) string {
	return "anvil.deliveries." + runID
}
func exhaustedSubject(runID string) string { return exhaustedPrefix + casesConsumer(runID) }

// Size bounds of what a peer may send; a message above them is refused
// before it is decoded.
const (
	maxDescription = 4 << 20
	maxCaseMessage = 64 << 20
	maxResult      = 64 << 20
	maxFault       = 64 << 10
	maxDelivery    = 4 << 10
	maxAdvisory    = 64 << 10
	maxConfig      = 1 << 20
	maxPlugin      = 256 << 20
	maxRecording   = 256 << 20
	maxCaseID      = 1024
)

var (
	runIDRE  = regexp.MustCompile(`^[0-9a-f]{16}$`)
	workerRE = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)
	digestRE = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)
	hashRE   = regexp.MustCompile(`^[0-9a-f]{8,128}$`)
	nameRE   = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$`)
)

// RunDescription is what a worker needs to evaluate a run's cases the way
// the coordinator would: the config file, the plugins by digest, the
// once-per-run work already done, and what it must match.
type RunDescription struct {
	Protocol   int    `json:"protocol"`
	RunID      string `json:"run_id"`
	Generation string `json:"generation"`
	ABIMajor   int    `json:"abi_major"`
	ABIMinor   int    `json:"abi_minor"`
	// Identity is what the coordinator's scores depend on beyond the
	// config: each judge as resolved in its environment (model, base URL,
	// every setting that changes a request or its weighting; never a key)
	// and the first-party kinds linked into its host, by source digest. A
	// worker whose own differs refuses the run, naming the difference: it
	// would score with another judge, or other prompts or code.
	Identity   identity.Run `json:"identity"`
	ConfigName string       `json:"config_name"`
	ConfigYAML []byte       `json:"config_yaml"`
	ConfigHash string       `json:"config_hash"`
	// Plugins maps a configured plugin name to its digest; the bytes are
	// in the object store under the digest.
	Plugins map[string]string `json:"plugins"`
	// Recordings maps each judge the coordinator replays from its
	// offline_recording (it has no key for it) to the recording's digest;
	// the bytes are in the object store under the digest, and workers
	// replay the same judges from them, key or not.
	Recordings map[string]string       `json:"recordings,omitempty"`
	Prepared   []engine.PreparedMetric `json:"prepared"`
	// CacheMode is the coordinator's judge cache mode (off, rw, replay).
	CacheMode string `json:"cache_mode"`
	// Unconfigured are the judges the coordinator cannot call (no key):
	// their metrics are skipped, and a worker must skip the same ones.
	Unconfigured []string `json:"unconfigured_judges"`
	// AckWaitMS is the cases' ack deadline: a worker reports progress
	// well within it.
	AckWaitMS int64 `json:"ack_wait_ms"`
	// Budget is set when the run's judge calls take permits from the
	// coordinator (one budget for the cluster).
	Budget bool `json:"budget"`
}

func (d *RunDescription) validate() error {
	var errs []error
	if d.Protocol != protocolVersion {
		errs = append(errs, fmt.Errorf("protocol %d, this host speaks %d", d.Protocol, protocolVersion))
	}
	if !runIDRE.MatchString(d.RunID) {
		errs = append(errs, fmt.Errorf("run_id %q is not 16 hex digits", d.RunID))
	}
	if !runIDRE.MatchString(d.Generation) {
		errs = append(errs, fmt.Errorf("generation %q is not 16 hex digits", d.Generation))
	}
	if !nameRE.MatchString(d.ConfigName) {
		errs = append(errs, fmt.Errorf("config_name %q is not a plain file name", d.ConfigName))
	}
	if len(d.ConfigYAML) == 0 || len(d.ConfigYAML) > maxConfig {
		errs = append(errs, fmt.Errorf("config_yaml of %d bytes (want 1..%d)", len(d.ConfigYAML), maxConfig))
	}
	if !hashRE.MatchString(d.ConfigHash) {
		errs = append(errs, fmt.Errorf("config_hash %q is not hex", d.ConfigHash))
	}
	if err := d.Identity.Check(); err != nil {
		errs = append(errs, err)
	}
	for name, digest := range d.Plugins {
		if !nameRE.MatchString(name) || !digestRE.MatchString(digest) {
			errs = append(errs, fmt.Errorf("plugin %q digest %q: want a plain name and sha256:<64 hex>", name, digest))
		}
	}
	for name, digest := range d.Recordings {
		if !nameRE.MatchString(name) || !digestRE.MatchString(digest) {
			errs = append(errs, fmt.Errorf("recording of judge %q digest %q: want a plain name and sha256:<64 hex>", name, digest))
		}
	}
	switch d.CacheMode {
	case "off", "rw", "replay":
	default:
		errs = append(errs, fmt.Errorf("cache_mode %q: want off, rw or replay", d.CacheMode))
	}
	if d.AckWaitMS <= 0 {
		errs = append(errs, fmt.Errorf("ack_wait_ms %d: must be positive", d.AckWaitMS))
	}
	return errors.Join(errs...)
}

// CaseMessage is one case of a run on the work queue.
type CaseMessage struct {
	RunID string        `json:"run_id"`
	Case  *abi.TestCase `json:"case"`
}

func (m *CaseMessage) validate(runID string) error {
	if m.RunID != runID {
		return fmt.Errorf("case message of run %q on run %q's subject", m.RunID, runID)
	}
	if m.Case == nil || m.Case.ID == "" || len(m.Case.ID) > maxCaseID {
		return fmt.Errorf("case message without a case id (or one over %d bytes)", maxCaseID)
	}
	return nil
}

// ResultMessage is one finished case, stamped with what the worker that
// evaluated it is (the result itself carries the digest of its identity).
type ResultMessage struct {
	RunID      string `json:"run_id"`
	Generation string `json:"generation"`
	Worker     string `json:"worker"`
	ABIMajor   int    `json:"abi_major"`
	ABIMinor   int    `json:"abi_minor"`
	// Kinds are the first-party kinds the worker links.
	Kinds      []identity.Kind     `json:"kinds"`
	ConfigHash string              `json:"config_hash"`
	Plugins    map[string]string   `json:"plugins"`
	Result     *results.CaseResult `json:"result"`
}

// DeliveryMessage is a worker saying it took a case (its delivery-th
// delivery): when no worker ever finishes the case, the coordinator names
// the last one that took it.
type DeliveryMessage struct {
	RunID    string `json:"run_id"`
	Worker   string `json:"worker"`
	CaseID   string `json:"case_id"`
	Delivery uint64 `json:"delivery"`
}

func (m *DeliveryMessage) validate(runID string) error {
	switch {
	case m.RunID != runID:
		return fmt.Errorf("delivery of run %q on run %q's subject", m.RunID, runID)
	case !workerRE.MatchString(m.Worker):
		return fmt.Errorf("delivery from worker %q: not a worker name", m.Worker)
	case m.CaseID == "" || len(m.CaseID) > maxCaseID:
		return fmt.Errorf("delivery without a case id (or one over %d bytes)", maxCaseID)
	}
	return nil
}

// exhaustedAdvisory is the part of JetStream's max-deliveries advisory
// (io.nats.jetstream.advisory.v1.max_deliver) the coordinator reads.
type exhaustedAdvisory struct {
	Type       string `json:"type"`
	Stream     string `json:"stream"`
	Consumer   string `json:"consumer"`
	StreamSeq  uint64 `json:"stream_seq"`
	Deliveries uint64 `json:"deliveries"`
}

// FaultMessage is a worker telling the coordinator it cannot serve the
// run: it refuses it (Kind "refused"), or its judge went down.
type FaultMessage struct {
	RunID  string `json:"run_id"`
	Worker string `json:"worker"`
	Kind   string `json:"kind"`
	Reason string `json:"reason"`
}

// Fault kinds.
const (
	FaultRefused   = "refused"
	FaultJudgeDown = "judge_down"
)

func (m *FaultMessage) validate(runID string) error {
	if m.RunID != runID {
		return fmt.Errorf("fault of run %q on run %q's subject", m.RunID, runID)
	}
	if !workerRE.MatchString(m.Worker) {
		return fmt.Errorf("fault from worker %q: not a worker name", m.Worker)
	}
	if m.Kind != FaultRefused && m.Kind != FaultJudgeDown {
		return fmt.Errorf("fault kind %q: want %s or %s", m.Kind, FaultRefused, FaultJudgeDown)
	}
	return nil
}

// decodeStrict decodes exactly one JSON value of at most limit bytes into
// v; an unknown field, trailing data or an oversized message is an error.
func decodeStrict(data []byte, limit int, v any) error {
	if len(data) > limit {
		return fmt.Errorf("message of %d bytes, over the %d-byte limit", len(data), limit)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("decode: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return fmt.Errorf("decode: trailing data after the message")
	}
	return nil
}
