package main

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/filetrust"
	"github.com/mcpfleet/mcpfleet/internal/netguard"
	"github.com/mcpfleet/mcpfleet/transport/stdio"
)

// envStateDir overrides where mcpfleet keeps its state (tests set it).
const envStateDir = "MCPFLEET_STATE_DIR"

// stateDir is the directory of mcpfleet's state: the admin file of each
// running serve, OAuth tokens, the catalog cache and the children's state
// file, one set per config file. $MCPFLEET_STATE_DIR, else the user's
// state directory: $XDG_STATE_HOME/mcpfleet or ~/.local/state/mcpfleet,
// ~/Library/Application Support/mcpfleet on macOS, %LocalAppData%\mcpfleet
// on Windows.
func stateDir() (string, error) {
	if d := os.Getenv(envStateDir); d != "" {
		return d, nil
	}
	if d := os.Getenv("XDG_STATE_HOME"); d != "" && runtime.GOOS != "windows" {
		return filepath.Join(d, "mcpfleet"), nil
	}
	switch runtime.GOOS {
	case "windows":
		d, err := os.UserCacheDir() // %LocalAppData%
		return filepath.Join(d, "mcpfleet"), err
	case "darwin":
		d, err := os.UserConfigDir() // ~/Library/Application Support
		return filepath.Join(d, "mcpfleet"), err
	}
	home, err := os.UserHomeDir()
	return filepath.Join(home, ".local", "state", "mcpfleet"), err
}

// statePaths are the files of one config's state.
type statePaths struct {
	dir      string
	id       string // the config's: a hash of its absolute path
	tokens   string // OAuth tokens (oauth.NewFileStore, mode 0600)
	catalogs string // the catalog cache (client.WithCatalogCache)
	// serveToken is the bearer token serve --http asks of its clients
	// unless told otherwise: one for the user, kept across restarts.
	serveToken string
}

// admin returns the admin file of the serve of pid: where its admin
// endpoint listens and its token (mode 0600). Each serve of a config has
// its own, so that one ending removes only its own.
func (p statePaths) admin(pid int) string {
	return filepath.Join(p.dir, fmt.Sprintf("admin-%s.%d.json", p.id, pid))
}

// adminPattern matches the admin files of every serve of the config.
func (p statePaths) adminPattern() string { return filepath.Join(p.dir, "admin-"+p.id+".*.json") }

// children returns the state file of the stdio children of the serve in
// slot n (stdio.OpenRegistry): one per serve running at once, the first
// free one taken.
func (p statePaths) children(n int) string {
	if n == 0 {
		return filepath.Join(p.dir, "children-"+p.id+".state")
	}
	return filepath.Join(p.dir, fmt.Sprintf("children-%s.%d.state", p.id, n))
}

// pathsFor returns the state files of the config file at config, named
// after a hash of its absolute path, so that two configs never share.
func pathsFor(config string) (statePaths, error) {
	dir, err := stateDir()
	if err != nil {
		return statePaths{}, fmt.Errorf("the state directory: %w", err)
	}
	abs, err := filepath.Abs(config)
	if err != nil {
		return statePaths{}, err
	}
	sum := sha256.Sum256([]byte(abs))
	id := hex.EncodeToString(sum[:8])
	return statePaths{
		dir:        dir,
		id:         id,
		tokens:     filepath.Join(dir, "tokens-"+id+".json"),
		catalogs:   filepath.Join(dir, "catalogs-"+id+".json"),
		serveToken: filepath.Join(dir, "serve-token"),
	}, nil
}

// adminFile is what a running serve writes so that the commands find it:
// where its admin endpoint listens, and the token it wants. Only the user
// can read it (mode 0600 in a 0700 directory): whoever can read it can use
// the fleet, which is the user.
type adminFile struct {
	Addr    string    `json:"addr"`
	Token   string    `json:"token"`
	PID     int       `json:"pid"`
	Config  string    `json:"config"`
	Started time.Time `json:"started"`
	Serving string    `json:"serving,omitempty"` // "stdio", or its HTTP endpoint
}

// newToken returns 32 random bytes in hex.
func newToken() string {
	var b [32]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// writeAdminFile writes f to path, atomically and with mode 0600.
func writeAdminFile(path string, f adminFile) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	b, err := json.Marshal(f)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".admin-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil && runtime.GOOS != "windows" {
		tmp.Close()
		return err
	}
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// readAdminFile reads the admin file at path; it is missing when no serve
// of that config runs. A file another user could have written is refused
// (it would send the command's calls, and the token in it, where they
// chose), and so is one whose address is not on this machine.
func readAdminFile(path string) (adminFile, error) {
	var f adminFile
	fh, err := os.Open(path)
	if err != nil {
		return f, err
	}
	defer fh.Close()
	fi, err := fh.Stat()
	if err != nil {
		return f, err
	}
	if why := filetrust.Untrusted(fi); why != "" {
		return f, fmt.Errorf("%s is %s, who could have written it", path, why)
	}
	b, err := io.ReadAll(io.LimitReader(fh, 1<<20))
	if err != nil {
		return f, err
	}
	if err := json.Unmarshal(b, &f); err != nil || f.Addr == "" || f.Token == "" {
		return f, fmt.Errorf("%s is not an admin file of mcpfleet", path)
	}
	if host, _, err := net.SplitHostPort(f.Addr); err != nil || !netguard.IsLoopback(host) {
		return f, fmt.Errorf("%s names the address %q, which is not a loopback one, as a serve's never is", path, f.Addr)
	}
	return f, nil
}

// removeAdminFile removes the admin file at path if it is still ours.
func removeAdminFile(path, token string) {
	if f, err := readAdminFile(path); err == nil && f.Token == token {
		_ = os.Remove(path)
	}
}

// servedToken returns the token in the file at path, making the file (mode
// 0600, in a 0700 directory) with a new token if there is none. The file
// appears whole: written aside, then linked in place, which fails if
// another serve made it meanwhile (then its token is the one).
func servedToken(path string) (string, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return "", err
	}
	token, err := readSecretFile(path)
	if err == nil || !isNotExist(err) {
		return token, err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".serve-token-*")
	if err != nil {
		return "", err
	}
	defer os.Remove(tmp.Name())
	token = newToken()
	if err := tmp.Chmod(0o600); err != nil && runtime.GOOS != "windows" {
		tmp.Close()
		return "", err
	}
	if _, err := tmp.WriteString(token + "\n"); err != nil {
		tmp.Close()
		return "", err
	}
	if err := tmp.Close(); err != nil {
		return "", err
	}
	if err := os.Link(tmp.Name(), path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return readSecretFile(path)
		}
		return "", err
	}
	return token, nil
}

// readSecretFile reads a file that holds a secret (a bearer token): its
// first line, trimmed. On Unix the file must be the user's, and neither
// readable nor writable by others.
func readSecretFile(path string) (string, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return "", err
	}
	if why := filetrust.Untrusted(fi); why == "owned by another user" {
		return "", fmt.Errorf("%s is owned by another user, who chose the token: make a token file of your own", path)
	}
	if runtime.GOOS != "windows" && fi.Mode().Perm()&0o077 != 0 {
		return "", fmt.Errorf("%s is readable by others (mode %#o): run chmod 600 %s", path, fi.Mode().Perm(), path)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	for i, c := range b {
		if c == '\n' || c == '\r' {
			b = b[:i]
			break
		}
	}
	if len(b) == 0 {
		return "", fmt.Errorf("%s is empty", path)
	}
	return string(b), nil
}

// serveFile is the admin file of a serve, as found.
type serveFile struct {
	path string
	adminFile
}

// findServes returns the admin files of the serves of the config, newest
// first, and why each file it passed over was not trusted.
func findServes(paths statePaths) ([]serveFile, []error) {
	names, _ := filepath.Glob(paths.adminPattern())
	var out []serveFile
	var bad []error
	for _, name := range names {
		f, err := readAdminFile(name)
		switch {
		case isNotExist(err):
			// Its serve ended meanwhile.
		case err != nil:
			bad = append(bad, err)
		default:
			out = append(out, serveFile{path: name, adminFile: f})
		}
	}
	slices.SortFunc(out, func(a, b serveFile) int {
		if c := b.Started.Compare(a.Started); c != 0 {
			return c
		}
		return b.PID - a.PID
	})
	return out, bad
}

// openRegistry opens the state file of this serve's stdio children: the
// first slot no running serve of the config holds, so that a second serve
// is a peer of the first, with a file of its own. The files of slots whose
// serve ended without closing them (a crash) are swept of the children
// they list, and removed. It returns nil, having logged why, when no file
// can be used: the children then may outlive a crash of this serve.
func openRegistry(paths statePaths, logger *slog.Logger) *stdio.Registry {
	const slots = 64
	opts := []stdio.RegistryOption{stdio.WithRegistryLogger(logger)}
	for n := range slots {
		reg, err := stdio.OpenRegistry(paths.children(n), opts...)
		if errors.Is(err, stdio.ErrRegistryInUse) {
			continue
		}
		if err != nil {
			logger.Warn("mcpfleet: running without a state file: stdio servers may outlive a crash of this serve",
				"path", paths.children(n), "error", err)
			return nil
		}
		for m := n + 1; m < slots; m++ {
			if _, err := os.Stat(paths.children(m)); err != nil {
				continue
			}
			if old, err := stdio.OpenRegistry(paths.children(m), opts...); err == nil {
				_ = old.Close() // swept: nothing left in it, so it is removed
			}
		}
		return reg
	}
	logger.Warn("mcpfleet: running without a state file: every slot is in use", "serves", slots)
	return nil
}

// isNotExist reports a missing file.
func isNotExist(err error) bool { return errors.Is(err, fs.ErrNotExist) }
