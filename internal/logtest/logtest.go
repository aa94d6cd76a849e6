package logtest

import (
	"strings"
	"sync"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
)

// Lines are the lines a Logger wrote, safe for concurrent use.
type Lines struct {
	mu    sync.Mutex
	lines []string
}

// Logger writes to l at verbosity v and below.
func (l *Lines) Logger(v int) logr.Logger {
	return funcr.New(l.add, funcr.Options{Verbosity: v})
}

func (l *Lines) add(prefix, args string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, prefix+" "+args)
}

// Find returns the first line that holds s, or "".
func (l *Lines) Find(s string) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, line := range l.lines {
		if strings.Contains(line, s) {
			return line
		}
	}
	return ""
}

// String is every line, one per line.
func (l *Lines) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}
