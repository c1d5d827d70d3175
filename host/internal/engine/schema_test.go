package engine

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// TestCheckParamsLoadsNothing: a kind's config schema is the plugin's, so
// a $ref in it must not make the host read a file — a schema beside the
// config, /etc/passwd, a device that never ends — or fetch a URL.
func TestCheckParamsLoadsNothing(t *testing.T) {
	dir := t.TempDir()
	// A schema the host could read: had it, params would fail as "want string".
	evil := filepath.Join(dir, "evil.json")
	if err := os.WriteFile(evil, []byte(`{"type":"string"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	dialled := make(chan struct{}, 1)
	go func() {
		if c, err := ln.Accept(); err == nil {
			dialled <- struct{}{}
			c.Close()
		}
	}()

	var params yaml.Node
	if err := yaml.Unmarshal([]byte("x: 1\n"), &params); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, schema, ref string }{
		{"file beside", `{"$ref":"file://` + evil + `"}`, "file://" + evil},
		{"relative", `{"$ref":"evil.json"}`, "evil.json"},
		{"relative to an $id", `{"$id":"file://` + dir + `/","$ref":"evil.json"}`, "file://" + evil},
		{"passwd", `{"properties":{"x":{"$ref":"file:///etc/passwd"}}}`, "file:///etc/passwd"},
		{"stdin", `{"properties":{"x":{"$ref":"file:///dev/stdin"}}}`, "file:///dev/stdin"},
		{"url", `{"$ref":"http://` + ln.Addr().String() + `/s.json"}`, "http://" + ln.Addr().String() + "/s.json"},
		{"meta-schema", `{"$schema":"http://` + ln.Addr().String() + `/meta","type":"object"}`, ln.Addr().String()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := checkParams("anvil.yaml", params.Content[0], []byte(`{"x":1}`), []byte(tc.schema), "metric m")
			if err == nil || !strings.Contains(err.Error(), "outside the schema") || !strings.Contains(err.Error(), tc.ref) {
				t.Fatalf("want the reference to %s refused, got %v", tc.ref, err)
			}
		})
	}
	select {
	case <-dialled:
		t.Error("the host connected to a URL from a plugin's schema")
	default:
	}
}
