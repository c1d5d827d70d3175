// Package process is the process transport: a plugin that is a native
// go-plugin binary run as a child process, spoken to over gRPC (package
// sdk/native is the wire), and isolated by the OS on Linux
// (sandbox_linux.go: namespaces, Landlock or a read-only remount,
// no_new_privs, no capabilities, an unprivileged uid).
//
// Invariants: the binary's sha256 is checked against the pinned digest
// before every start, restarts included, on the open file that is then
// executed; the process gets an empty environment and no stdin; its
// callbacks (judge, embed, log) reach the host only through the
// transport.Guard of the invocation whose random token they carry; a
// timeout kills the process and the next call starts a fresh one; what
// isolation the kernel granted is recorded in Info.Isolation, and with
// isolation: required a missing measure is a load error before the
// plugin's code runs.
package process
