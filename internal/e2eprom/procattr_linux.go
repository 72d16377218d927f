//go:build linux

package e2eprom

import "syscall"

// procAttr makes the kernel kill a child process if the test process dies first (for example
// on a go test -timeout panic, when t.Cleanup does not run).
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
