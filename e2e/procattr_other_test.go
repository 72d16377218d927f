//go:build e2e && !linux

package e2e

import "syscall"

// procAttr: without Pdeathsig, child processes rely on t.Cleanup to be stopped.
func procAttr() *syscall.SysProcAttr { return nil }
