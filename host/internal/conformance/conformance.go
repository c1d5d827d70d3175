// Package conformance is the plugin conformance kit behind `anvil-host
// plugin test`: it loads a plugin the way the host does (digest checked,
// sandboxed), then runs a fixed list of checks against it — the
// descriptor, the ABI's golden vectors, every declared kind on generated
// cases, instance discipline and judge use through a scripted judge — and
// reports each as PASS, FAIL or SKIP with a message.
//
// Invariants: checks are data (a name and a function), run in a fixed
// order, so two runs on the same plugin print the same lines; a check
// that cannot run for want of something the author must supply (a config
// for a kind whose schema requires fields) is SKIP, never FAIL; every
// output a plugin returns is decoded by the host's own strict path and
// validated against the ABI's published JSON Schema.
package conformance

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/host/internal/plugin"
)

// Status of one check.
type Status string

const (
	Pass Status = "PASS"
	Fail Status = "FAIL"
	Skip Status = "SKIP"
)

// Result is one check's outcome.
type Result struct {
	Name    string `json:"name"`
	Status  Status `json:"status"`
	Message string `json:"message"`
}

// Report is a whole run.
type Report struct {
	Path      string `json:"path"`
	Digest    string `json:"digest"`
	Transport string `json:"transport"`
	Plugin    string `json:"plugin,omitempty"`
	// Descriptor is what the plugin described, once it loaded.
	Descriptor *abi.Descriptor `json:"descriptor,omitempty"`
	Results    []Result        `json:"results"`
	Passed     int             `json:"passed"`
	Failed     int             `json:"failed"`
	Skipped    int             `json:"skipped"`
}

// OK reports whether no check failed.
func (r *Report) OK() bool { return r.Failed == 0 }

// Options configure a run.
type Options struct {
	// Path of the plugin: a Wasm module or a native process plugin.
	Path string
	// Digest, when set, is checked before anything is loaded; when empty
	// the kit computes it (the author is testing their own build).
	Digest string
	// Transport is "wasm", "process" or "" (decided by the file's magic).
	Transport string
	// Configs are the kinds' configs (kind name → config JSON); a kind
	// without one gets {}.
	Configs map[string]json.RawMessage
	// Verdicts are the verdict sets node kinds without fixed verdicts are
	// asked for (kind name → verdicts).
	Verdicts map[string][]string
	// CacheDir is the Wasm compilation cache; empty keeps it in memory.
	CacheDir string
}

// check is one entry of the kit: a name and what it does.
type check struct {
	name string
	run  func(ctx context.Context, e *env) (Status, string)
}

// env is what checks share: the loaded plugin, the scripted judge.
type env struct {
	opts      Options
	rt        *plugin.Runtime
	digest    string
	transport string
	p         plugin.Plugin
	judge     *ScriptedJudge
	schemas   *schemas
}

// Run loads the plugin and runs every check.
func Run(ctx context.Context, opts Options) (*Report, error) {
	digest, err := plugin.FileDigest(opts.Path)
	if err != nil {
		return nil, err
	}
	transport := opts.Transport
	if transport == "" {
		native, err := isNative(opts.Path)
		if err != nil {
			return nil, err
		}
		transport = plugin.TransportWasm
		if native {
			transport = plugin.TransportProcess
		}
	}
	if transport != plugin.TransportWasm && transport != plugin.TransportProcess {
		return nil, fmt.Errorf("transport %q: want wasm or process", transport)
	}
	sch, err := loadSchemas()
	if err != nil {
		return nil, err
	}
	rt, err := plugin.NewRuntime(ctx, plugin.RuntimeOptions{CacheDir: opts.CacheDir})
	if err != nil {
		return nil, err
	}
	defer rt.Close(ctx)
	j, err := StartScriptedJudge()
	if err != nil {
		return nil, err
	}
	defer j.Close()

	e := &env{opts: opts, rt: rt, digest: digest, transport: transport, judge: j, schemas: sch}
	rep := &Report{Path: opts.Path, Digest: digest, Transport: transport}
	add := func(name string, st Status, msg string) {
		rep.Results = append(rep.Results, Result{Name: name, Status: st, Message: msg})
	}

	// Digest and load come first: nothing else can run without them.
	if opts.Digest != "" {
		want := strings.TrimPrefix(strings.ToLower(opts.Digest), "sha256:")
		if "sha256:"+want != digest {
			add("digest", Fail, fmt.Sprintf("file is %s, --sha256 says sha256:%s", digest, want))
			return finish(rep), nil
		}
		add("digest", Pass, digest+" matches --sha256")
	} else {
		add("digest", Pass, digest+" (computed: no --sha256 given)")
	}
	p, err := e.load(ctx, plugin.Options{Grants: plugin.Grants{Judge: true}})
	if err != nil {
		add("load", Fail, oneLine(err.Error()))
		return finish(rep), nil
	}
	defer p.Close(context.WithoutCancel(ctx))
	e.p = p
	rep.Plugin = p.Info().ID()
	desc := p.Info().Descriptor
	rep.Descriptor = &desc
	add("load", Pass, fmt.Sprintf("%s loaded over %s: marker, exports and descriptor accepted by the host", p.Info().ID(), transport))

	for _, c := range e.checks() {
		st, msg := c.run(ctx, e)
		add(c.name, st, msg)
	}
	return finish(rep), nil
}

func finish(r *Report) *Report {
	for _, res := range r.Results {
		switch res.Status {
		case Pass:
			r.Passed++
		case Fail:
			r.Failed++
		case Skip:
			r.Skipped++
		}
	}
	return r
}

// load loads the plugin under opts (digest pinned to what was read).
func (e *env) load(ctx context.Context, opts plugin.Options) (plugin.Plugin, error) {
	if e.transport == plugin.TransportProcess {
		return e.rt.LoadProcess(ctx, e.opts.Path, e.digest, opts)
	}
	return e.rt.Load(ctx, e.opts.Path, e.digest, opts)
}

// WriteText prints one line per check and the summary line.
func WriteText(w io.Writer, r *Report) error {
	width := 0
	for _, res := range r.Results {
		width = max(width, len(res.Name))
	}
	for _, res := range r.Results {
		if _, err := fmt.Fprintf(w, "%-4s  %-*s  %s\n", res.Status, width, res.Name, res.Message); err != nil {
			return err
		}
	}
	_, err := fmt.Fprintf(w, "%d passed, %d failed, %d skipped\n", r.Passed, r.Failed, r.Skipped)
	return err
}

// WriteJSON prints the report as indented JSON.
func WriteJSON(w io.Writer, r *Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// isNative reports whether the file is not a Wasm module.
func isNative(path string) (bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return false, err
	}
	defer f.Close()
	magic := make([]byte, 4)
	if _, err := io.ReadFull(f, magic); err != nil {
		return true, nil
	}
	return string(magic) != "\x00asm", nil
}

// IsNative reports whether the file at path is not a Wasm module.
func IsNative(path string) (bool, error) { return isNative(path) }

// oneLine shortens a message to its first line (a trap's Wasm stack
// trace is left out) and at most 400 bytes.
func oneLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = strings.TrimSpace(s[:i]) + " (…)"
	}
	if len(s) > 400 {
		s = strings.ToValidUTF8(s[:400], "") + "…"
	}
	return s
}

func sortedKinds(d abi.Descriptor) []abi.KindDescriptor {
	ks := append([]abi.KindDescriptor(nil), d.Kinds...)
	sort.SliceStable(ks, func(i, j int) bool { return ks[i].Name < ks[j].Name })
	return ks
}
