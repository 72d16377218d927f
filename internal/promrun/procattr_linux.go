//go:build linux

package promrun

import "syscall"

// SysProcAttr returns the attributes of a child process that must not outlive its parent: the
// kernel kills it (SIGKILL) when the parent dies first, even when the parent's cleanup cannot
// run (a crash, a test binary's -timeout panic).
func SysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

// serverAttr is SysProcAttr in a process group of its own: a Ctrl-C on the terminal reaches the
// parent only, which stops the server in order.
func serverAttr() *syscall.SysProcAttr {
	a := SysProcAttr()
	a.Setpgid = true
	return a
}
