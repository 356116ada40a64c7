package configfile

import (
	"context"
	"crypto/sha256"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/mcpfleet/mcpfleet/client"
)

// DefaultWatchInterval is how often a Watcher looks at its file.
const DefaultWatchInterval = 500 * time.Millisecond

// DefaultApplyTimeout bounds one Apply of a changed config (which waits
// for the servers marked required).
const DefaultApplyTimeout = 30 * time.Second

// WatchOptions configures a Watcher.
type WatchOptions struct {
	// Interval is how often the file is looked at. Defaults to
	// DefaultWatchInterval.
	Interval time.Duration
	// ApplyTimeout bounds one Apply. Defaults to DefaultApplyTimeout.
	ApplyTimeout time.Duration
	// ConfigOptions are passed to client.LoadConfig at every read.
	ConfigOptions []client.ConfigOption
	// Load, if set, reads the file at every change instead of
	// Load(path, ConfigOptions...): a program that adds to what it reads
	// (a variable for every child) reads it the same way each time.
	Load func(path string) (*client.Config, error)
	// Logger hears of every change: the Apply summary, or why a changed
	// file was not applied. Defaults to discarding.
	Logger *slog.Logger
	// Applied, if set, is called after each change was read: with the
	// Apply's result and error, or with the read's error (and a zero
	// result) when the file could not be used.
	Applied func(client.ApplyResult, error)
}

// Watcher re-applies a config file to a Manager when the file
// changes. It looks at the file's modification time and size every
// Interval, and reads it once either changed and then stayed the same for
// an interval (a write in progress is not read); a read whose content
// hashes as the last one's does nothing. A change that does not parse (the error
// names the line and column, or the server and the field) leaves the
// fleet as it runs, and is logged; so is the summary of every Apply
// (client.ApplyResult.String). It needs no file notification API, so it
// works the same on every OS and on network file systems.
type Watcher struct {
	path string
	o    WatchOptions
	log  *slog.Logger

	mu   sync.Mutex // guards last and seen, and makes reads and Applies one at a time
	last fileState
	// seen is the time and size of a change seen at the last look, not yet
	// read: a file is read once it stayed the same for one interval, so
	// that a write in progress is not read half done.
	seen fileState
}

// fileState is what a Watcher remembers of its file.
type fileState struct {
	mod  time.Time
	size int64
	hash [sha256.Size]byte
}

// NewWatcher reads and parses the config file at path (refusing one
// another user could have written, as Load does, then and at every
// change), and returns a watcher that will look for changes made after
// this read, with the config it read (for the first Apply, which is the
// caller's).
func NewWatcher(path string, o WatchOptions) (*Watcher, *client.Config, error) {
	if o.Interval <= 0 {
		o.Interval = DefaultWatchInterval
	}
	if o.ApplyTimeout <= 0 {
		o.ApplyTimeout = DefaultApplyTimeout
	}
	w := &Watcher{path: path, o: o, log: o.Logger}
	if w.log == nil {
		w.log = slog.New(slog.DiscardHandler)
	}
	st, err := w.state() // before the read: a change after it is seen
	if err != nil {
		return nil, nil, err
	}
	cfg, err := w.load()
	if err != nil {
		return nil, nil, err
	}
	w.last = st
	return w, cfg, nil
}

// state reads the file's time, size and content hash.
func (w *Watcher) state() (fileState, error) {
	fi, err := os.Stat(w.path)
	if err != nil {
		return fileState{}, err
	}
	data, err := os.ReadFile(w.path)
	if err != nil {
		return fileState{}, err
	}
	return fileState{mod: fi.ModTime(), size: fi.Size(), hash: sha256.Sum256(data)}, nil
}

// load reads the file as the options say.
func (w *Watcher) load() (*client.Config, error) {
	if w.o.Load != nil {
		return w.o.Load(w.path)
	}
	return Load(w.path, w.o.ConfigOptions...)
}

// Run watches the file and applies each change to m until ctx ends.
func (w *Watcher) Run(ctx context.Context, m *client.Manager) {
	t := time.NewTicker(w.o.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			w.check(ctx, m)
		}
	}
}

// Reload reads the file now and applies it to m if it changed since it
// was last read, without waiting for the next look: for a program that
// has just written the file. It returns the Apply's result (the zero
// result if the file had not changed) and error, or the read's error.
func (w *Watcher) Reload(ctx context.Context, m *client.Manager) (client.ApplyResult, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	st, err := w.state()
	if err != nil {
		return client.ApplyResult{}, err
	}
	w.seen = fileState{}
	if st.hash == w.last.hash {
		w.last = st
		return client.ApplyResult{}, nil
	}
	w.last = st
	return w.apply(ctx, m)
}

// check applies the file if it changed since it was last read.
func (w *Watcher) check(ctx context.Context, m *client.Manager) {
	w.mu.Lock()
	defer w.mu.Unlock()
	fi, err := os.Stat(w.path)
	if err != nil {
		if !w.last.mod.IsZero() {
			w.log.Warn("mcpfleet: config: cannot read the file; keeping the running fleet", "path", w.path, "err", err)
			w.last = fileState{}
			w.report(client.ApplyResult{}, err)
		}
		return
	}
	if fi.ModTime().Equal(w.last.mod) && fi.Size() == w.last.size {
		return
	}
	if !fi.ModTime().Equal(w.seen.mod) || fi.Size() != w.seen.size {
		w.seen = fileState{mod: fi.ModTime(), size: fi.Size()}
		return // look again in an interval
	}
	st, err := w.state()
	if err != nil {
		return // it is being replaced; the next look sees it
	}
	if st.hash == w.last.hash {
		w.last = st
		return
	}
	w.last = st
	_, _ = w.apply(ctx, m)
}

// apply reads the file and applies it to m, logging and reporting what
// came of it. The caller holds mu.
func (w *Watcher) apply(ctx context.Context, m *client.Manager) (client.ApplyResult, error) {
	cfg, err := w.load()
	if err != nil {
		w.log.Error("mcpfleet: config: the changed file was not applied; keeping the running fleet", "err", err)
		w.report(client.ApplyResult{}, err)
		return client.ApplyResult{}, err
	}
	actx, cancel := context.WithTimeout(ctx, w.o.ApplyTimeout)
	res, err := m.Apply(actx, cfg)
	cancel()
	if err != nil {
		w.log.Error("mcpfleet: config: applied with errors", "path", w.path, "summary", res.String(), "err", err)
	} else {
		w.log.Info("mcpfleet: config: applied", "path", w.path, "summary", res.String())
	}
	w.report(res, err)
	return res, err
}

func (w *Watcher) report(res client.ApplyResult, err error) {
	if w.o.Applied != nil {
		w.o.Applied(res, err)
	}
}
