//go:build !linux

package serve

import "syscall"

// serverProcAttr: only Linux can tie a child's life to its parent's.
func serverProcAttr() *syscall.SysProcAttr { return nil }
