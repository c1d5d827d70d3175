package engine

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/host/internal/results"
	"github.com/agentanvil/anvil/host/internal/store"
)

// RecordingVersion is the format version of a recorded judge session.
const RecordingVersion = 1

// RecordingHeader is the first line of a recorded judge session: what
// answered the requests, so a run replaying it can say so.
type RecordingHeader struct {
	Version int `json:"anvil_recording"`
	// Note says what produced the replies ("recorded against Anvil's fake
	// judge server (scripted replies, not a model)").
	Note string `json:"note"`
}

// RecordingEntry is one recorded reply, keyed as the judge cache keys it.
type RecordingEntry struct {
	Key      string          `json:"key"`
	Model    string          `json:"model"`
	Response json.RawMessage `json:"response"`
}

// ExportRecording writes every judge cache entry of st as a recorded
// session: a header line, then one entry a line in key order. Latencies
// are zeroed so a recording of the same replies is the same file.
func ExportRecording(ctx context.Context, st *store.Store, note string, w io.Writer) (int, error) {
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(RecordingHeader{Version: RecordingVersion, Note: note}); err != nil {
		return 0, err
	}
	n := 0
	err := st.EachJudge(ctx, func(e store.Entry) error {
		var resp abi.JudgeResponse
		if err := json.Unmarshal(e.Value, &resp); err != nil {
			return fmt.Errorf("cache entry %.12s… is not a judge response: %w", e.Key, err)
		}
		resp.Usage.LatencyMS = 0
		raw, err := json.Marshal(resp)
		if err != nil {
			return err
		}
		n++
		return enc.Encode(RecordingEntry{Key: e.Key, Model: e.Model, Response: raw})
	})
	if err != nil {
		return n, fmt.Errorf("export recording: %w", err)
	}
	return n, bw.Flush()
}

// recording is a recorded judge session loaded for replay: a read-only
// judge cache held in memory. It never touches the store, so replayed
// replies cannot leak into a later run that calls the real judge.
type recording struct {
	note    string
	entries map[string][]byte
	digest  string // sha256:<hex> of the file
}

// maxRecordingLine bounds one line of a recording file.
const maxRecordingLine = 16 << 20

func loadRecording(path string) (*recording, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("offline recording: %w", err)
	}
	defer f.Close()
	h := sha256.New()
	sc := bufio.NewScanner(io.TeeReader(f, h))
	sc.Buffer(make([]byte, 64<<10), maxRecordingLine)
	rec := &recording{entries: map[string][]byte{}}
	line := 0
	for sc.Scan() {
		line++
		if line == 1 {
			var h RecordingHeader
			if err := json.Unmarshal(sc.Bytes(), &h); err != nil || h.Version == 0 {
				return nil, fmt.Errorf("%s:1: not an Anvil judge recording (want a header line {\"anvil_recording\": %d, …})", path, RecordingVersion)
			}
			if h.Version != RecordingVersion {
				return nil, fmt.Errorf("%s:1: recording format %d; this anvil reads format %d", path, h.Version, RecordingVersion)
			}
			rec.note = results.Printable(h.Note) // printed on every run that replays it
			continue
		}
		var e RecordingEntry
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, line, err)
		}
		if e.Key == "" || len(e.Response) == 0 {
			return nil, fmt.Errorf("%s:%d: entry without key or response", path, line)
		}
		rec.entries[e.Key] = e.Response
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s:%d: %w", path, line+1, err)
	}
	if line == 0 {
		return nil, fmt.Errorf("%s: empty recording", path)
	}
	rec.digest = "sha256:" + hex.EncodeToString(h.Sum(nil))
	return rec, nil
}

// GetJudge implements judge.Cache.
func (r *recording) GetJudge(_ context.Context, key string) ([]byte, bool, error) {
	v, ok := r.entries[key]
	return v, ok, nil
}

// PutJudge implements judge.Cache; a recording is never written (the judge
// replays it, and replay mode records nothing).
func (r *recording) PutJudge(context.Context, string, string, []byte) error {
	return errors.New("a recorded judge session is read-only")
}
