package cli

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"oras.land/oras-go/v2/registry/remote/auth"
	"oras.land/oras-go/v2/registry/remote/credentials"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/host/internal/oci"
	"github.com/agentanvil/anvil/internal/testkit"
)

// TestRegistryE2E runs README.md's two-team flow, block by block as
// written there, against a real registry server — Debian's docker-registry
// (the distribution registry) with basic auth, on loopback — and then
// every way the flow must refuse: an untrusted key, a missing signature, a
// publisher not allowed the judge (in README), annotations that lie, a
// lockfile edited by hand, a tag that moved, a tampered layer (in the
// registry and in the cache), and the registry going down with a warm
// cache (the run works) and a cold one (nothing runs).
//
// Without docker-registry or htpasswd it skips, unless
// ANVIL_REGISTRY_E2E=1 (scripts/registry-e2e, run by .ci/run) makes their
// absence a failure.
func TestRegistryE2E(t *testing.T) {
	testkit.Long(t, "minutes, or external programs")
	tools := map[string]string{}
	for _, name := range []string{"docker-registry", "htpasswd"} {
		p, err := exec.LookPath(name)
		if err != nil {
			if os.Getenv("ANVIL_REGISTRY_E2E") == "1" {
				t.Fatalf("%s is required (scripts/ci-deps-registry installs it): %v", name, err)
			}
			t.Skipf("%s not installed (scripts/ci-deps-registry installs it)", name)
		}
		tools[name] = p
	}
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	work := t.TempDir()
	modules := filepath.Join(work, "bin", "wasm")
	if err := os.MkdirAll(modules, 0o755); err != nil {
		t.Fatal(err)
	}
	copyFile(t, filepath.Join(wasmDir, "textcheck.wasm"), filepath.Join(modules, "textcheck.wasm"))
	kwcov := filepath.Join(modules, "kwcov-go.wasm")
	if _, err := testkit.BuildGuest(t.Context(), "../../../examples/kwcov/go", kwcov); err != nil {
		t.Fatal(err)
	}

	const user, password = "team-a", "e2e-secret"
	reg := startRegistry(t, tools, filepath.Join(work, "registry"), user, password)
	e := &e2eEnv{t: t, env: []string{
		"PATH=" + filepath.Dir(binary) + string(os.PathListSeparator) + os.Getenv("PATH"),
		"HOME=" + filepath.Join(work, "home"),
		"DOCKER_CONFIG=" + filepath.Join(work, "docker"),
		"ANVIL_PLUGIN_CACHE=" + filepath.Join(work, "cache"),
		"ANVIL_COMPILE_CACHE=" + filepath.Join(work, "wazero"),
		"REGISTRY=" + reg.addr,
		"REGISTRY_USER=" + user,
		"REGISTRY_PASSWORD=" + password,
	}}
	teamB := filepath.Join(work, "team-b")
	blocks := readmeBlocks(t)

	// README, as written.
	for _, name := range []string{"credentials", "team-a", "team-b"} {
		if out, code := e.bash(work, blocks[name]); code != 0 {
			t.Fatalf("README block %q exited %d:\n%s", name, code, out)
		}
	}
	lock := readString(t, filepath.Join(teamB, "anvil.lock"))
	for _, want := range []string{`"signer": "team-a (ed25519:`, `"media_type": "application/wasm"`, `"capabilities": []`, `"abi": "` + fmt.Sprintf("%d.%d", abi.Major, abi.Minor) + `"`} {
		if !strings.Contains(lock, want) {
			t.Errorf("anvil.lock lacks %s:\n%s", want, lock)
		}
	}
	if summary := readString(t, filepath.Join(teamB, "out", "summary.json")); !strings.Contains(summary, `"verdict": "passed"`) {
		t.Errorf("team B's run did not pass:\n%s", summary)
	}
	validated := e.must(teamB, "validate", "--json", "--no-dataset")
	for _, want := range []string{`"ref": "oci://` + reg.addr + `/team-a/textcheck:1.0@sha256:`, `"signer": "team-a (ed25519:`} {
		if !strings.Contains(validated, want) {
			t.Errorf("validate --json lacks %s:\n%s", want, validated)
		}
	}
	out, code := e.bash(teamB, blocks["team-b-judge"])
	wantRefusal(t, "README team-b-judge", out, code, 2, "judge.yaml:8: plugins.kwcov", "refused by the trust policy",
		"rule trust.publishers.team-a.capabilities", "signer team-a (ed25519:", "the config grants judge", "nothing of it was compiled or started")
	if _, err := os.Stat(filepath.Join(teamB, "judge.lock")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused lock wrote judge.lock (stat: %v)", err)
	}
	textcheckRef := "oci://" + reg.addr + "/team-a/textcheck:1.0"
	lockedDigest := regexp.MustCompile(`"digest": "(sha256:[0-9a-f]{64})"`).FindStringSubmatch(lock)[1]

	// The refusals. They share the registry, so they run in order.
	t.Run("untrusted key", func(t *testing.T) {
		e.t = t
		e.must(work, "plugin", "keygen", "mallory")
		_, stderr, code := e.anvil(work, nil, "plugin", "verify", textcheckRef, "--key", "mallory.pub")
		wantRefusal(t, "verify with another key", stderr, code, 1, "signed only by keys that are not trusted publishers")
		e.must(work, "plugin", "push", "bin/wasm/textcheck.wasm", "oci://"+reg.addr+"/mallory/textcheck:1.0")
		e.must(work, "plugin", "sign", "--key", "mallory.key", "oci://"+reg.addr+"/mallory/textcheck:1.0")
		cfg := teamBConfig(reg.addr, "mallory/textcheck:1.0", "exact_match", "")
		writeFile(t, filepath.Join(teamB, "mallory.yaml"), cfg)
		_, stderr, code = e.anvil(teamB, nil, "lock", "-c", "mallory.yaml")
		wantRefusal(t, "lock", stderr, code, 2, "rule trust.require_signatures", "signer ed25519:", "not trusted publishers", "team-a=ed25519:")
	})
	t.Run("a second signature", func(t *testing.T) {
		// The registry has no referrers API and refuses deletes (405, its
		// default): a second referrer replaces the referrers index and
		// cannot delete the old one. The signature lands all the same.
		e.t = t
		e.must(work, "plugin", "keygen", "second-signer")
		_, stderr, code := e.anvil(work, nil, "plugin", "sign", "--key", "second-signer.key", textcheckRef)
		if code != 0 || !strings.Contains(stderr, "refused to delete the previous referrers index") {
			t.Fatalf("second sign: exit %d, want 0 with a warning; stderr:\n%s", code, stderr)
		}
		for _, key := range []string{"team-a.pub", "second-signer.pub"} {
			if out := e.must(work, "plugin", "verify", textcheckRef, "--key", key); !strings.Contains(out, "ok ") {
				t.Errorf("verify with %s after the second signature: %s", key, out)
			}
		}
	})
	t.Run("signature missing", func(t *testing.T) {
		e.t = t
		e.must(work, "plugin", "push", "bin/wasm/textcheck.wasm", "oci://"+reg.addr+"/team-a/unsigned:1.0")
		writeFile(t, filepath.Join(teamB, "unsigned.yaml"), teamBConfig(reg.addr, "team-a/unsigned:1.0", "exact_match", ""))
		_, stderr, code := e.anvil(teamB, nil, "lock", "-c", "unsigned.yaml")
		wantRefusal(t, "lock", stderr, code, 2, "plugins.textcheck", "rule trust.require_signatures", "signer none", "not signed")
		// The same plugin by a local path needs its PATH.sig just as much.
		local := strings.Replace(teamBConfig(reg.addr, "", "exact_match", ""), "    ref: oci://"+reg.addr+"/\n",
			"    path: ../bin/wasm/textcheck.wasm\n    sha256_file: textcheck.sha256\n", 1)
		writeFile(t, filepath.Join(teamB, "local.yaml"), local)
		writeFile(t, filepath.Join(teamB, "textcheck.sha256"), fileDigest(t, filepath.Join(modules, "textcheck.wasm"))+"\n")
		_, stderr, code = e.anvil(teamB, nil, "validate", "-c", "local.yaml", "--no-dataset")
		wantRefusal(t, "unsigned local file", stderr, code, 2, "rule trust.require_signatures", "signer none")
		e.must(work, "plugin", "sign", "--key", "team-a.key", "bin/wasm/textcheck.wasm")
		e.must(teamB, "validate", "-c", "local.yaml", "--no-dataset")
		e.must(work, "plugin", "verify", "bin/wasm/textcheck.wasm", "--key", "team-a.pub")
	})
	t.Run("lying annotations", func(t *testing.T) {
		e.t = t
		// A module that asks for the judge, pushed with annotations that
		// say it asks for nothing, signed by a trusted key: the policy
		// accepts the claim, the host must not.
		module, err := os.ReadFile(kwcov)
		if err != nil {
			t.Fatal(err)
		}
		creds := credentials.NewMemoryStore()
		if err := creds.Put(context.Background(), reg.addr, auth.Credential{Username: user, Password: password}); err != nil {
			t.Fatal(err)
		}
		liar := oci.Summary{Name: "kwcov-go", Version: "0.1.0", ABI: "1.1", Kinds: []string{"metric/keyword_coverage"}, Capabilities: []string{}}
		ref, err := oci.ParseRef("oci://"+reg.addr+"/team-a/liar:1.0", true)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := (&oci.Client{Credentials: creds}).Push(context.Background(), ref, oci.Artifact{Module: module, Transport: oci.TransportWasm, Summary: liar}); err != nil {
			t.Fatal(err)
		}
		e.must(work, "plugin", "sign", "--key", "team-a.key", ref.String())
		writeFile(t, filepath.Join(teamB, "liar.yaml"), teamBConfig(reg.addr, "team-a/liar:1.0", "keyword_coverage", "{keywords: [paris]}"))
		e.must(teamB, "lock", "-c", "liar.yaml") // the lock records the claim
		_, stderr, code := e.anvil(teamB, nil, "run", "-c", "liar.yaml", "-o", "liar-out")
		wantRefusal(t, "run", stderr, code, 2, "annotations do not match the module", "annotations say [], the module asks for [judge]", "nothing of it was run")
		if _, err := os.Stat(filepath.Join(teamB, "liar-out", "results.jsonl")); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("a refused plugin's run wrote results (stat: %v)", err)
		}
		_, stderr, code = e.anvil(work, nil, "plugin", "verify", ref.String(), "--key", "team-a.pub")
		wantRefusal(t, "verify", stderr, code, 1, "annotations do not match the module")
	})
	t.Run("process plugin", func(t *testing.T) {
		e.t = t
		// A native plugin travels as the process artifact for this
		// os/arch, and runs from the cache as transport process.
		native := filepath.Join(modules, "textcheck-native")
		copyFile(t, filepath.Join(wasmDir, "textcheck-native"), native)
		if err := os.Chmod(native, 0o755); err != nil {
			t.Fatal(err)
		}
		nativeRef := "oci://" + reg.addr + "/team-a/textcheck-native:1.0"
		if out := e.must(work, "plugin", "push", "bin/wasm/textcheck-native", nativeRef); !strings.Contains(out, "(process textcheck") {
			t.Errorf("push of a native plugin: %s", out)
		}
		e.must(work, "plugin", "sign", "--key", "team-a.key", nativeRef)
		writeFile(t, filepath.Join(teamB, "native.yaml"), teamBConfig(reg.addr, "team-a/textcheck-native:1.0", "exact_match", ""))
		e.must(teamB, "lock", "-c", "native.yaml")
		if l := readString(t, filepath.Join(teamB, "native.lock")); !strings.Contains(l, `"transport": "process"`) || !strings.Contains(l, oci.ProcessLayer) {
			t.Errorf("native.lock:\n%s", l)
		}
		e.must(teamB, "run", "-c", "native.yaml", "-o", "native-out")
		if s := readString(t, filepath.Join(teamB, "native-out", "summary.json")); !strings.Contains(s, `"verdict": "passed"`) {
			t.Errorf("the native plugin's run did not pass:\n%s", s)
		}
	})
	t.Run("hand-edited lockfile", func(t *testing.T) {
		e.t = t
		path := filepath.Join(teamB, "anvil.lock")
		defer writeFile(t, path, lock)
		kwcovDigest := fileDigest(t, kwcov)
		for _, c := range []struct {
			name, from, to, want string
		}{
			{"module digest swapped", fileDigest(t, filepath.Join(modules, "textcheck.wasm")), kwcovDigest, "module.digest is " + kwcovDigest},
			{"capabilities", `"capabilities": []`, `"capabilities": ["judge"]`, "capabilities is [judge] in anvil.lock but [] in manifest"},
			{"unknown field", `"signer":`, `"trusted": true, "signer":`, `unknown field "trusted"`},
		} {
			if !strings.Contains(lock, c.from) {
				t.Fatalf("%s: the lock has no %q", c.name, c.from)
			}
			writeFile(t, path, strings.Replace(lock, c.from, c.to, 1))
			_, stderr, code := e.anvil(teamB, nil, "run", "-o", "edited-out")
			wantRefusal(t, c.name, stderr, code, 2, c.want)
			if _, err := os.Stat(filepath.Join(teamB, "edited-out", "results.jsonl")); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("%s: a refused run wrote results", c.name)
			}
		}
	})
	t.Run("tag moved", func(t *testing.T) {
		e.t = t
		moved := e.must(work, "plugin", "push", "bin/wasm/kwcov-go.wasm", textcheckRef)
		newDigest := regexp.MustCompile(`@(sha256:[0-9a-f]{64})`).FindStringSubmatch(moved)[1]
		for _, args := range [][]string{{"run", "-o", "moved-out"}, {"validate"}, {"lock"}} {
			_, stderr, code := e.anvil(teamB, nil, args...)
			wantRefusal(t, args[0], stderr, code, 2, "tag "+textcheckRef+" moved", "pins "+lockedDigest, "now has "+newDigest, "lock --update")
		}
		if readString(t, filepath.Join(teamB, "anvil.lock")) != lock {
			t.Error("lock without --update rewrote anvil.lock")
		}
		// Pushing the same module again gives the same digest back.
		e.must(work, "plugin", "push", "bin/wasm/textcheck.wasm", textcheckRef)
		e.must(teamB, "lock")
		e.must(teamB, "lock", "--update")
		if readString(t, filepath.Join(teamB, "anvil.lock")) != lock {
			t.Error("re-locking the same digest changed anvil.lock")
		}
	})
	// A cache filled by `plugin pull` alone, for the offline run below.
	pulled := "ANVIL_PLUGIN_CACHE=" + filepath.Join(work, "pulled")
	e.t = t
	if _, stderr, code := e.anvil(work, []string{pulled}, "plugin", "pull", textcheckRef); code != 0 {
		t.Fatalf("pull: exit %d: %s", code, stderr)
	}
	t.Run("tampered layer", func(t *testing.T) {
		e.t = t
		module := fileDigest(t, filepath.Join(modules, "textcheck.wasm"))
		hexd := strings.TrimPrefix(module, "sha256:")
		blob := filepath.Join(reg.data, "docker", "registry", "v2", "blobs", "sha256", hexd[:2], hexd, "data")
		orig := flipByte(t, blob)
		_, stderr, code := e.anvil(teamB, []string{"ANVIL_PLUGIN_CACHE=" + filepath.Join(work, "fresh")}, "run", "-o", "tampered-out")
		wantRefusal(t, "registry layer", stderr, code, 2, "module layer "+module)
		writeFile(t, blob, orig)
		cached := filepath.Join(work, "cache", "blobs", "sha256", hexd)
		orig = flipByte(t, cached)
		_, stderr, code = e.anvil(teamB, nil, "run", "-o", "tampered-out")
		wantRefusal(t, "cached module", stderr, code, 2, "sha256 mismatch", "refusing to compile")
		writeFile(t, cached, orig)
		if err := os.Chmod(cached, 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(filepath.Join(teamB, "tampered-out", "results.jsonl")); !errors.Is(err, os.ErrNotExist) {
			t.Error("a refused run wrote results")
		}
	})
	t.Run("publish, info, search, require_conformance", func(t *testing.T) {
		e.t = t
		published := "oci://" + reg.addr + "/team-a/textcheck-published:1.0"
		out := e.must(work, "plugin", "publish", "bin/wasm/textcheck.wasm", published, "--key", "team-a.key")
		for _, want := range []string{"published " + published + "@sha256:", "signed by ed25519:", "conformance ", " 0 failed, "} {
			if !strings.Contains(out, want) {
				t.Errorf("publish output lacks %q:\n%s", want, out)
			}
		}
		// Team B's config trusts team A's key: info and search name it.
		info := e.must(teamB, "plugin", "info", published)
		for _, want := range []string{"signed by     team-a (ed25519:", "conformance   passed: ", "signed by team-a (ed25519:", "metric/exact_match", "params {"} {
			if !strings.Contains(info, want) {
				t.Errorf("plugin info lacks %q:\n%s", want, info)
			}
		}
		found := e.must(teamB, "plugin", "search", "EXACT", "--registry", "oci://"+reg.addr)
		row := ""
		for _, line := range strings.Split(found, "\n") {
			if strings.HasPrefix(line, "oci://"+reg.addr+"/team-a/textcheck-published:1.0 ") {
				row = line
			}
		}
		if !strings.Contains(row, "passed, attested by team-a (ed25519:") || !strings.Contains(row, "exact_match") {
			t.Errorf("search lacks the published plugin as passed and attested by team-a:\n%s", found)
		}
		if !strings.Contains(found, "oci://"+reg.addr+"/team-a/textcheck:1.0 ") || strings.Contains(e.must(teamB, "plugin", "search", "no-such-kind", "--registry", "oci://"+reg.addr), "textcheck") {
			t.Errorf("search by kind: want every plugin with exact_match, none for another query:\n%s", found)
		}

		// A config requiring conformance takes the published plugin, and
		// refuses the one signed but never tested.
		conformant := strings.Replace(teamBConfig(reg.addr, "team-a/textcheck-published:1.0", "exact_match", ""),
			"  require_signatures: true\n", "  require_signatures: true\n  require_conformance: true\n", 1)
		writeFile(t, filepath.Join(teamB, "conformant.yaml"), conformant)
		e.must(teamB, "lock", "-c", "conformant.yaml")
		validated := e.must(teamB, "validate", "-c", "conformant.yaml", "--json", "--no-dataset")
		if !strings.Contains(validated, `"conformance": "`) || !strings.Contains(validated, "attested by team-a (ed25519:") {
			t.Errorf("validate --json does not show the accepted attestation:\n%s", validated)
		}
		e.must(teamB, "run", "-c", "conformant.yaml", "-o", "conformant-out")
		untested := strings.Replace(conformant, "team-a/textcheck-published:1.0", "team-a/textcheck:1.0", 1)
		writeFile(t, filepath.Join(teamB, "untested.yaml"), untested)
		_, stderr, code := e.anvil(teamB, nil, "lock", "-c", "untested.yaml")
		wantRefusal(t, "lock an untested plugin", stderr, code, 2, "plugins.textcheck", "rule trust.require_conformance", "no conformance attestation")

		// Mallory attests the manifest team A signed, with her own key: it
		// proves nothing to team B. (Her report is made to differ from
		// team A's by its --sha256 line: an attestation with the very bytes
		// of one team A signed elsewhere would carry team A's signature,
		// which holds wherever it is found.)
		e.must(work, "plugin", "publish", "bin/wasm/textcheck.wasm", "oci://"+reg.addr+"/team-a/textcheck:1.0", "--key", "mallory.key",
			"--sha256", fileDigest(t, filepath.Join(modules, "textcheck.wasm")))
		_, stderr, code = e.anvil(teamB, nil, "lock", "-c", "untested.yaml")
		wantRefusal(t, "lock with only mallory's attestation", stderr, code, 2, "rule trust.require_conformance", "signed only by keys that are not trusted publishers")
	})
	t.Run("the catalog by reference", func(t *testing.T) {
		// examples/catalog as its comment runs it: the catalog's assert
		// plugin built from source and published by scripts/publish-catalog,
		// then pulled, locked and verified by the example's config.
		e.t = t
		dir := filepath.Join(work, "catalog")
		if err := os.MkdirAll(filepath.Join(work, "assertions"), 0o755); err != nil {
			t.Fatal(err)
		}
		copyFile(t, "../../../examples/assertions/cases.jsonl", filepath.Join(work, "assertions", "cases.jsonl"))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(dir, "anvil.yaml"), strings.ReplaceAll(readString(t, "../../../examples/catalog/anvil.yaml"), "127.0.0.1:5000", reg.addr))
		e.must(dir, "plugin", "keygen", "catalog")
		script, err := filepath.Abs("../../../scripts/publish-catalog")
		if err != nil {
			t.Fatal(err)
		}
		// The whole catalog: every first-party plugin built from source,
		// through the conformance kit, pushed, signed and attested.
		out, code := e.bash(dir, "ANVIL="+binary+" "+script+" oci://"+reg.addr+" catalog.key")
		if code != 0 {
			t.Fatalf("publish-catalog exited %d:\n%s", code, out)
		}
		plugins, _ := filepath.Glob("../../../plugins/*/wasm")
		for _, p := range plugins {
			name := filepath.Base(filepath.Dir(p))
			if !strings.Contains(out, name+": published oci://"+reg.addr+"/anvil/"+name+":") {
				t.Errorf("publish-catalog did not publish %s:\n%s", name, out)
			}
		}
		if len(plugins) < 8 {
			t.Errorf("the catalog has %d plugins; want every first-party one (8 or more)", len(plugins))
		}
		found := e.must(dir, "plugin", "search", "tool", "--registry", "oci://"+reg.addr)
		if !strings.Contains(found, "anvil/assert:1.0.0") || !strings.Contains(found, "passed, attested by anvil (ed25519:") {
			t.Errorf("search for the catalog's tool kinds:\n%s", found)
		}
		e.must(dir, "lock")
		validated := e.must(dir, "validate", "--json")
		if !strings.Contains(validated, `"ref": "oci://`+reg.addr+`/anvil/assert:1.0.0@sha256:`) || !strings.Contains(validated, "attested by anvil (ed25519:") {
			t.Errorf("validate --json: the catalog plugin is not the pinned, attested one:\n%s", validated)
		}
		_, stderr, code := e.anvil(dir, nil, "run", "-o", "out")
		if code != 1 { // the example's third case fails the gate, as it should
			t.Errorf("run exited %d, want 1 (a failing case):\n%s", code, stderr)
		}
		summary := readString(t, filepath.Join(dir, "out", "summary.json"))
		for _, want := range []string{`"metric": "tools-in-order"`, `"kind": "tool_correctness"`} {
			if !strings.Contains(summary, want) {
				t.Errorf("summary.json lacks %s:\n%s", want, summary)
			}
		}
	})
	t.Run("registry down", func(t *testing.T) {
		e.t = t
		reg.stop()
		_, stderr, code := e.anvil(teamB, nil, "run", "-o", "offline-out")
		if code != 0 || !strings.Contains(stderr, "registry unreachable") {
			t.Errorf("warm cache, registry down: exit %d (want 0, from the cache):\n%s", code, stderr)
		}
		if _, stderr, code := e.anvil(teamB, []string{pulled}, "run", "-o", "pulled-out"); code != 0 {
			t.Errorf("cache filled by plugin pull, registry down: exit %d:\n%s", code, stderr)
		}
		// What a conformance policy needs is cached by lock, too.
		if _, stderr, code := e.anvil(teamB, nil, "run", "-c", "conformant.yaml", "-o", "conformant-offline"); code != 0 {
			t.Errorf("require_conformance, warm cache, registry down: exit %d:\n%s", code, stderr)
		}
		_, stderr, code = e.anvil(teamB, []string{"ANVIL_PLUGIN_CACHE=" + filepath.Join(work, "cold")}, "run", "-o", "cold-out")
		wantRefusal(t, "cold cache", stderr, code, 2, "is not in the plugin cache", "the registry cannot be reached", "nothing was loaded")
		if _, err := os.Stat(filepath.Join(teamB, "cold-out")); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("a cold-cache run with the registry down created its output directory (stat: %v)", err)
		}
	})
}

// e2eEnv runs the built anvil-host and README blocks with one environment.
type e2eEnv struct {
	t   *testing.T
	env []string
}

func (e *e2eEnv) environ(extra []string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "OPENAI_") || strings.HasPrefix(k, "ANVIL_") || k == "DOCKER_CONFIG" {
			continue
		}
		env = append(env, kv)
	}
	return append(append(env, e.env...), extra...)
}

func (e *e2eEnv) anvil(dir string, extra []string, args ...string) (stdout, stderr string, code int) {
	e.t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Dir, cmd.Env = dir, e.environ(extra)
	r := runCmd(e.t, cmd)
	return r.stdout, r.stderr, r.code
}

// must runs anvil-host and fails the test unless it exits 0.
func (e *e2eEnv) must(dir string, args ...string) string {
	e.t.Helper()
	out, stderr, code := e.anvil(dir, nil, args...)
	if code != 0 {
		e.t.Fatalf("anvil-host %s: exit %d\n%s%s", strings.Join(args, " "), code, out, stderr)
	}
	return out
}

// bash runs a README block with bash -euo pipefail.
func (e *e2eEnv) bash(dir, script string) (string, int) {
	e.t.Helper()
	cmd := exec.Command("bash", "-euo", "pipefail", "-c", script)
	cmd.Dir, cmd.Env = dir, e.environ(nil)
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return string(out), ee.ExitCode()
	} else if err != nil {
		e.t.Fatal(err)
	}
	return string(out), 0
}

// readmeBlocks returns the ```sh blocks of README.md that follow a
// `<!-- registry-e2e: NAME -->` marker, by NAME.
func readmeBlocks(t *testing.T) map[string]string {
	t.Helper()
	b, err := os.ReadFile("../../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile("(?s)<!-- registry-e2e: ([a-z-]+) -->\n```sh\n(.*?)```\n")
	blocks := map[string]string{}
	for _, m := range re.FindAllStringSubmatch(string(b), -1) {
		blocks[m[1]] = m[2]
	}
	for _, name := range []string{"credentials", "team-a", "team-b", "team-b-judge"} {
		if blocks[name] == "" {
			t.Fatalf("README.md has no registry-e2e block %q", name)
		}
	}
	return blocks
}

// teamBConfig is team B's policy with one plugin (ref REPO:TAG under the
// registry) and one metric of kind.
func teamBConfig(registry, repoTag, kind, params string) string {
	if params == "" {
		params = "{ignore_case: true}"
	}
	return fmt.Sprintf(`version: 1
dataset: cases.jsonl
trust:
  require_signatures: true
  publishers:
    team-a: {key: team-a.pub, capabilities: []}
plugins:
  textcheck:
    ref: oci://%s/%s
metrics:
  - {name: m, kind: %s, params: %s}
`, registry, repoTag, kind, params)
}

func wantRefusal(t *testing.T, what, stderr string, code, wantCode int, wants ...string) {
	t.Helper()
	if code != wantCode {
		t.Errorf("%s: exit %d, want %d:\n%s", what, code, wantCode, stderr)
	}
	for _, w := range wants {
		if !strings.Contains(stderr, w) {
			t.Errorf("%s: output lacks %q:\n%s", what, w, stderr)
		}
	}
}

// registryServer is a docker-registry process on a loopback port.
type registryServer struct {
	addr, data string
	cmd        *exec.Cmd
	done       chan struct{}
}

func startRegistry(t *testing.T, tools map[string]string, dir, user, password string) *registryServer {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	hash, err := exec.Command(tools["htpasswd"], "-Bbn", user, password).Output()
	if err != nil {
		t.Fatalf("htpasswd: %v", err)
	}
	writeFile(t, filepath.Join(dir, "htpasswd"), string(hash))
	data := filepath.Join(dir, "data")
	writeFile(t, filepath.Join(dir, "config.yml"), fmt.Sprintf(`version: 0.1
log: {level: info}
storage:
  filesystem: {rootdirectory: %s}
http: {addr: "127.0.0.1:0"}
auth:
  htpasswd: {realm: anvil-e2e, path: %s}
`, data, filepath.Join(dir, "htpasswd")))
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(tools["docker-registry"], "serve", filepath.Join(dir, "config.yml"))
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	r := &registryServer{data: data, cmd: cmd, done: make(chan struct{})}
	t.Cleanup(r.stop)
	listening := regexp.MustCompile(`listening on (127\.0\.0\.1:\d+)`)
	sc := bufio.NewScanner(pr)
	var log strings.Builder
	for sc.Scan() {
		log.WriteString(sc.Text() + "\n")
		if m := listening.FindStringSubmatch(sc.Text()); m != nil {
			r.addr = m[1]
			break
		}
	}
	if r.addr == "" {
		t.Fatalf("docker-registry did not start:\n%s", log.String())
	}
	go func() { _, _ = io.Copy(io.Discard, pr); pr.Close() }()
	go func() { _ = cmd.Wait(); close(r.done) }()
	return r
}

func (r *registryServer) stop() {
	select {
	case <-r.done:
		return
	default:
	}
	_ = r.cmd.Process.Kill()
	<-r.done
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, to, string(b))
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readString(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func fileDigest(t *testing.T, path string) string {
	t.Helper()
	sum := sha256.Sum256([]byte(readString(t, path)))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// flipByte changes one byte in the middle of the file (same size) and
// returns the original content.
func flipByte(t *testing.T, path string) string {
	t.Helper()
	orig := readString(t, path)
	b := []byte(orig)
	b[len(b)/2] ^= 0xff
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return orig
}
