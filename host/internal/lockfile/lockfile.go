// Package lockfile reads and writes anvil.lock: for every plugin the config
// names by an oci:// reference, the manifest digest the reference resolved
// to and what that manifest says (module digest, size and media type, ABI,
// kinds, capabilities asked) and who signed it, so that runs are pinned to
// exact bytes and can run offline from the plugin cache.
//
// Invariants: the file is one JSON object decoded strictly — an unknown
// field, a key given twice, a second value, a malformed digest or a
// missing field is an error naming the file and the field; it lives beside the config file
// (Path); it is written atomically with sorted keys, so it diffs well
// under version control. The lock is a claim too: whoever loads from it
// cross-checks every field against the manifest it names, so an entry
// edited by hand is refused rather than trusted.
package lockfile

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// Name is the lockfile's name beside anvil.yaml; another config file
// NAME.yaml is locked by NAME.lock (Path).
const Name = "anvil.lock"

// Version is the format version written and accepted.
const Version = 1

// maxBytes bounds a lockfile read.
const maxBytes = 4 << 20

// Lock is a parsed anvil.lock.
type Lock struct {
	Version int               `json:"version"`
	Plugins map[string]*Entry `json:"plugins"`
}

// Entry pins one plugin.
type Entry struct {
	// Ref is the reference as configured (plugins.x.ref).
	Ref string `json:"ref"`
	// Digest, MediaType and Size are the manifest's.
	Digest    string `json:"digest"`
	MediaType string `json:"media_type"`
	Size      int64  `json:"size"`
	// Module is the module (or executable) layer.
	Module Blob `json:"module"`
	// Transport is "wasm" or "process".
	Transport string `json:"transport"`
	// ABI, Kinds and Capabilities are the manifest's descriptor summary.
	ABI          string   `json:"abi"`
	Kinds        []string `json:"kinds"`
	Capabilities []string `json:"capabilities"`
	// Signer is the trusted publisher that signed the manifest when the
	// lock was written ("team-a (ed25519:…)"), or "unsigned".
	Signer string `json:"signer"`
}

// Blob is a content descriptor.
type Blob struct {
	Digest    string `json:"digest"`
	MediaType string `json:"media_type"`
	Size      int64  `json:"size"`
}

// Path is where the lock of the config file configPath lives: beside it,
// its name with the extension replaced by .lock (anvil.yaml → anvil.lock),
// so two configs in one directory have two locks.
func Path(configPath string) string {
	base := filepath.Base(configPath)
	base = strings.TrimSuffix(base, filepath.Ext(base))
	if base == "" {
		base = "anvil"
	}
	return filepath.Join(filepath.Dir(configPath), base+".lock")
}

var digestRE = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)

// Read reads and checks the lockfile at path. A missing file wraps
// os.ErrNotExist.
func Read(path string) (*Lock, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return Parse(path, b)
}

// Parse decodes lockfile bytes; path is for messages.
func Parse(path string, b []byte) (*Lock, error) {
	if len(b) > maxBytes {
		return nil, fmt.Errorf("%s: larger than %d bytes; not a lockfile", path, maxBytes)
	}
	// go-json-experiment refuses a key given twice ("digest" edited in by
	// hand below the one lock wrote), which encoding/json took the last of,
	// as well as data after the object and invalid UTF-8.
	var l Lock
	if err := jsonv2.Unmarshal(b, &l, jsonv2.RejectUnknownMembers(true)); err != nil {
		return nil, fmt.Errorf("%s: %s (regenerate it: `anvil-host lock --update`)", path, decodeError(b, err))
	}
	if err := l.check(); err != nil {
		return nil, fmt.Errorf("%s: %w (regenerate it: `anvil-host lock --update`)", path, err)
	}
	return &l, nil
}

func (l *Lock) check() error {
	if l.Version != Version {
		return fmt.Errorf("version %d: want %d", l.Version, Version)
	}
	var errs []error
	for name, e := range l.Plugins {
		at := "plugins." + name
		if e == nil {
			errs = append(errs, fmt.Errorf("%s: empty entry", at))
			continue
		}
		if !strings.HasPrefix(e.Ref, "oci://") {
			errs = append(errs, fmt.Errorf("%s.ref %q: want oci://…", at, e.Ref))
		}
		for field, d := range map[string]string{"digest": e.Digest, "module.digest": e.Module.Digest} {
			if !digestRE.MatchString(d) {
				errs = append(errs, fmt.Errorf("%s.%s %q: want sha256:<64 lower-case hex digits>", at, field, d))
			}
		}
		if e.Size <= 0 || e.Module.Size <= 0 {
			errs = append(errs, fmt.Errorf("%s: size and module.size must be positive", at))
		}
		if e.MediaType == "" || e.Module.MediaType == "" {
			errs = append(errs, fmt.Errorf("%s: media_type and module.media_type are required", at))
		}
		if e.Transport != "wasm" && e.Transport != "process" {
			errs = append(errs, fmt.Errorf("%s.transport %q: want wasm or process", at, e.Transport))
		}
		if e.ABI == "" || e.Signer == "" || e.Kinds == nil || e.Capabilities == nil {
			errs = append(errs, fmt.Errorf("%s: abi, kinds, capabilities and signer are required", at))
		}
	}
	return errors.Join(errs...)
}

// Write writes l to path atomically.
func Write(path string, l *Lock) error {
	l.Version = Version
	b, err := json.MarshalIndent(l, "", "  ")
	if err != nil {
		return err
	}
	b = append(b, '\n')
	tmp, err := os.CreateTemp(filepath.Dir(path), ".anvil.lock-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	_, err = tmp.Write(b)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp.Name(), 0o644)
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// decodeError names the line and the member a decoding error is about.
func decodeError(b []byte, err error) string {
	var (
		se     *jsontext.SyntacticError
		me     *jsonv2.SemanticError
		at     jsontext.Pointer
		offset int64
		what   string
	)
	switch {
	case errors.As(err, &se) && se.Err == jsontext.ErrDuplicateName:
		at, offset, what = se.JSONPointer, se.ByteOffset, fmt.Sprintf("duplicate key %q", se.JSONPointer.LastToken())
	case errors.As(err, &se):
		at, offset, what = se.JSONPointer, se.ByteOffset, "not JSON: "+se.Err.Error()
	case errors.As(err, &me) && errors.Is(me.Err, jsonv2.ErrUnknownName):
		at, offset, what = me.JSONPointer, me.ByteOffset, fmt.Sprintf("unknown field %q", me.JSONPointer.LastToken())
	case errors.As(err, &me):
		offset, what = me.ByteOffset, strings.TrimPrefix(me.Error(), "json: ") // names the member itself
	default:
		return err.Error()
	}
	line := bytes.Count(b[:min(int(offset), len(b))], []byte("\n")) + 1
	if at == "" {
		return fmt.Sprintf("line %d: %s", line, what)
	}
	return fmt.Sprintf("line %d: %s at %s", line, what, at)
}
