//go:build e2e && linux

package e2e

import "syscall"

// procAttr makes the kernel kill a child process if the test process dies first (for example
// on a go test -timeout panic, when t.Cleanup does not run).
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
