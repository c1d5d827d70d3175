package cli

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"

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
	// Commit is the VCS revision the binary was built from, "" when the
	// build had no VCS information (go build -buildvcs=false, go run,
	// a test binary); Modified says the work tree had local changes.
	Commit     string `json:"commit,omitempty"`
	CommitTime string `json:"commit_time,omitempty"`
	Modified   bool   `json:"modified,omitempty"`
	Go         string `json:"go"`
	Platform   string `json:"platform"`
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
			v.Commit = s.Value
		case "vcs.time":
			v.CommitTime = s.Value
		case "vcs.modified":
			v.Modified = s.Value == "true"
		}
	}
	return v
}

// versionString is the one-line version (`anvil-host --version`).
func versionString(bi *debug.BuildInfo) string {
	v := buildVersion(bi)
	commit := "unknown commit"
	if v.Commit != "" {
		commit = "commit " + shortCommit(v.Commit)
		if v.Modified {
			commit += "+modified"
		}
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
	if v.Commit != "" {
		commit = v.Commit
		if v.CommitTime != "" {
			commit += " (" + v.CommitTime + ")"
		}
		if v.Modified {
			commit += ", with local modifications"
		}
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
("(devel)" and "unknown" when the build does not say), the Go toolchain and
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
