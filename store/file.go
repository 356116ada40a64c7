package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/mcpfleet/mcpfleet/internal/filetrust"
)

// FileTaskStore is a TaskStore in a directory: one JSON file per record,
// so that saving one task never rewrites the others. The directory is
// made with mode 0700 and each file with 0600, since a record may hold a
// tool's result; every save replaces its file atomically (a temporary file
// in the same directory, synced, renamed over the old one, the directory
// synced), so a crash leaves the old record or the new one, never a torn
// one.
//
// What it reads it checks first, as the stdio state file and the OAuth
// token file are checked: on Unix a directory or record owned by another
// user, or writable by others, is not trusted (ErrUntrusted), and neither
// is a record that is not a plain file, that does not parse, or whose
// content does not match its file's name (ErrCorrupt). Such a record is
// reported by LoadTasks and otherwise left alone. On Windows the ACLs of
// the directory the host chose are trusted.
//
// Several FileTaskStores of one process on one directory are safe; two
// Managers must not use it at once (see TaskStore).
type FileTaskStore struct {
	dir string
}

// NewFileTaskStore returns a FileTaskStore in dir. Nothing is created
// until the first save: a Manager that never starts a task leaves no trace.
func NewFileTaskStore(dir string) *FileTaskStore { return &FileTaskStore{dir: dir} }

// Dir returns the store's directory.
func (s *FileTaskStore) Dir() string { return s.dir }

// maxRecordBytes bounds the file of one record: a result larger than this
// is not one a tool sends.
const maxRecordBytes = 64 << 20

func (s *FileTaskStore) err(op, key string, err error) error {
	return &Error{Store: "task store " + s.dir, Op: op, Key: key, Err: err}
}

// fileName is the name of the record of server's task id: a digest, so
// that any server name and task id make a safe name of fixed length.
func fileName(server, taskID string) string {
	h := sha256.Sum256([]byte(server + "\x00" + taskID))
	return hex.EncodeToString(h[:20]) + ".json"
}

// SaveTask writes r's file, replacing it atomically.
func (s *FileTaskStore) SaveTask(ctx context.Context, r TaskRecord) error {
	key := r.Key()
	if err := ctx.Err(); err != nil {
		return s.err("save task", key, err)
	}
	if err := r.Validate(); err != nil {
		return s.err("save task", key, err)
	}
	data, err := json.Marshal(r)
	if err != nil {
		return s.err("save task", key, err)
	}
	if err := s.ensureDir(); err != nil {
		return s.err("save task", key, err)
	}
	if err := writeAtomic(s.dir, fileName(r.Server, r.TaskID), data); err != nil {
		return s.err("save task", key, err)
	}
	return nil
}

// DeleteTask removes the record's file.
func (s *FileTaskStore) DeleteTask(ctx context.Context, server, taskID string) error {
	key := server + "/" + taskID
	if err := ctx.Err(); err != nil {
		return s.err("delete task", key, err)
	}
	err := os.Remove(filepath.Join(s.dir, fileName(server, taskID)))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return s.err("delete task", key, err)
	}
	return nil
}

// LoadTasks reads every record file of the directory. A directory that
// does not exist holds no records.
func (s *FileTaskStore) LoadTasks(ctx context.Context) ([]TaskRecord, error) {
	if err := ctx.Err(); err != nil {
		return nil, s.err("load tasks", "", err)
	}
	fi, err := os.Stat(s.dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, s.err("load tasks", "", err)
	}
	if !fi.IsDir() {
		return nil, s.err("load tasks", "", errors.New("not a directory"))
	}
	if why := filetrust.Untrusted(fi); why != "" {
		return nil, s.err("load tasks", "", fmt.Errorf("%w: the directory is %s", ErrUntrusted, why))
	}
	entries, err := os.ReadDir(s.dir)
	if err != nil {
		return nil, s.err("load tasks", "", err)
	}
	var (
		out  []TaskRecord
		errs []error
	)
	for _, e := range entries {
		name := e.Name()
		// Temporary files of a save a crash interrupted start with a dot.
		if strings.HasPrefix(name, ".") || !strings.HasSuffix(name, ".json") {
			continue
		}
		if err := ctx.Err(); err != nil {
			return out, s.err("load tasks", "", errors.Join(append(errs, err)...))
		}
		r, err := s.read(name)
		if err != nil {
			errs = append(errs, s.err("load task", name, err))
			continue
		}
		out = append(out, r)
	}
	return out, errors.Join(errs...)
}

// read reads and checks the record in the file name.
func (s *FileTaskStore) read(name string) (TaskRecord, error) {
	var r TaskRecord
	path := filepath.Join(s.dir, name)
	fi, err := os.Lstat(path)
	if err != nil {
		return r, err
	}
	if !fi.Mode().IsRegular() {
		return r, fmt.Errorf("%w: not a plain file (%s)", ErrCorrupt, fi.Mode().Type())
	}
	if why := filetrust.Untrusted(fi); why != "" {
		return r, fmt.Errorf("%w: the file is %s", ErrUntrusted, why)
	}
	f, err := os.Open(path)
	if err != nil {
		return r, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxRecordBytes+1))
	if err != nil {
		return r, err
	}
	if len(data) > maxRecordBytes {
		return r, fmt.Errorf("%w: larger than %d bytes", ErrCorrupt, maxRecordBytes)
	}
	if r, err = UnmarshalTask(data, "", ""); err != nil {
		return TaskRecord{}, err
	}
	if fileName(r.Server, r.TaskID) != name {
		return TaskRecord{}, fmt.Errorf("%w: the record is of another task than its file's name says", ErrCorrupt)
	}
	return r, nil
}

// ensureDir makes the directory if it does not exist, and refuses one that
// others can write into.
func (s *FileTaskStore) ensureDir() error {
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return err
	}
	fi, err := os.Stat(s.dir)
	if err != nil {
		return err
	}
	if why := filetrust.Untrusted(fi); why != "" {
		return fmt.Errorf("%w: the directory is %s", ErrUntrusted, why)
	}
	return nil
}

// writeAtomic replaces dir/name with data: a temporary file of mode 0600
// in dir, synced, renamed over the old file, and dir synced.
func writeAtomic(dir, name string, data []byte) (err error) {
	f, err := os.CreateTemp(dir, "."+name+".*.tmp")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			_ = os.Remove(tmp)
		}
	}()
	// CreateTemp makes the file 0600 already; Chmod keeps it so under any
	// umask and on systems where it does not.
	if err := f.Chmod(0o600); err != nil && !errors.Is(err, errors.ErrUnsupported) {
		f.Close()
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
		return err
	}
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync() // not supported everywhere (Windows); the rename stands
		d.Close()
	}
	return nil
}
