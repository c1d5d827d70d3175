package wasm

import (
	"os"
	"testing"

	"github.com/agentanvil/anvil/host/internal/plugin/internal/plugintest"
)

func TestModuleExports(t *testing.T) {
	// A hand-assembled module: header, a type section to skip, and an
	// export section with a function, a memory and a marker.
	mod := []byte("\x00asm\x01\x00\x00\x00")
	mod = append(mod, 1, 4, 1, 0x60, 0, 0) // type section: one func type () -> ()
	exp := []byte{3}
	for _, e := range []struct {
		name string
		kind byte
	}{{"anvil_abi_v1", 0}, {"memory", 2}, {"anvil_abi_v7", 0}} {
		exp = append(exp, byte(len(e.name)))
		exp = append(exp, e.name...)
		exp = append(exp, e.kind, 0)
	}
	mod = append(mod, 7, byte(len(exp)))
	mod = append(mod, exp...)

	got, err := moduleExports(mod)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || !got["anvil_abi_v1"] || !got["memory"] || !got["anvil_abi_v7"] {
		t.Errorf("exports %v", got)
	}
	if majors := markerMajors(got); len(majors) != 2 || majors[0] != 7 || majors[1] != 1 {
		t.Errorf("majors %v, want [7 1]", majors)
	}

	for name, bad := range map[string][]byte{
		"empty":        nil,
		"bad magic":    []byte("\x00asn\x01\x00\x00\x00"),
		"component":    []byte("\x00asm\x0d\x00\x01\x00"),
		"truncated":    mod[:len(mod)-3],
		"huge size":    append([]byte("\x00asm\x01\x00\x00\x00"), 7, 0xff, 0xff, 0xff, 0xff, 0x0f),
		"leb too long": append([]byte("\x00asm\x01\x00\x00\x00"), 7, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01),
	} {
		if _, err := moduleExports(bad); err == nil {
			t.Errorf("%s: no error", name)
		}
	}

	// A real guest: the exports sdk/guest promises.
	b, err := os.ReadFile(plugintest.GuestPath("textcheck"))
	if err != nil {
		t.Fatal(err)
	}
	got, err = moduleExports(b)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range []string{"anvil_abi_v1", "anvil_describe", "anvil_prepare", "anvil_measure", "anvil_node", "_initialize"} {
		if !got[e] {
			t.Errorf("textcheck lacks export %s", e)
		}
	}
}

func FuzzModuleExports(f *testing.F) {
	f.Add([]byte("\x00asm\x01\x00\x00\x00"))
	f.Add([]byte("\x00asm\x01\x00\x00\x00\x07\x05\x01\x01a\x00\x00"))
	f.Add([]byte("\x00asm\x01\x00\x00\x00\x01\x04\x01\x60\x00\x00\x07\x10\x01\x0canvil_abi_v1\x00\x00"))
	f.Fuzz(func(t *testing.T, b []byte) {
		exports, err := moduleExports(b)
		if err == nil && exports == nil {
			t.Fatal("nil exports without error")
		}
		_ = markerMajors(exports)
	})
}
