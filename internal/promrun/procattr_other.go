//go:build !linux

package promrun

import "syscall"

// SysProcAttr returns the attributes of a child process. Without Pdeathsig, a child relies on
// its parent's cleanup to be stopped.
func SysProcAttr() *syscall.SysProcAttr { return nil }

// serverAttr: the server shares the parent's process group (a terminal's Ctrl-C reaches both).
func serverAttr() *syscall.SysProcAttr { return nil }
