package gateway

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/filetrust"
)

// minAPIKeyLen is the shortest API key a file may hold: a key is a
// password that no one types, so it can be long.
const minAPIKeyLen = 20

// APIKeys is an Authenticator of API keys read from a file, each naming its
// identity: for a team that runs no authorization server. The file is JSON:
//
//	{"keys": [
//	  {"identity": "alice", "groups": ["eng"], "key": "a long random string"},
//	  {"identity": "bob", "sha256": "<hex SHA-256 of the key>",
//	   "claims": {"github_token": "..."}}
//	]}
//
// A key is given as itself ("key") or as the hex SHA-256 of it ("sha256"),
// so that the file need not hold the keys; keys are at least 20
// characters. "claims" answer the template's ${user:NAME} for that
// identity. The file must be the user's and readable by no one else (mode
// 0600 on Unix): it holds the keys, or the claims, of everyone. Reload reads
// it again. It is safe for concurrent use.
type APIKeys struct {
	path  string
	byKey atomic.Pointer[map[[32]byte]*Identity]
}

// LoadAPIKeys reads the API keys of path.
func LoadAPIKeys(path string) (*APIKeys, error) {
	k := &APIKeys{path: path}
	if err := k.Reload(); err != nil {
		return nil, err
	}
	return k, nil
}

// Reload reads the file again; on error the keys read before stay.
func (k *APIKeys) Reload() error {
	m, err := readAPIKeys(k.path)
	if err != nil {
		return err
	}
	k.byKey.Store(&m)
	return nil
}

// Len returns how many keys the file holds.
func (k *APIKeys) Len() int { return len(*k.byKey.Load()) }

// Authenticate returns the identity of key.
func (k *APIKeys) Authenticate(_ context.Context, key string) (*Identity, error) {
	// Looked up by the key's digest: a map lookup's time tells nothing of
	// a key that is not a digest's preimage.
	if id := (*k.byKey.Load())[sha256.Sum256([]byte(key))]; id != nil {
		return id, nil
	}
	if strings.Count(key, ".") == 2 {
		return nil, notMine("not an API key of this gateway") // a JWT, perhaps
	}
	return nil, refuse("invalid", "not an API key of this gateway")
}

// apiKeyEntry is one entry of an API key file.
type apiKeyEntry struct {
	Identity string            `json:"identity"`
	Groups   []string          `json:"groups"`
	Key      string            `json:"key"`
	SHA256   string            `json:"sha256"`
	Claims   map[string]string `json:"claims"`
}

// readAPIKeys reads and checks an API key file.
func readAPIKeys(path string) (map[[32]byte]*Identity, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("mcpfleet: api keys: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat() // of the file opened: not one put in its place after a check
	if err != nil {
		return nil, fmt.Errorf("mcpfleet: api keys: %w", err)
	}
	if why := filetrust.Untrusted(fi); why != "" {
		return nil, fmt.Errorf("mcpfleet: api keys: %s is %s, who could give themselves a key: make the file yours and chmod 600 %s", path, why, path)
	}
	if runtime.GOOS != "windows" && fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("mcpfleet: api keys: %s is readable by others (mode %#o), who could read everyone's keys: chmod 600 %s", path, fi.Mode().Perm(), path)
	}
	data, err := io.ReadAll(io.LimitReader(f, 16<<20))
	if err != nil {
		return nil, fmt.Errorf("mcpfleet: api keys: %w", err)
	}
	var doc struct {
		Keys []apiKeyEntry `json:"keys"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&doc); err != nil {
		// The decoder's error quotes no value, only where and which type.
		return nil, fmt.Errorf("mcpfleet: api keys: %s: %w", path, err)
	}
	out := map[[32]byte]*Identity{}
	var errs []error
	for i, e := range doc.Keys {
		where := fmt.Sprintf("mcpfleet: api keys: %s: keys[%d]", path, i)
		if strings.TrimSpace(e.Identity) == "" {
			errs = append(errs, fmt.Errorf("%s: identity is empty", where))
			continue
		}
		where += fmt.Sprintf(" (identity %q)", e.Identity)
		var sum [32]byte
		switch {
		case e.Key != "" && e.SHA256 != "":
			errs = append(errs, fmt.Errorf("%s: give key or sha256, not both", where))
			continue
		case e.Key != "":
			if len(e.Key) < minAPIKeyLen {
				errs = append(errs, fmt.Errorf("%s: key is %d characters; use at least %d random ones (openssl rand -hex 32)", where, len(e.Key), minAPIKeyLen))
				continue
			}
			sum = sha256.Sum256([]byte(e.Key))
		case e.SHA256 != "":
			b, err := hex.DecodeString(e.SHA256)
			if err != nil || len(b) != 32 {
				errs = append(errs, fmt.Errorf("%s: sha256 is not 64 hex digits", where))
				continue
			}
			copy(sum[:], b)
		default:
			errs = append(errs, fmt.Errorf("%s: key (or sha256) is missing", where))
			continue
		}
		if prev := out[sum]; prev != nil {
			errs = append(errs, fmt.Errorf("%s: the same key as identity %q", where, prev.ID))
			continue
		}
		claims := map[string]string{}
		for name, v := range e.Claims {
			claims[name] = v
		}
		out[sum] = &Identity{ID: e.Identity, Groups: slices.Clone(e.Groups), Claims: claims, Expiry: time.Time{}}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("mcpfleet: api keys: %s holds no key", path)
	}
	return out, nil
}
