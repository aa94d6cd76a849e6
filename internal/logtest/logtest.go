package logtest

import (
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
)

// Lines are the lines a Logger wrote, safe for concurrent use.
type Lines struct {
	mu    sync.Mutex
	lines []line
}

type line struct {
	at   time.Time
	text string
}

// Logger writes to l at verbosity v and below.
func (l *Lines) Logger(v int) logr.Logger {
	return funcr.New(l.Write, funcr.Options{Verbosity: v})
}

// Write adds a line, as funcr's output function: for a Logger that does
// more with its lines than keep them.
func (l *Lines) Write(prefix, args string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, line{at: time.Now(), text: prefix + " " + args})
}

// Find returns the first line that holds s, or "".
func (l *Lines) Find(s string) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, line := range l.lines {
		if strings.Contains(line.text, s) {
			return line.text
		}
	}
	return ""
}

// String is every line, one per line.
func (l *Lines) String() string {
	return l.Since(time.Time{})
}

// Since is every line written at t or later, one per line, each after its
// time since t when t is set: what a test that failed on a fault at t
// shows of how the code met it.
func (l *Lines) Since(t time.Time) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var b strings.Builder
	for _, line := range l.lines {
		switch {
		case line.at.Before(t):
			continue
		case !t.IsZero():
			fmt.Fprintf(&b, "+%-8s ", line.at.Sub(t).Round(time.Millisecond))
		}
		b.WriteString(line.text + "\n")
	}
	return strings.TrimSuffix(b.String(), "\n")
}
