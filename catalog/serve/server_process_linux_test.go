package serve

import "syscall"

// serverProcAttr makes a server process started by a test die with the
// test: a test binary that is killed (a timeout, a closed pipe) runs no
// cleanup, and its servers would go on holding ports and CPU.
func serverProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
