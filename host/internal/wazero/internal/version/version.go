package version

// Default is the default version value used when none was found.
const Default = "dev"

// version holds the current version from the go.mod of downstream users or set by ldflag for wazero CLI.
var version string

// GetWazeroVersion returns the current version of wazero either in the go.mod or set by ldflag for wazero CLI.
//
// If this is not CLI, this assumes that downstream users of wazero imports wazero as "github.com/agentanvil/anvil/host/internal/wazero".
// To be precise, the returned string matches the require statement there.
// For example, if the go.mod has "require github.com/tetratelabs/wazero 0.1.2-12314124-abcd",
// then this returns "0.1.2-12314124-abcd".
//
// Note: this is tested in ./testdata/main_test.go with a separate go.mod to pretend as the wazero user.
func GetWazeroVersion() (ret string) {
	if len(version) != 0 {
		return version
	}
	// Anvil carries a patched copy of wazero under its own import path
	// (host/internal/wazero, see its PATCHES.md): the build info would name
	// Anvil's version, or "(devel)" for every development build, and two
	// copies whose patches compile different code would share one
	// compilation cache. The version names the upstream release and the
	// patch level instead; bump the patch level whenever a patch changes
	// what the compiler emits or the layout compiled code relies on.
	return anvilVersion
}

// anvilVersion is upstream's tag and the level of Anvil's patches.
const anvilVersion = "v1.12.0-anvil.1"
