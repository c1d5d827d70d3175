package engine

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentanvil/anvil/host/internal/identity"
	"github.com/agentanvil/anvil/plugins/agent"
	"github.com/agentanvil/anvil/plugins/assert"
	"github.com/agentanvil/anvil/plugins/content"
	"github.com/agentanvil/anvil/plugins/conversation"
	dagkinds "github.com/agentanvil/anvil/plugins/dag"
	"github.com/agentanvil/anvil/plugins/geval"
	"github.com/agentanvil/anvil/plugins/judged"
	"github.com/agentanvil/anvil/plugins/rag"
	"github.com/agentanvil/anvil/plugins/similarity"
	"github.com/agentanvil/anvil/plugins/textmatch"
	"github.com/agentanvil/anvil/score"
	"github.com/agentanvil/anvil/sdk"
)

// builtin is a first-party plugin and the source of every package of
// this module that decides what it does (TestBuiltinDigestsCoverTheKindsCode
// holds the list to its imports).
type builtin struct {
	plugin *sdk.Plugin
	source []fs.FS
}

func builtins() []builtin {
	return []builtin{
		{geval.Plugin(), []fs.FS{geval.Source(), sdk.Source(), score.Source()}},
		{dagkinds.Plugin(), []fs.FS{dagkinds.Source(), sdk.Source()}},
		{rag.Plugin(), []fs.FS{rag.Source(), judged.Source(), sdk.Source()}},
		{assert.Plugin(), []fs.FS{assert.Source(), textmatch.Source(), sdk.Source()}},
		{conversation.Plugin(), []fs.FS{conversation.Source(), sdk.Source()}},
		{content.Plugin(), []fs.FS{content.Source(), judged.Source(), sdk.Source()}},
		{agent.Plugin(), []fs.FS{agent.Source(), judged.Source(), sdk.Source()}},
		{similarity.Plugin(), []fs.FS{similarity.Source(), sdk.Source()}},
	}
}

// FirstParty are the kinds linked into the host.
func FirstParty() []*sdk.Plugin {
	var out []*sdk.Plugin
	for _, b := range builtins() {
		out = append(out, b.plugin)
	}
	return out
}

// BuiltinKinds identifies the first-party plugins this host links by name,
// version and the digest of their source (prompts included): two hosts of
// one version built from different sources differ here.
func BuiltinKinds() []identity.Kind {
	var out []identity.Kind
	for _, b := range builtins() {
		d := b.plugin.Describe()
		out = append(out, identity.Kind{Name: d.Name, Version: d.Version, Digest: identity.SourceDigest(b.source...)})
	}
	return out
}

// Identity is what this run's scores depend on beyond its config file:
// every judge as resolved here and the built-in kinds' code. Every result
// this engine produces carries its digest, and a result of another
// identity is never written with them (CheckResult, --resume).
func (e *Engine) Identity() identity.Run { return e.identity }

// resolveIdentity computes Identity once judges and metrics are
// resolved. A run in which no metric may call a judge (no kind asks for
// the judge capability) has no judge that could answer, so none is part
// of it; otherwise every configured judge is, since a kind's request may
// name any of them.
func (e *Engine) resolveIdentity() {
	var judges []identity.Judge
	calls := false
	for _, m := range e.all {
		calls = calls || m.needsJudge
	}
	if calls {
		for _, name := range sortedKeys(e.judges.byName) {
			source, recording := identity.SourceAPI, ""
			if d, ok := e.judges.recordings[name]; ok {
				source, recording = identity.SourceRecording, d
			} else if _, off := e.judges.unavailable[name]; off {
				source = identity.SourceUnavailable
			}
			judges = append(judges, identity.OfJudge(e.judges.byName[name].Config(), source, recording))
		}
	}
	e.identity = identity.New(judges, BuiltinKinds())
}

// checkIdentity is the check of a results line's identity digest against
// this run's: an empty one (written before identities were recorded) is
// not an error, as it cannot be checked; what differs is named from the
// identity the earlier run's summary.json recorded, when it has one.
func (e *Engine) checkIdentity(got, where, outDir string) error {
	if got == "" || got == e.identity.Digest {
		return nil
	}
	msg := fmt.Sprintf("%s: written by judges and kinds of identity %s, this run's is %s", where, got, e.identity.Digest)
	if prev := previousIdentity(outDir); prev != nil && prev.Digest == got {
		msg += ":\n  " + strings.Join(identity.Diff(*prev, e.identity, "results", "this run"), "\n  ")
	} else {
		msg += fmt.Sprintf(" (its summary.json, which would name the difference, is missing or of another run): a judge's model, base URL or request settings — from anvil.yaml or the environment (ANVIL_JUDGE_MODEL, OPENAI_BASE_URL) — or the built-in kinds' source differ; this run's judges: %s", describeJudges(e.identity))
	}
	return errors.New(msg)
}

// previousIdentity is the identity summary.json in outDir records, nil
// when there is none to read.
func previousIdentity(outDir string) *identity.Run {
	if outDir == "" {
		return nil
	}
	b, err := os.ReadFile(filepath.Join(outDir, "summary.json"))
	if err != nil {
		return nil
	}
	var s struct {
		Identity *identity.Run `json:"identity"`
	}
	if json.Unmarshal(b, &s) != nil {
		return nil
	}
	return s.Identity
}

func describeJudges(r identity.Run) string {
	if len(r.Judges) == 0 {
		return "none"
	}
	var parts []string
	for _, j := range r.Judges {
		parts = append(parts, fmt.Sprintf("%s = %s at %s (%s)", j.Name, j.Model, j.BaseURL, j.Source))
	}
	return strings.Join(parts, ", ")
}
