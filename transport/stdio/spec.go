package stdio

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
)

// Spec says which server process to start: the stdio part of a server's
// configuration (`command`, `args`, `env`, `cwd` in an mcpServers entry).
//
// Env values are often secrets (API keys), so String and LogValue print
// only their names.
type Spec struct {
	// Command is the executable: a name looked up in the host's $PATH (the
	// PATH in Env does not affect the lookup, as with exec.Command), or a
	// path, which is relative to Dir when Dir is set.
	Command string
	// Args are the arguments after the command.
	Args []string
	// Env holds variables set for the child on top of the inherited
	// environment; a name here replaces the inherited value.
	Env map[string]string
	// Dir is the child's working directory. Empty means the host's.
	Dir string
	// NoInheritEnv starts the child with Env alone instead of the host's
	// environment plus Env. The zero value inherits, because every MCP host
	// does and servers commonly rely on PATH, HOME and the like.
	NoInheritEnv bool
}

// Validate reports a Spec that can never start, naming the field.
func (s Spec) Validate() error {
	if s.Command == "" {
		return errors.New("stdio: spec: command is empty")
	}
	if strings.IndexByte(s.Command, 0) >= 0 {
		return errors.New("stdio: spec: command contains a NUL byte")
	}
	for i, a := range s.Args {
		if strings.IndexByte(a, 0) >= 0 {
			return fmt.Errorf("stdio: spec: args[%d] contains a NUL byte", i)
		}
	}
	for k, v := range s.Env {
		switch {
		case k == "":
			return errors.New("stdio: spec: env has an empty name")
		case strings.ContainsAny(k, "=\x00"):
			return fmt.Errorf("stdio: spec: env name %q contains '=' or a NUL byte", k)
		case strings.IndexByte(v, 0) >= 0:
			// The value is not printed: it may be a secret.
			return fmt.Errorf("stdio: spec: env %s: value contains a NUL byte", k)
		}
	}
	if strings.IndexByte(s.Dir, 0) >= 0 {
		return errors.New("stdio: spec: dir contains a NUL byte")
	}
	return nil
}

// envNames returns the names in Env, sorted so output is stable.
func (s Spec) envNames() []string {
	names := make([]string, 0, len(s.Env))
	for k := range s.Env {
		names = append(names, k)
	}
	slices.Sort(names)
	return names
}

// String describes the Spec for logs and errors: the command line, the
// names (never the values) of Env, and Dir.
func (s Spec) String() string {
	var b strings.Builder
	b.WriteString(s.Command)
	for _, a := range s.Args {
		b.WriteByte(' ')
		b.WriteString(a)
	}
	if len(s.Env) > 0 {
		fmt.Fprintf(&b, " env=[%s]", strings.Join(s.envNames(), ","))
	}
	if s.NoInheritEnv {
		b.WriteString(" noinherit")
	}
	if s.Dir != "" {
		b.WriteString(" dir=")
		b.WriteString(s.Dir)
	}
	return b.String()
}

// LogValue implements slog.LogValuer so a Spec logged as an attribute shows
// its structure but never an Env value.
func (s Spec) LogValue() slog.Value {
	attrs := []slog.Attr{slog.String("command", s.Command)}
	if len(s.Args) > 0 {
		attrs = append(attrs, slog.Any("args", s.Args))
	}
	if len(s.Env) > 0 {
		attrs = append(attrs, slog.Any("env", s.envNames()))
	}
	if s.NoInheritEnv {
		attrs = append(attrs, slog.Bool("noinherit", true))
	}
	if s.Dir != "" {
		attrs = append(attrs, slog.String("dir", s.Dir))
	}
	return slog.GroupValue(attrs...)
}

// environ builds the child's environment. It never returns nil: a nil
// exec.Cmd.Env would mean "inherit", which NoInheritEnv must not do.
func (s Spec) environ() []string {
	out := make([]string, 0, len(s.Env))
	if !s.NoInheritEnv {
		for _, kv := range os.Environ() {
			name, _, _ := strings.Cut(kv, "=")
			if _, overridden := s.Env[name]; !overridden {
				out = append(out, kv)
			}
		}
	}
	for _, k := range s.envNames() {
		out = append(out, k+"="+s.Env[k])
	}
	return out
}
