package oauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/filetrust"
	"github.com/mcpfleet/mcpfleet/internal/redact"
)

// Token is an access token with what comes with it. Its AccessToken and
// RefreshToken are secrets: String, Format and LogValue leave them out.
type Token struct {
	AccessToken  string    `json:"access_token"`
	TokenType    string    `json:"token_type,omitempty"`
	RefreshToken string    `json:"refresh_token,omitempty"`
	Expiry       time.Time `json:"expiry,omitzero"`
	// IssuedAt is when the client received the token; with Expiry it gives
	// the token's lifetime, which sets when it is refreshed.
	IssuedAt time.Time `json:"issued_at,omitzero"`
	// Scopes are the scopes granted (the token response's, or the ones
	// asked for when it names none).
	Scopes []string `json:"scopes,omitempty"`
}

func (t Token) String() string {
	s := "token(access=<redacted>"
	if t.RefreshToken != "" {
		s += " refresh=<redacted>"
	}
	if !t.Expiry.IsZero() {
		s += " expiry=" + t.Expiry.Format(time.RFC3339)
	}
	if len(t.Scopes) > 0 {
		s += " scopes=" + strings.Join(t.Scopes, ",")
	}
	return s + ")"
}

// GoString is String: %#v shows no secret either.
func (t Token) GoString() string { return t.String() }

// Format prints the redacted form for every verb.
func (t Token) Format(f fmt.State, _ rune) { fmt.Fprint(f, t.String()) }

// LogValue logs the token without its secrets.
func (t Token) LogValue() slog.Value { return slog.StringValue(t.String()) }

// Client is the identity the client used with an authorization server: a
// pre-registered client, a Client ID Metadata Document URL, or a client it
// registered dynamically (then Registered is true and Secret, if any, came
// from the registration). Secret is a secret.
type Client struct {
	ID         string `json:"client_id"`
	Secret     string `json:"client_secret,omitempty"`
	AuthMethod string `json:"token_endpoint_auth_method,omitempty"`
	// Issuer is the authorization server the identity is for.
	Issuer string `json:"issuer,omitempty"`
	// RedirectURI is the redirect URI a dynamic registration registered.
	RedirectURI string `json:"redirect_uri,omitempty"`
	Registered  bool   `json:"registered,omitempty"`
}

func (c Client) String() string {
	s := "client(" + c.ID
	if c.Secret != "" {
		s += " secret=<redacted>"
	}
	return s + " auth=" + c.AuthMethod + ")"
}

// GoString is String.
func (c Client) GoString() string { return c.String() }

// Format prints the redacted form for every verb.
func (c Client) Format(f fmt.State, _ rune) { fmt.Fprint(f, c.String()) }

// LogValue logs the client without its secret.
func (c Client) LogValue() slog.Value { return slog.StringValue(c.String()) }

// Entry is what a TokenStore keeps for one server: its token and the facts
// needed to refresh it without asking the server again.
type Entry struct {
	// Resource is the server URL the token was issued for. An entry for
	// another URL is never used.
	Resource string `json:"resource"`
	// Issuer is the authorization server the client holds credentials
	// for, remembered the first time it was seen: the client sends its
	// credentials to no other without the host's consent (see
	// Config.Issuer and Authorizer.TrustIssuer). TokenEndpoint is its.
	Issuer        string `json:"issuer,omitempty"`
	TokenEndpoint string `json:"token_endpoint,omitempty"`
	// Indicator is the resource indicator (RFC 8707) the token was asked
	// for, which a refresh asks for again: the protected resource
	// metadata's resource, or Resource. Empty in entries stored before it
	// was kept: Resource stands in.
	Indicator string  `json:"resource_indicator,omitempty"`
	Client    *Client `json:"client,omitempty"`
	Token     *Token  `json:"token,omitempty"`
}

func (e Entry) String() string {
	return fmt.Sprintf("entry(%s issuer=%s %v %v)", redact.URL(e.Resource), redact.URL(e.Issuer), e.Client, e.Token)
}

// GoString is String.
func (e Entry) GoString() string { return e.String() }

// Format prints the redacted form for every verb.
func (e Entry) Format(f fmt.State, _ rune) { fmt.Fprint(f, e.String()) }

// LogValue logs the entry without its secrets.
func (e Entry) LogValue() slog.Value { return slog.StringValue(e.String()) }

func (e *Entry) clone() *Entry {
	if e == nil {
		return nil
	}
	c := *e
	if e.Client != nil {
		cl := *e.Client
		c.Client = &cl
	}
	if e.Token != nil {
		t := *e.Token
		t.Scopes = append([]string(nil), e.Token.Scopes...)
		c.Token = &t
	}
	return &c
}

// TokenStore keeps each server's Entry under a key (the Manager uses the
// server's name). Implementations must be safe for concurrent use; Save
// replaces the whole entry.
type TokenStore interface {
	// Load returns the entry under key, or nil and no error if there is
	// none.
	Load(ctx context.Context, key string) (*Entry, error)
	// Save stores e under key.
	Save(ctx context.Context, key string, e *Entry) error
	// Delete forgets the entry under key; deleting nothing is no error.
	Delete(ctx context.Context, key string) error
}

// MemoryStore is a TokenStore in memory: tokens outlive runtimes and
// reconnects, not the process. The zero value is ready to use.
type MemoryStore struct {
	mu      sync.Mutex
	entries map[string]*Entry
}

// NewMemoryStore returns an empty MemoryStore.
func NewMemoryStore() *MemoryStore { return &MemoryStore{} }

func (s *MemoryStore) Load(_ context.Context, key string) (*Entry, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.entries[key].clone(), nil
}

func (s *MemoryStore) Save(_ context.Context, key string, e *Entry) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.entries == nil {
		s.entries = map[string]*Entry{}
	}
	s.entries[key] = e.clone()
	return nil
}

func (s *MemoryStore) Delete(_ context.Context, key string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.entries, key)
	return nil
}

// FileStore is a TokenStore in one JSON file, so that a host that restarts
// does not ask the user again. The file is created with mode 0600 (its
// directory 0700) and every save replaces it atomically: the new content is
// written to a temporary file in the same directory, synced, and renamed
// over the old one, so a crash leaves the old file or the new one, never a
// torn one. Several FileStores of one process on the same path are safe;
// two processes saving at once may lose one's save (the last rename wins).
//
// On Unix a file that belongs to another user, or that others can write,
// is refused (ErrUntrustedStore) and never replaced: whoever can write it
// chooses the token the client sends and the endpoint it refreshes at. The
// stdio state file (client.WithStateFile) is checked the same way.
type FileStore struct {
	path string
	mu   sync.Mutex
}

// NewFileStore returns a FileStore on path. The file need not exist.
func NewFileStore(path string) *FileStore { return &FileStore{path: path} }

// Path returns the file's path.
func (s *FileStore) Path() string { return s.path }

type fileContent struct {
	Servers map[string]*Entry `json:"servers"`
}

// maxStoreSize bounds what read takes from the file.
const maxStoreSize = 16 << 20

func (s *FileStore) read() (fileContent, error) {
	var c fileContent
	f, err := os.Open(s.path)
	if errors.Is(err, fs.ErrNotExist) {
		return fileContent{Servers: map[string]*Entry{}}, nil
	}
	if err != nil {
		return c, fmt.Errorf("oauth: token store: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return c, fmt.Errorf("oauth: token store: %w", err)
	}
	if why := filetrust.Untrusted(fi); why != "" {
		return c, fmt.Errorf("%w: %s is %s; it is neither used nor replaced (it must be this user's, mode 0600)",
			ErrUntrustedStore, s.path, why)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxStoreSize))
	if err != nil {
		return c, fmt.Errorf("oauth: token store: %w", err)
	}
	if err := json.Unmarshal(data, &c); err != nil {
		// The message of a JSON syntax error quotes no content.
		return c, fmt.Errorf("oauth: token store %s: %w", s.path, err)
	}
	if c.Servers == nil {
		c.Servers = map[string]*Entry{}
	}
	return c, nil
}

func (s *FileStore) Load(ctx context.Context, key string) (*Entry, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c, err := s.read()
	if err != nil {
		return nil, err
	}
	return c.Servers[key], nil
}

func (s *FileStore) Save(ctx context.Context, key string, e *Entry) error {
	return s.update(ctx, func(c *fileContent) { c.Servers[key] = e.clone() })
}

func (s *FileStore) Delete(ctx context.Context, key string) error {
	return s.update(ctx, func(c *fileContent) { delete(c.Servers, key) })
}

func (s *FileStore) update(ctx context.Context, change func(*fileContent)) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c, err := s.read()
	if err != nil {
		return err
	}
	change(&c)
	data, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return fmt.Errorf("oauth: token store: %w", err)
	}
	return writeAtomic(s.path, data)
}

// writeAtomic replaces path with data: a temporary file of mode 0600 in
// the same directory, synced, renamed over path, and the directory synced.
func writeAtomic(path string, data []byte) (err error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("oauth: token store: %w", err)
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return fmt.Errorf("oauth: token store: %w", err)
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			os.Remove(tmp)
		}
	}()
	// CreateTemp makes the file 0600 already; Chmod keeps it so under any
	// umask and on systems where it does not.
	if err := f.Chmod(0o600); err != nil && !errors.Is(err, errors.ErrUnsupported) {
		f.Close()
		return fmt.Errorf("oauth: token store: %w", err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("oauth: token store: %w", err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("oauth: token store: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("oauth: token store: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("oauth: token store: %w", err)
	}
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync() // not supported everywhere (Windows); the rename stands
		d.Close()
	}
	return nil
}
