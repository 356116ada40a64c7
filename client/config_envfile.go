package client

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// maxEnvFile bounds what an envFile may hold: a dotenv file is a few lines.
const maxEnvFile = 1 << 20

// envFilePath resolves a server's envFile: as written when absolute, else
// in the workspace folder (WithWorkspaceFolder), else in the config file's
// directory (LoadConfig).
func (p *configParser) envFilePath(path string) (string, error) {
	if path == "" {
		return "", errors.New("is empty")
	}
	if filepath.IsAbs(path) {
		return path, nil
	}
	switch {
	case p.workspaceSet:
		return filepath.Join(p.workspace, path), nil
	case p.dir != "":
		return filepath.Join(p.dir, path), nil
	}
	return "", fmt.Errorf("%q is relative and there is nothing to resolve it against: load the file with client.LoadConfig, pass client.WithWorkspaceFolder(dir), or make the path absolute", path)
}

// readEnvFile reads a dotenv file. Its values are secrets: no error shows
// them, or the lines they are on.
func readEnvFile(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil {
		return nil, err
	} else if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file", path)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxEnvFile+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxEnvFile {
		return nil, fmt.Errorf("%s: larger than %d bytes", path, maxEnvFile)
	}
	return parseEnvFile(path, data)
}

// parseEnvFile parses the dotenv format VS Code's envFile reads: one
// NAME=value a line, with an optional "export " before it; blank lines and
// lines starting with # are skipped; a value may be 'single-quoted'
// (taken as is), "double-quoted" (\n, \r, \t, \" and \\ escapes) or bare
// (up to a " #" comment, trimmed). Variables are not expanded. A later
// line wins over an earlier one for the same name.
func parseEnvFile(name string, data []byte) (map[string]string, error) {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	env := map[string]string{}
	var errs []error
	for n, line := range strings.Split(string(data), "\n") {
		bad := func(why string) { errs = append(errs, fmt.Errorf("%s:%d: %s", name, n+1, why)) }
		line = strings.TrimSpace(strings.TrimSuffix(line, "\r"))
		if line == "" || line[0] == '#' {
			continue
		}
		if rest, ok := strings.CutPrefix(line, "export "); ok {
			line = strings.TrimSpace(rest)
		}
		key, value, ok := strings.Cut(line, "=")
		key = strings.TrimSpace(key)
		if !ok {
			bad("want NAME=value")
			continue
		}
		if !validVarName(key) {
			bad("want NAME=value, NAME made of letters, digits and _")
			continue
		}
		v, err := envValue(strings.TrimSpace(value))
		if err != nil {
			bad(fmt.Sprintf("%s: %v", key, err))
			continue
		}
		env[key] = v
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return env, nil
}

// envValue decodes the value part of a dotenv line.
func envValue(s string) (string, error) {
	if s == "" {
		return "", nil
	}
	q := s[0]
	if q != '"' && q != '\'' {
		if i := strings.Index(s, " #"); i >= 0 {
			s = s[:i]
		} else if i := strings.Index(s, "\t#"); i >= 0 {
			s = s[:i]
		}
		return strings.TrimSpace(s), nil
	}
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		c := s[i]
		switch {
		case c == q:
			if rest := strings.TrimSpace(s[i+1:]); rest != "" && rest[0] != '#' {
				return "", errors.New("text after the closing quote")
			}
			return b.String(), nil
		case c == '\\' && q == '"' && i+1 < len(s):
			i++
			switch s[i] {
			case 'n':
				b.WriteByte('\n')
			case 'r':
				b.WriteByte('\r')
			case 't':
				b.WriteByte('\t')
			default:
				b.WriteByte(s[i]) // \" and \\ and any other: the character
			}
		default:
			b.WriteByte(c)
		}
	}
	return "", fmt.Errorf("no closing %c", q)
}

// envFile reads the entry's envFile into its env; the entry's own env
// wins over the file, as in VS Code.
func (p *configParser) envFile(name string, sc *ServerConfig, w *wire) {
	if sc.EnvFile == "" {
		return
	}
	path, err := p.envFilePath(sc.EnvFile)
	if err != nil {
		p.errorf(name, "envFile", "%v", err)
		return
	}
	vars, err := readEnvFile(path)
	if err != nil {
		p.errorf(name, "envFile", "%v", err)
		return
	}
	for k, v := range w.env {
		vars[k] = v
	}
	w.env = vars
}
