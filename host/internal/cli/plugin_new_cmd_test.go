package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"golang.org/x/mod/modfile"
)

// TestPluginNewGo generates the Go scaffold, builds it with its own
// build.sh and runs it: plugin new → build.sh → plugin test → run, every
// step exit 0, with no edits. It logs the time from plugin new to a
// passing run.
func TestPluginNewGo(t *testing.T) {
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	repo, err := filepath.Abs("../../..")
	if err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	start := time.Now()
	r := runBinary(t, work, nil, "plugin", "new", "kw-check", "--lang", "go", "--anvil-dir", repo)
	if r.code != 0 || !strings.Contains(r.stdout, "wrote 6 files for plugin kw-check (go) into kw-check") {
		t.Fatalf("plugin new: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	dir := filepath.Join(work, "kw-check")
	for _, f := range []string{"README.md", "anvil.yaml", "build.sh", "cases.jsonl", "go.mod", "main.go"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Fatal(err)
		}
	}
	if st, _ := os.Stat(filepath.Join(dir, "build.sh")); st.Mode().Perm()&0o111 == 0 {
		t.Fatalf("build.sh mode %v, want executable", st.Mode())
	}
	gomod := string(mustRead(t, filepath.Join(dir, "go.mod")))
	if !strings.Contains(gomod, "replace github.com/agentanvil/anvil => "+repo) || !strings.HasPrefix(gomod, "module kw-check\n") {
		t.Fatalf("go.mod:\n%s", gomod)
	}
	if main := string(mustRead(t, filepath.Join(dir, "main.go"))); !strings.HasPrefix(main, "//go:build wasip1\n") ||
		!strings.Contains(main, `Name:           "kw_check"`) || !strings.Contains(main, `Name: "kw-check"`) {
		t.Fatalf("main.go lacks the build constraint or the names:\n%s", main)
	}

	// build.sh uses the real Go environment (module and build caches).
	build := exec.Command("./build.sh")
	build.Dir = dir
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build.sh: %v\n%s", err, out)
	}
	sum := strings.TrimSpace(string(mustRead(t, filepath.Join(dir, "plugin.wasm.sha256"))))
	if !strings.HasPrefix(sum, "sha256:") || len(sum) != len("sha256:")+64 {
		t.Fatalf("plugin.wasm.sha256 = %q", sum)
	}
	if r := runBinary(t, dir, nil, "plugin", "test", "plugin.wasm"); r.code != 0 {
		t.Fatalf("plugin test: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = runBinary(t, dir, nil, "run", "--cache", "off", "--no-progress", "-o", "out")
	if r.code != 0 {
		t.Fatalf("run: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	t.Logf("plugin new → build → plugin test → passing run: %s", time.Since(start).Round(time.Millisecond))
	want := map[string]float64{"both": 1, "upper": 1, "one": 0.5}
	lines := resultLines(t, filepath.Join(dir, "out", "results.jsonl"))
	if len(lines) != 3 {
		t.Fatalf("%d results, want 3", len(lines))
	}
	for _, c := range lines {
		m := c.Metrics[0]
		if m.Kind != "kw_check" || m.Status != "passed" || m.Score == nil || *m.Score != want[c.CaseID] {
			t.Errorf("%s: %+v; want passed with score %v", c.CaseID, m, want[c.CaseID])
		}
	}
	for _, c := range lines {
		if c.CaseID == "one" && c.Metrics[0].Reason != "found 1 of 2 keywords; missing: capital" {
			t.Errorf("reason %q", c.Metrics[0].Reason)
		}
	}
}

func TestPluginNewRefuses(t *testing.T) {
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	work := t.TempDir()
	if err := os.MkdirAll(filepath.Join(work, "taken"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(work, "taken", "keep.txt"), []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"plugin", "new", "Bad", "--lang", "go"}, `plugin name "Bad": want a lower-case letter`},
		{[]string{"plugin", "new", "1abc", "--lang", "go"}, `plugin name "1abc"`},
		{[]string{"plugin", "new", "ok", "--lang", "rust"}, `--lang "rust": want one of go, c, assemblyscript, python`},
		{[]string{"plugin", "new", "ok", "--lang", "go", "--dir", "taken"}, "taken exists and is not empty: plugin new never overwrites"},
		{[]string{"plugin", "new", "ok", "--lang", "go", "--anvil-dir", work}, "not a checkout of github.com/agentanvil/anvil"},
	} {
		r := runBinary(t, work, nil, tc.args...)
		if r.code != exitUsage || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("%q: exit %d, stderr %q; want %d and %q", tc.args, r.code, r.stderr, exitUsage, tc.want)
		}
	}
	entries, _ := os.ReadDir(filepath.Join(work, "taken"))
	if len(entries) != 1 {
		t.Fatalf("the refused directory was written to: %v", entries)
	}
	r := runBinary(t, work, nil, "plugin", "new", "ok", "--lang", "go", "--dir", "taken", "--force", "--anvil-dir", "../../..")
	if r.code == 0 {
		t.Fatalf("--anvil-dir relative to the test's work dir should not resolve: %s", r.stdout)
	}
	repo, _ := filepath.Abs("../../..")
	r = runBinary(t, work, nil, "plugin", "new", "ok", "--lang", "go", "--dir", "taken", "--force", "--anvil-dir", repo)
	if r.code != 0 {
		t.Fatalf("--force: exit %d %s", r.code, r.stderr)
	}
	if string(mustRead(t, filepath.Join(work, "taken", "keep.txt"))) != "mine" {
		t.Fatal("--force touched a file that is not the scaffold's")
	}
}

// TestScaffoldsFollowTheContract renders every embedded scaffold and checks
// the files the contract requires.
// Each is rendered with each source of the SDK: a checkout, a released
// version, none.
func TestScaffoldsFollowTheContract(t *testing.T) {
	sources := map[string]sdkSource{"checkout": {AnvilDir: "/src/anvil"}, "version": {AnvilVersion: "v0.1.0"}, "none": {}}
	for _, l := range scaffoldLangs {
		for sname, src := range sources {
			t.Run(l.name+"/"+sname, func(t *testing.T) {
				files, err := renderScaffold(l.name, scaffoldData{Name: "my-plugin", Kind: "my_plugin", AnvilModule: AnvilModule, sdkSource: src})
				if err != nil {
					t.Skipf("no %s scaffold in this build: %v", l.name, err)
				}
				byPath := map[string]scaffoldFile{}
				for _, f := range files {
					byPath[f.path] = f
					if strings.Contains(f.path, "__NAME__") || strings.HasSuffix(f.path, ".tmpl") || strings.Contains(string(f.body), "{{") {
						t.Errorf("%s: not fully rendered", f.path)
					}
				}
				for _, need := range []string{"build.sh", "README.md", "cases.jsonl", "anvil.yaml"} {
					if _, ok := byPath[need]; !ok {
						t.Errorf("no %s", need)
					}
				}
				if f := byPath["build.sh"]; f.mode != 0o755 {
					t.Errorf("build.sh mode %v", f.mode)
				}
				if n := strings.Count(strings.TrimSpace(string(byPath["cases.jsonl"].body)), "\n") + 1; n != 3 {
					t.Errorf("cases.jsonl has %d cases, want 3", n)
				}
				y := string(byPath["anvil.yaml"].body)
				for _, want := range []string{"sha256_file:", "transport:", "kind: my_plugin", "my-plugin:"} {
					if !strings.Contains(y, want) {
						t.Errorf("anvil.yaml lacks %q", want)
					}
				}
			})
		}
	}
}

// TestGoScaffoldRequiresTheSDK: the Go project's go.mod, for each source
// of the SDK. Outside a checkout it requires the version of the host that
// wrote it — a version a proxy serves, never a replace to a local path.
func TestGoScaffoldRequiresTheSDK(t *testing.T) {
	for _, tc := range []struct {
		name        string
		src         sdkSource
		wantRequire string // "" for no require of the module
		wantReplace string // "" for no replace
	}{
		{"checkout", sdkSource{AnvilDir: "/src/anvil"}, "v0.0.0-00010101000000-000000000000", "/src/anvil"},
		{"installed release", sdkSource{AnvilVersion: "v0.1.0"}, "v0.1.0", ""},
		{"installed pseudo-version", sdkSource{AnvilVersion: "v0.0.0-20260102030405-0123456789ab"}, "v0.0.0-20260102030405-0123456789ab", ""},
		{"nothing known", sdkSource{}, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			files, err := renderScaffold("go", scaffoldData{Name: "my-plugin", Kind: "my_plugin", AnvilModule: AnvilModule, sdkSource: tc.src})
			if err != nil {
				t.Fatal(err)
			}
			var gomod, readme []byte
			for _, f := range files {
				switch f.path {
				case "go.mod":
					gomod = f.body
				case "README.md":
					readme = f.body
				}
			}
			mf, err := modfile.Parse("go.mod", gomod, nil)
			if err != nil {
				t.Fatalf("go.mod does not parse: %v\n%s", err, gomod)
			}
			if mf.Module.Mod.Path != "my-plugin" {
				t.Errorf("module %q", mf.Module.Mod.Path)
			}
			var require, replace string
			for _, r := range mf.Require {
				if r.Mod.Path == AnvilModule {
					require = r.Mod.Version
				}
			}
			for _, r := range mf.Replace {
				if r.Old.Path == AnvilModule {
					replace = r.New.Path
				}
			}
			if require != tc.wantRequire || replace != tc.wantReplace {
				t.Errorf("require %q, replace %q; want %q, %q\n%s", require, replace, tc.wantRequire, tc.wantReplace, gomod)
			}
			if tc.src.AnvilVersion != "" && !strings.Contains(string(readme), "requires `"+AnvilModule+"` `"+tc.src.AnvilVersion+"`") {
				t.Errorf("README does not say which version it requires:\n%s", readme)
			}
		})
	}
}

// TestFindSDK: where plugin new takes the SDK from, in its order.
func TestFindSDK(t *testing.T) {
	checkoutA, checkoutB, elsewhere := t.TempDir(), t.TempDir(), t.TempDir()
	for _, d := range []string{checkoutA, checkoutB} {
		if err := os.WriteFile(filepath.Join(d, "go.mod"), []byte("module "+AnvilModule+"\n\ngo 1.26\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Join(d, "bin", "sub"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	release := &debug.BuildInfo{Main: debug.Module{Path: AnvilModule, Version: "v0.1.0"}}
	pseudo := &debug.BuildInfo{Main: debug.Module{Path: AnvilModule, Version: "v0.0.0-20260102030405-0123456789ab"}}
	dirty := &debug.BuildInfo{Main: debug.Module{Path: AnvilModule, Version: "v0.0.0-20260102030405-0123456789ab+dirty"}}
	devel := &debug.BuildInfo{Main: debug.Module{Path: AnvilModule, Version: "(devel)"}}
	other := &debug.BuildInfo{Main: debug.Module{Path: "example.com/embedder", Version: "v1.0.0"}}
	// Built in a checkout, where the go command stamped the commit: a
	// release archive's binary, or a developer's of a commit no proxy has.
	stamped := &debug.BuildInfo{Main: debug.Module{Path: AnvilModule, Version: "v0.0.0-20260102030405-0123456789ab"},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "0123456789ab0123456789ab0123456789ab0123"}}}
	noEnv := func(string) string { return "" }
	envA := func(k string) string {
		if k == "ANVIL_DIR" {
			return checkoutA
		}
		return ""
	}
	envNotACheckout := func(k string) string {
		if k == "ANVIL_DIR" {
			return elsewhere
		}
		return ""
	}
	exeIn := func(d string) string { return filepath.Join(d, "bin", "anvil-host") }
	for _, tc := range []struct {
		name   string
		flag   string
		getenv func(string) string
		exe    string
		wd     string
		bi     *debug.BuildInfo
		want   sdkSource
	}{
		{"--anvil-dir first", checkoutB, envA, exeIn(checkoutA), checkoutA, release, sdkSource{AnvilDir: checkoutB}},
		{"then $ANVIL_DIR", "", envA, exeIn(checkoutB), checkoutB, release, sdkSource{AnvilDir: checkoutA}},
		{"$ANVIL_DIR not a checkout is passed over", "", envNotACheckout, exeIn(elsewhere), elsewhere, release, sdkSource{AnvilVersion: "v0.1.0"}},
		{"then the checkout holding the binary", "", noEnv, exeIn(checkoutB), checkoutA, release, sdkSource{AnvilDir: checkoutB}},
		{"then the binary's release version, even inside a checkout", "", noEnv, exeIn(elsewhere), filepath.Join(checkoutA, "bin", "sub"), release, sdkSource{AnvilVersion: "v0.1.0"}},
		{"a pseudo-version is a version a proxy serves", "", noEnv, exeIn(elsewhere), elsewhere, pseudo, sdkSource{AnvilVersion: "v0.0.0-20260102030405-0123456789ab"}},
		{"a +dirty build is not: the checkout holding the work dir", "", noEnv, exeIn(elsewhere), filepath.Join(checkoutA, "bin", "sub"), dirty, sdkSource{AnvilDir: checkoutA}},
		{"(devel): the checkout holding the work dir", "", noEnv, exeIn(elsewhere), checkoutA, devel, sdkSource{AnvilDir: checkoutA}},
		{"a build stamped in a checkout: the checkout holding the work dir first", "", noEnv, exeIn(elsewhere), checkoutA, stamped, sdkSource{AnvilDir: checkoutA}},
		{"a build stamped in a checkout, outside any: its version", "", noEnv, exeIn(elsewhere), elsewhere, stamped, sdkSource{AnvilVersion: "v0.0.0-20260102030405-0123456789ab"}},
		{"another main module's version is not the SDK's", "", noEnv, exeIn(elsewhere), elsewhere, other, sdkSource{}},
		{"no build information", "", noEnv, exeIn(elsewhere), elsewhere, nil, sdkSource{}},
		{"nothing at all", "", noEnv, "", "", devel, sdkSource{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := findSDK(tc.flag, tc.getenv, tc.exe, tc.wd, tc.bi)
			if err != nil || got != tc.want {
				t.Errorf("findSDK = %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
}

// TestPythonBuildPicksItsInterpreter: build.sh packs the plugin for
// $PYTHON, else the active virtual environment's python3 (where `pip
// install anvil-plugin-sdk` put the SDK), else /usr/bin/python3; never a
// relative name, which the sandbox (no PATH) could not start.
func TestPythonBuildPicksItsInterpreter(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3")
	}
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	files, err := renderScaffold("python", scaffoldData{Name: "my-plugin", Kind: "my_plugin", AnvilModule: AnvilModule})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, f := range files {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, f.path)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f.path), f.body, f.mode); err != nil {
			t.Fatal(err)
		}
	}
	// An SDK whose import fails naming the interpreter, so build.sh's
	// message says which one it ran.
	sdk := t.TempDir()
	if err := os.MkdirAll(filepath.Join(sdk, "anvil_sdk"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(sdk, "anvil_sdk", "__init__.py"), []byte("raise RuntimeError('interpreter')\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	venv := t.TempDir()
	if err := os.MkdirAll(filepath.Join(venv, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(py, filepath.Join(venv, "bin", "python3")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		env  []string
		want string
	}{
		{"PYTHON", []string{"PYTHON=" + py, "VIRTUAL_ENV=" + venv}, py + " cannot import anvil_sdk"},
		{"the active virtual environment", []string{"VIRTUAL_ENV=" + venv}, venv + "/bin/python3 cannot import anvil_sdk"},
		{"a relative PYTHON", []string{"PYTHON=python3"}, "PYTHON=python3: want an absolute path"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			build := exec.Command("bash", "./build.sh")
			build.Dir = dir
			var env []string
			for _, kv := range os.Environ() {
				if !strings.HasPrefix(kv, "PYTHON=") && !strings.HasPrefix(kv, "VIRTUAL_ENV=") {
					env = append(env, kv)
				}
			}
			build.Env = append(env, append(tc.env, "ANVIL_SDK="+sdk)...)
			out, err := build.CombinedOutput()
			if err == nil || !strings.Contains(string(out), tc.want) {
				t.Errorf("build.sh: %v\n%s\nwant %q", err, out, tc.want)
			}
		})
	}
}

// TestPythonBuildSaysWhyTheSDKDoesNotImport: the Python scaffold's
// build.sh checks that its interpreter imports anvil_sdk. When the SDK is
// found but something it imports is not (grpcio, say), the message is that
// import error, not advice to install the SDK or set ANVIL_SDK, which is
// already right. A made-up module stands in for grpc, so the test does
// not depend on what this machine's python3 has installed.
func TestPythonBuildSaysWhyTheSDKDoesNotImport(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3")
	}
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	files, err := renderScaffold("python", scaffoldData{Name: "my-plugin", Kind: "my_plugin", AnvilModule: AnvilModule})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, f := range files {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, f.path)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f.path), f.body, f.mode); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name   string
		init   string // anvil_sdk/__init__.py; "" for no SDK at all
		want   string
		unwant string
	}{
		{"no SDK", "", "cannot import anvil_sdk: " + py + " -m pip install anvil-plugin-sdk (installed in a virtual environment? activate it, or set PYTHON to its python3), or set ANVIL_SDK", "No module named"},
		{"the SDK, without a dependency", "import grpc_missing_in_this_test\n",
			"No module named 'grpc_missing_in_this_test'", "set ANVIL_SDK"},
		// Whether or not this python3 has grpc, the import below fails naming a
		// grpc module, and the message says what to install.
		{"the SDK, without grpc", "import grpc.missing_in_this_test\n", "-m pip install grpcio protobuf)", "set ANVIL_SDK"},
		{"the SDK failing otherwise", "raise RuntimeError('broken sdk')\n", "RuntimeError: broken sdk", "set ANVIL_SDK"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sdk := t.TempDir()
			if tc.init != "" {
				if err := os.MkdirAll(filepath.Join(sdk, "anvil_sdk"), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(sdk, "anvil_sdk", "__init__.py"), []byte(tc.init), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			build := exec.Command("bash", "./build.sh")
			build.Dir = dir
			build.Env = append(os.Environ(), "PYTHON="+py, "ANVIL_SDK="+sdk)
			out, err := build.CombinedOutput()
			if err == nil {
				t.Fatalf("build.sh succeeded:\n%s", out)
			}
			if !strings.Contains(string(out), tc.want) || strings.Contains(string(out), tc.unwant) {
				t.Errorf("build.sh says\n%s\nwant %q in it, and not %q", out, tc.want, tc.unwant)
			}
		})
	}
}
