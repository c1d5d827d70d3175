package main

// Escape attempts of the hostile native guest: what a process plugin
// would try to get out of its sandbox. Each reports what it tried and
// what happened ("ok" or the error); the host's tests decide what must
// have failed.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// grandchildArg marks the copy of this binary the "spawn" behaviour
// leaves behind: it sleeps until killed.
const grandchildArg = "grandchild"

// escape runs one escape attempt. n is the host's pid as the host sees
// it, or a TCP port on 127.0.0.1; path a file system path the test owns;
// key a marker or name. Every attempt is harmless to the machine when it
// succeeds (the tests run it unsandboxed to prove it works).
func escape(ctx context.Context, behaviour string, n int, path, key string) map[string]any {
	switch behaviour {
	case "snoop":
		return snoop(n)
	case "net":
		return network(ctx, n, path, key)
	case "write":
		return write(path, key)
	case "privs":
		return privs(n, path)
	case "spawn":
		return spawn(key)
	}
	return nil
}

func outcome(err error) string {
	if err == nil {
		return "ok"
	}
	return err.Error()
}

// snoop looks for the judge key where a plugin that knows Linux would:
// the environ of its parent and of every process it can see, and the
// parent's memory (t.Setenv puts the key in the host's heap, not in its
// initial environ).
func snoop(hostPID int) map[string]any {
	reads := map[string]string{}
	var found []string
	look := func(b []byte) {
		for rest := b; ; {
			i := bytes.Index(rest, []byte("OPENAI_API_KEY="))
			if i < 0 {
				return
			}
			v := rest[i+len("OPENAI_API_KEY="):]
			if j := bytes.IndexAny(v, "\x00\n\""); j >= 0 {
				v = v[:j]
			}
			if len(v) > 64 {
				v = v[:64]
			}
			if len(v) > 0 {
				found = append(found, string(v))
			}
			rest = rest[i+1:]
		}
	}
	read := func(p string) {
		b, err := os.ReadFile(p)
		reads[p] = outcome(err)
		look(b)
	}
	var pids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		if pid, err := strconv.Atoi(e.Name()); err == nil {
			pids = append(pids, pid)
		}
	}
	targets := map[int]bool{hostPID: true, os.Getppid(): true}
	for _, pid := range pids {
		targets[pid] = true
	}
	delete(targets, os.Getpid())
	delete(targets, 0)
	for pid := range targets {
		read(fmt.Sprintf("/proc/%d/environ", pid))
		read(fmt.Sprintf("/proc/%d/cmdline", pid))
	}
	read(fmt.Sprintf("/proc/self/../%d/environ", hostPID))
	reads[fmt.Sprintf("/proc/%d/mem", hostPID)] = outcome(scanMem(hostPID, look))
	if ppid := os.Getppid(); ppid != hostPID && ppid > 1 {
		reads[fmt.Sprintf("/proc/%d/mem", ppid)] = outcome(scanMem(ppid, look))
	}
	return map[string]any{"ppid": os.Getppid(), "pid": os.Getpid(), "pids": pids, "reads": reads, "found": found}
}

// scanMem reads the writable mappings of pid (heap, stacks, data) and
// hands them to look, up to 1 GiB.
func scanMem(pid int, look func([]byte)) error {
	maps, err := os.ReadFile(fmt.Sprintf("/proc/%d/maps", pid))
	if err != nil {
		return err
	}
	mem, err := os.Open(fmt.Sprintf("/proc/%d/mem", pid))
	if err != nil {
		return err
	}
	defer mem.Close()
	buf := make([]byte, 1<<20)
	budget := int64(1 << 30)
	var readErr error
	sc := bufio.NewScanner(bytes.NewReader(maps))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 2 || !strings.HasPrefix(f[1], "rw") {
			continue
		}
		lo, hi, ok := strings.Cut(f[0], "-")
		if !ok {
			continue
		}
		start, _ := strconv.ParseUint(lo, 16, 64)
		end, _ := strconv.ParseUint(hi, 16, 64)
		for off := start; off < end && budget > 0; off += uint64(len(buf)) {
			n := min(uint64(len(buf)), end-off)
			// Overlap chunks a little so a key across a boundary is seen.
			at := off
			if at > start+64 {
				at -= 64
			}
			k, err := mem.ReadAt(buf[:n], int64(at))
			if err != nil && k == 0 {
				readErr = err
				break
			}
			budget -= int64(k)
			look(buf[:k])
		}
	}
	return readErr
}

// network tries every way out: TCP to the host's loopback, DNS, the
// internet, a pathname Unix socket of the host and an abstract one.
func network(ctx context.Context, port int, unixPath, abstract string) map[string]any {
	tries := map[string]string{}
	dial := func(name, network, addr string) {
		c, err := net.DialTimeout(network, addr, 2*time.Second)
		if err == nil {
			c.Write([]byte("escaped\n"))
			c.Close()
		}
		tries[name] = outcome(err)
	}
	dial("tcp loopback", "tcp", fmt.Sprintf("127.0.0.1:%d", port))
	dial("tcp internet", "tcp", "1.1.1.1:443")
	dial("udp internet", "udp", "1.1.1.1:53")
	if unixPath != "" {
		dial("unix path", "unix", unixPath)
	}
	if abstract != "" {
		dial("unix abstract", "unix", "@"+abstract)
	}
	lctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	_, err := net.DefaultResolver.LookupHost(lctx, "example.com")
	tries["dns"] = outcome(err)
	var up []string
	ifs, _ := net.Interfaces()
	for _, i := range ifs {
		if i.Flags&net.FlagUp != 0 {
			up = append(up, i.Name)
		}
	}
	return map[string]any{"tries": tries, "interfaces_up": up}
}

// write tries to change the file system: in dir (a directory the test
// made writable for everyone, holding "victim"), next to its own binary
// and in /tmp.
func write(dir, key string) map[string]any {
	victim := filepath.Join(dir, "victim")
	tries := map[string]string{
		"create":        outcome(os.WriteFile(filepath.Join(dir, "created"), []byte("pwned"), 0o644)),
		"append victim": outcome(appendTo(victim)),
		"truncate":      outcome(os.Truncate(victim, 0)),
		"chmod":         outcome(os.Chmod(victim, 0o777)),
		"mkdir":         outcome(os.Mkdir(filepath.Join(dir, "newdir"), 0o755)),
		"symlink":       outcome(os.Symlink("/etc/passwd", filepath.Join(dir, "link"))),
		"next to self":  outcome(os.WriteFile(filepath.Join(filepath.Dir(os.Args[0]), "pwned-"+key), []byte("pwned"), 0o644)),
		"tmp":           outcome(os.WriteFile(filepath.Join(os.TempDir(), "anvil-pwned-"+key), []byte("pwned"), 0o644)),
		// The one writable directory: it must not be fillable.
		"fill socket dir": outcome(fill(filepath.Join(os.Getenv("PLUGIN_UNIX_SOCKET_DIR"), "fill-"+key))),
	}
	// Last: it takes the victim away from the others.
	tries["rename"] = outcome(os.Rename(victim, filepath.Join(dir, "renamed")))
	tries["remove"] = outcome(os.Remove(victim))
	return map[string]any{"tries": tries}
}

// fill writes 1 MiB to a new file at path, and removes it.
func fill(path string) error {
	defer os.Remove(path)
	return os.WriteFile(path, make([]byte, 1<<20), 0o600)
}

func appendTo(path string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteString("pwned")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// privs reports the plugin's credentials and tries what privilege would
// allow: mounting (on mnt, an empty directory the test owns), signalling
// the host, becoming root.
func privs(hostPID int, mnt string) map[string]any {
	status := map[string]string{}
	if b, err := os.ReadFile("/proc/self/status"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			k, v, ok := strings.Cut(l, ":")
			switch k {
			case "Uid", "Gid", "Groups", "CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb", "NoNewPrivs":
				if ok {
					status[k] = strings.Join(strings.Fields(v), " ")
				}
			}
		}
	}
	tries := map[string]string{
		"mount tmpfs": outcome(syscall.Mount("tmpfs", mnt, "tmpfs", 0, "size=1m")),
		"bind mount":  outcome(syscall.Mount("/", mnt, "", syscall.MS_BIND, "")),
		"signal host": outcome(syscall.Kill(hostPID, 0)),
		"setuid 0":    outcome(syscall.Setuid(0)),
		"chroot":      outcome(syscall.Chroot("/")),
	}
	return map[string]any{"status": status, "tries": tries}
}

// spawn leaves a copy of itself behind in a session of its own (out of
// the plugin's process group), marked by key in its argv, and returns
// once it runs.
func spawn(key string) map[string]any {
	cmd := exec.Command("/proc/self/exe", grandchildArg, key)
	cmd.Args[0] = os.Args[0] // the copy is the same personality
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	err := cmd.Start()
	pid := 0
	if err == nil {
		pid = cmd.Process.Pid
		cmd.Process.Release()
	}
	return map[string]any{"spawn": outcome(err), "pid": pid}
}

// advertise is a plugin whose go-plugin handshake names an address of the
// test's choosing for the host to dial, read from its file name:
// advertise-tcp-<port> names 127.0.0.1:<port>; advertise-unix-<hex path>
// names a symlink in its socket directory to that path.
func advertise(name string) {
	kind, arg, _ := strings.Cut(strings.TrimPrefix(name, "advertise-"), "-")
	addr := "tcp|127.0.0.1:" + arg
	if kind == "unix" {
		target, err := hex.DecodeString(arg)
		if err != nil {
			fmt.Fprintln(os.Stderr, "advertise:", err)
			os.Exit(2)
		}
		link := filepath.Join(os.Getenv("PLUGIN_UNIX_SOCKET_DIR"), "evil")
		if err := os.Symlink(string(target), link); err != nil {
			fmt.Fprintln(os.Stderr, "advertise:", err)
			os.Exit(2)
		}
		addr = "unix|" + link
	}
	fmt.Printf("1|1|%s|grpc|\n", addr)
	select {} // until killed
}
