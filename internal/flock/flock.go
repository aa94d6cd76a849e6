package flock

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"
)

// ErrLocked is TryLock's answer when another holder has the lock.
var ErrLocked = errors.New("locked by another process")

// poll is how often Lock retries while another holder has the lock.
const poll = 20 * time.Millisecond

// TryLock takes the exclusive lock of the file at path (created if
// missing) or fails at once with ErrLocked.
func TryLock(path string) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("opening lock %s: %w", path, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) || errors.Is(err, syscall.EINTR) {
			return nil, ErrLocked
		}
		return nil, fmt.Errorf("locking %s: %w", path, err)
	}
	return func() { f.Close() }, nil
}

// Lock takes the exclusive lock of the file at path, waiting while another
// holder (in this process or another) has it, until ctx is done.
func Lock(ctx context.Context, path string) (unlock func(), err error) {
	for {
		unlock, err := TryLock(path)
		if !errors.Is(err, ErrLocked) {
			return unlock, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(poll):
		}
	}
}
