package fleet

import (
	"fmt"
	"slices"
	"strings"

	"github.com/mcpfleet/mcpfleet/client"
)

// userKind is the kind of the template's variables: ${user:NAME}.
const userKind = "user"

// Template is the config every user's fleet is built from: a config file
// as client.ParseConfig reads it (any host's dialect), whose strings may
// also say ${user:NAME}, answered per user. Parse one with ParseTemplate.
// A Template is immutable and safe for concurrent use.
type Template struct {
	data   []byte
	opts   []client.ConfigOption
	source string // the config's Source
	// Set by ParseTemplate from the template parsed with placeholders.
	servers   []string
	vars      []string          // the ${user:NAME} names it uses, sorted
	identity  map[string]string // server → its entry's identity
	perUser   map[string]bool   // servers whose entry uses a ${user:…} variable, or an oauth block
	usesOther bool              // uses a variable other than ${user:id}
}

// ParseTemplate parses data as a template, with opts as ParseConfig
// takes them (WithSource names it in errors; WithLookupEnv answers its
// ${VAR}s, each time a user's fleet is built). Every problem of the
// template is reported as ParseConfig reports it, naming the server and
// the field, with each ${user:NAME} standing for a value: a value of the
// user's own is checked when the user's fleet is built. A ${user:…} in a
// number (a timeout, a port) or in a URL's scheme is refused: the
// variables are for strings. (An envFile is read here as well, with the
// placeholder "u1-NAME" for each ${user:NAME}.)
func ParseTemplate(data []byte, opts ...client.ConfigOption) (*Template, error) {
	t := &Template{data: slices.Clone(data), opts: slices.Clone(opts),
		identity: map[string]string{}, perUser: map[string]bool{}}
	seen := map[string]bool{}
	placeholder := func(name string, at client.VariableUse) (string, error) {
		seen[name] = true
		if at.Server != "" {
			t.perUser[at.Server] = true
		}
		// A value no rule refuses, to find the variables that stand where
		// none may (a URL's scheme); the placeholder itself is kept as
		// before, so that the entries' identities stay what they were.
		if _, err := fit(userKind, name, "u1", at); err != nil {
			return "", err
		}
		return "u1-" + name, nil
	}
	cfg, err := client.ParseConfig(t.data, append(t.opts, client.WithVariablesAt(userKind, placeholder))...)
	if err != nil {
		return nil, err
	}
	t.source = cfg.Source
	for name, sc := range cfg.Servers {
		t.servers = append(t.servers, name)
		t.identity[name] = sc.Identity()
		// The user's tokens of an OAuth server are the user's own, and
		// so may be what the server shows them.
		t.perUser[name] = t.perUser[name] || sc.OAuth != nil
	}
	slices.Sort(t.servers)
	for name := range seen {
		t.vars = append(t.vars, name)
		t.usesOther = t.usesOther || name != "id"
	}
	slices.Sort(t.vars)
	return t, nil
}

// Servers returns the names of the template's servers, sorted.
func (t *Template) Servers() []string { return slices.Clone(t.servers) }

// Variables returns the NAMEs of the ${user:NAME} variables the template
// uses, sorted: what the host's Values must answer (but id).
func (t *Template) Variables() []string { return slices.Clone(t.vars) }

// PerUser reports whether the template's entry server depends on the
// user: it uses a ${user:…} variable in any field (its URL, headers, env,
// envFile, arguments, ...), or has an oauth block. A Pool keeps the
// catalogs of such a server per user unless Config.SharedCatalogs names
// it.
func (t *Template) PerUser(server string) bool { return t.perUser[server] }

// Config returns the config of user's fleet: the template with every
// ${user:NAME} replaced by values[NAME], and ${user:id} by user, each
// fitted to where it stands (see fit: percent-encoded in a URL, refused
// in a command, an argument or a file path when it holds a path). Its
// Source is the template's with the user ("template.json (user
// "alice")"), and so are its errors: a variable values lacks, or a value
// that does not fit its field, is an error naming the user, the server,
// the field and the variable; no error shows a value.
func (t *Template) Config(user string, values map[string]string) (*client.Config, error) {
	lookup := func(name string, at client.VariableUse) (string, error) {
		v, ok := values[name]
		if name == "id" {
			v, ok = user, true
		}
		if !ok {
			return "", fmt.Errorf("${%s:%s} has no value", userKind, name)
		}
		return fit(userKind, name, v, at)
	}
	cfg, err := client.ParseConfig(t.data, append(t.opts, client.WithVariablesAt(userKind, lookup),
		client.WithSource(fmt.Sprintf("%s (user %q)", t.source, user)))...)
	if err != nil {
		return nil, scrub(err, user, values)
	}
	return cfg, nil
}

// minSecret is the length from which a value is taken out of an error
// message: shorter ones are no secret, and would take out words.
const minSecret = 4

// scrub returns err, or, if its message shows one of values (a value
// that made a field invalid can be quoted in its error), an error with
// the same message where each such value reads as its variable.
func scrub(err error, user string, values map[string]string) error {
	msg := err.Error()
	names := make([]string, 0, len(values))
	for name, v := range values {
		if len(v) >= minSecret && name != "id" && v != user && strings.Contains(msg, v) {
			names = append(names, name)
		}
	}
	if len(names) == 0 {
		return err
	}
	// Longest first, so that a value inside another is not half replaced.
	slices.SortFunc(names, func(a, b string) int { return len(values[b]) - len(values[a]) })
	for _, name := range names {
		msg = strings.ReplaceAll(msg, values[name], fmt.Sprintf("${%s:%s}", userKind, name))
	}
	return &scrubbed{msg: msg}
}

// scrubbed is an error whose message had values taken out; it wraps
// nothing, so that no caller can reach the original.
type scrubbed struct{ msg string }

func (e *scrubbed) Error() string { return e.msg }
