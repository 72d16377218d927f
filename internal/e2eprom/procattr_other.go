//go:build !linux

package e2eprom

import "syscall"

// procAttr: without Pdeathsig, child processes rely on the test's cleanup to be stopped.
func procAttr() *syscall.SysProcAttr { return nil }
