package clustertest

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// ProcessesOf lists the live processes whose command line names dir, as
// every component of a cluster in dir does (its data, certificates or
// kubeconfig): what a stopped or failed start must not leave.
func ProcessesOf(dir string) []int {
	return Processes(func(proc string) bool {
		cmdline, err := os.ReadFile(filepath.Join(proc, "cmdline"))
		return err == nil && strings.Contains(string(cmdline), dir)
	})
}

// Processes lists the live (not zombie) processes whose /proc directory
// matches.
func Processes(match func(procDir string) bool) []int {
	var pids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		proc := filepath.Join("/proc", e.Name())
		if !match(proc) {
			continue
		}
		if stat, _ := os.ReadFile(filepath.Join(proc, "stat")); strings.Contains(string(stat), ") Z") {
			continue
		}
		pids = append(pids, pid)
	}
	return pids
}
