package cli

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
	"golang.org/x/mod/module"
	"golang.org/x/mod/semver"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/host/internal/engine"
	"github.com/agentanvil/anvil/sdk/native"
)

// modulePath is the module anvil-host is built from.
const modulePath = "github.com/agentanvil/anvil"

// configVersion is the anvil.yaml `version:` this host reads.
const configVersion = 1

// versionInfo is what `version --json` prints.
type versionInfo struct {
	Module string `json:"module"`
	// Version is the module version stamped by the go command: a tag
	// (v1.2.3), a pseudo-version, or "(devel)" when unknown (a build from
	// a work tree without a tag).
	Version string `json:"version"`
	// Commit is the VCS revision the binary was built from (CommitSource
	// "vcs": a build in a checkout), or the 12-hex commit prefix a
	// pseudo-version names (CommitSource "pseudo-version": `go install
	// …@v0.0.0-…-abcdef123456`, a build from the module cache, which
	// carries no VCS stamp). "" when the build does not say: go build
	// -buildvcs=false, go run, a test binary, and `go install …@v1.2.3`,
	// whose commit is the one tagged v1.2.3. Modified says the work tree
	// had local changes.
	Commit       string `json:"commit,omitempty"`
	CommitSource string `json:"commit_source,omitempty"`
	CommitTime   string `json:"commit_time,omitempty"`
	Modified     bool   `json:"modified,omitempty"`
	Go           string `json:"go"`
	Platform     string `json:"platform"`
	// ABI is the plugin ABI the host speaks: Wasm modules export
	// anvil_abi_v<major> and declare their minor; process plugins
	// handshake with protocol version ProcessProtocol (the ABI major).
	ABI             abiVersion `json:"abi"`
	ConfigVersion   int        `json:"config_version"`
	RecordingFormat int        `json:"recording_format"`
}

type abiVersion struct {
	Version         string `json:"version"` // major.minor
	Major           int    `json:"major"`
	Minor           int    `json:"minor"`
	WasmMarker      string `json:"wasm_marker"`
	ProcessProtocol uint   `json:"process_protocol"`
}

// readBuildInfo is the binary's build information (nil when unavailable).
func readBuildInfo() *debug.BuildInfo {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return nil
	}
	return bi
}

// buildVersion assembles the version from build information, which may be
// nil or lack VCS settings.
func buildVersion(bi *debug.BuildInfo) versionInfo {
	v := versionInfo{
		Module:   modulePath,
		Version:  "(devel)",
		Go:       runtime.Version(),
		Platform: runtime.GOOS + "/" + runtime.GOARCH,
		ABI: abiVersion{
			Version:         fmt.Sprintf("%d.%d", abi.Major, abi.Minor),
			Major:           abi.Major,
			Minor:           abi.Minor,
			WasmMarker:      abi.ExportMarker,
			ProcessProtocol: native.Handshake().ProtocolVersion,
		},
		ConfigVersion:   configVersion,
		RecordingFormat: engine.RecordingVersion,
	}
	if bi == nil {
		return v
	}
	if bi.Main.Path != "" {
		v.Module = bi.Main.Path
	}
	if bi.Main.Version != "" {
		v.Version = bi.Main.Version
	}
	if bi.GoVersion != "" {
		v.Go = bi.GoVersion
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Commit, v.CommitSource = s.Value, "vcs"
		case "vcs.time":
			v.CommitTime = s.Value
		case "vcs.modified":
			v.Modified = s.Value == "true"
		}
	}
	if v.Commit == "" && module.IsPseudoVersion(v.Version) {
		if rev, err := module.PseudoVersionRev(v.Version); err == nil {
			v.Commit, v.CommitSource = rev, "pseudo-version"
		}
	}
	return v
}

// requirableVersion is the module version a go.mod outside a checkout can
// require to build against the same SDK and ABI as this binary: its own
// version when the go command stamped one a proxy can serve (a tag or a
// pseudo-version, from `go install …@VERSION` or a build in a clean
// checkout), else "" ("(devel)", or a +dirty build of local changes).
func requirableVersion(bi *debug.BuildInfo) string {
	if bi == nil || bi.Main.Path != modulePath {
		return ""
	}
	v := bi.Main.Version
	if module.Check(modulePath, v) != nil || semver.Canonical(v) != v {
		return ""
	}
	return v
}

// isTag reports whether v names a tag: a semantic version that is not a
// pseudo-version.
func isTag(v string) bool {
	return semver.IsValid(v) && !module.IsPseudoVersion(v)
}

// versionString is the one-line version (`anvil-host --version`).
func versionString(bi *debug.BuildInfo) string {
	v := buildVersion(bi)
	commit := "unknown commit"
	switch {
	case v.Commit != "":
		commit = "commit " + shortCommit(v.Commit)
		if v.Modified {
			commit += "+modified"
		}
	case isTag(v.Version):
		commit = "tagged " + v.Version
	}
	return fmt.Sprintf("anvil-host %s (%s, %s, ABI v%s)", v.Version, commit, v.Go, v.ABI.Version)
}

func shortCommit(c string) string {
	if len(c) > 12 {
		return c[:12]
	}
	return c
}

func writeVersion(w io.Writer, v versionInfo) error {
	commit := "unknown (built without VCS information)"
	switch {
	case v.CommitSource == "pseudo-version":
		commit = v.Commit + " (named by the pseudo-version; a go install build carries no VCS stamp)"
	case v.Commit != "":
		commit = v.Commit
		if v.CommitTime != "" {
			commit += " (" + v.CommitTime + ")"
		}
		if v.Modified {
			commit += ", with local modifications"
		}
	case isTag(v.Version):
		commit = "the one tagged " + v.Version + " (a go install build carries no VCS stamp)"
	}
	_, err := fmt.Fprintf(w, `anvil-host %s
  module     %s
  commit     %s
  go         %s %s
  abi        v%s (Wasm marker %s; process plugins: protocol %d)
  config     version %d
  recording  format %d
`, v.Version, v.Module, commit, v.Go, v.Platform, v.ABI.Version, v.ABI.WasmMarker, v.ABI.ProcessProtocol,
		v.ConfigVersion, v.RecordingFormat)
	return err
}

func newVersionCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the version, commit, Go version and plugin ABI version",
		Long: `Print the module version and the VCS commit the binary was built from
("(devel)" and "unknown" when the build does not say; for a binary from
"go install github.com/agentanvil/anvil/cmd/anvil-host@VERSION", the commit
the tag or pseudo-version names), the Go toolchain and
platform, the plugin ABI version the host speaks (Wasm modules export
anvil_abi_v1; process plugins handshake with protocol 1), the anvil.yaml
version it reads and the format of the recorded judge sessions it writes.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			v := buildVersion(readBuildInfo())
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), v)
			}
			return writeVersion(cmd.OutOrStdout(), v)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print machine-readable JSON")
	return cmd
}
