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
	"net"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/filetrust"
	"github.com/mcpfleet/mcpfleet/internal/netguard"
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
	admin    string // the running serve's address and token (mode 0600)
	tokens   string // OAuth tokens (oauth.NewFileStore, mode 0600)
	catalogs string // the catalog cache (client.WithCatalogCache)
	children string // the stdio children's state file (client.WithStateFile)
	// serveToken is the bearer token serve --http asks of its clients
	// unless told otherwise: one for the user, kept across restarts.
	serveToken string
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
		admin:      filepath.Join(dir, "admin-"+id+".json"),
		tokens:     filepath.Join(dir, "tokens-"+id+".json"),
		catalogs:   filepath.Join(dir, "catalogs-"+id+".json"),
		children:   filepath.Join(dir, "children-"+id+".state"),
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

// removeAdminFile removes the admin file at path if it is still ours (a
// serve started later may have replaced it).
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

var errNoServe = errors.New("no serve of this config is running")

// isNotExist reports a missing file.
func isNotExist(err error) bool { return errors.Is(err, fs.ErrNotExist) }

func absPath(p string) (string, error) { return filepath.Abs(p) }
