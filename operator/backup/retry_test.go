package backup

import (
	"testing"
	"time"
)

func TestArchiveRetryDelay(t *testing.T) {
	tests := []struct {
		since, want time.Duration
	}{
		{0, archiveRetryMin},
		{time.Second, archiveRetryMin},
		{10 * time.Second, 10 * time.Second},
		{40 * time.Second, 40 * time.Second},
		{3 * time.Minute, archiveRetryMax},
	}
	for _, tt := range tests {
		if got := archiveRetryDelay(tt.since); got != tt.want {
			t.Errorf("archiveRetryDelay(%s) = %s, want %s", tt.since, got, tt.want)
		}
	}
}
