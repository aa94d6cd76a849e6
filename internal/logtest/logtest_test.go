package logtest

import (
	"strings"
	"testing"
	"time"
)

func TestLines(t *testing.T) {
	var l Lines
	log := l.Logger(1)
	log.Info("before")
	time.Sleep(2 * time.Millisecond)
	mark := time.Now()
	log.V(1).Info("after", "n", 1)
	log.V(2).Info("too verbose")

	if got := l.Find(`"n"=1`); !strings.Contains(got, `"msg"="after"`) {
		t.Errorf("Find = %q, want the line of after", got)
	}
	if got := l.Find("too verbose"); got != "" {
		t.Errorf("a line above the verbosity was kept: %q", got)
	}
	if got := strings.Count(l.String(), "\n"); got != 1 {
		t.Errorf("String has %d newlines, want 1 (two lines):\n%s", got, l.String())
	}
	since := l.Since(mark)
	if strings.Contains(since, "before") || !strings.Contains(since, "after") || !strings.HasPrefix(since, "+") {
		t.Errorf("Since = %q, want only the line of after, after its offset", since)
	}
}
