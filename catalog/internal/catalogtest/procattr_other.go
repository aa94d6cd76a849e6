//go:build !linux

package catalogtest

import "syscall"

// ServerProcAttr: only Linux can tie a child's life to its parent's.
func ServerProcAttr() *syscall.SysProcAttr { return nil }
