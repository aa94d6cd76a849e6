package backup

import (
	"context"
	"fmt"
	"time"

	"github.com/chartpilot/chartpilot/operator/backup/mover"
)

// Bounds of the wait between two attempts to delete a deleted Backup's
// archives.
const (
	archiveRetryMin = 5 * time.Second
	archiveRetryMax = time.Minute
)

// archiveRetryDelay is the wait before the next attempt to delete the
// archives, since the Backup's deletion: as long as it has waited so far,
// within [archiveRetryMin, archiveRetryMax]. The attempts then come at
// about 0, 5, 10, 20, 40, 80 s... after the deletion: a store away for a
// moment is retried soon, one away for long is not hammered, and the
// state lives in the deletion timestamp (an operator restart keeps it).
func archiveRetryDelay(since time.Duration) time.Duration {
	return min(max(since, archiveRetryMin), archiveRetryMax)
}

// s3Answers asks the store whether the bucket exists, within
// targetCheckTimeout: a store that does not answer is said so, naming it,
// before a deletion would wait on it longer.
func s3Answers(ctx context.Context, s mover.S3) error {
	c, err := s.Client()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, targetCheckTimeout)
	defer cancel()
	if _, err := c.BucketExists(ctx, s.Bucket); err != nil {
		return fmt.Errorf("the object store at %s does not answer: %w", s.Endpoint, err)
	}
	return nil
}
