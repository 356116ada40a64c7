package store

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
)

// lockName is the file in a FileTaskStore's directory that its lock is
// taken on. It holds the process id of the holder, for the error of the
// next one that tries.
const lockName = ".lock"

// Lock takes the store's lock: an exclusive lock of the operating system
// on a file in its directory (flock on Unix, LockFileEx on Windows), held
// until release is called or the process ends, whatever way it ends. A
// Manager takes it on its default task store, so that two Managers (two
// processes of a host with the same client name, or two Managers in one
// process) never share one silently: the second gets an error that wraps
// ErrLocked and names the store and the holder's process id. Taking it
// makes the directory if it does not exist.
//
// On systems with no file locks the lock is always granted.
func (s *FileTaskStore) Lock() (release func() error, err error) {
	if err := s.ensureDir(); err != nil {
		return nil, s.err("lock", "", err)
	}
	path := filepath.Join(s.dir, lockName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, s.err("lock", "", err)
	}
	locked, err := lockFile(f)
	if err != nil {
		f.Close()
		return nil, s.err("lock", "", err)
	}
	if !locked {
		holder, _ := os.ReadFile(path)
		f.Close()
		why := ErrLocked
		if pid := bytes.TrimSpace(holder); len(pid) > 0 {
			return nil, s.err("lock", "", fmt.Errorf("%w (process %s)", why, pid))
		}
		return nil, s.err("lock", "", why)
	}
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	released := false
	return func() error {
		if released {
			return nil
		}
		released = true
		// The file stays: removing it would race the next holder's open.
		_ = unlockFile(f)
		if err := f.Close(); err != nil {
			return s.err("unlock", "", err)
		}
		return nil
	}, nil
}
