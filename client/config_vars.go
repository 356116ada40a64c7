package client

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Input is one of the values a config asks the user for: a VS Code
// "inputs" entry, which a string refers to as ${input:id}. Hosts answer
// them through WithInputs; a file's "default" answers one when the host
// does not.
type Input struct {
	// ID is the name ${input:id} uses.
	ID string
	// Type is the entry's "type": "promptString" (a line of text),
	// "pickString" (one of Options) or "command" (VS Code runs Command;
	// no other host can). Empty when the file uses ${input:id} without
	// declaring it in "inputs".
	Type string
	// Description is what to ask the user.
	Description string
	// Default is the answer when the user gives none; empty if there is
	// none.
	Default string
	// Password says the answer is a secret: do not echo or log it.
	Password bool
	// Options are the values a pickString input offers.
	Options []string
	// Command is the VS Code command a "command" input runs.
	Command string
}

// WithInputs sets how ${input:id} is answered. ParseConfig calls resolve
// at most once per input id and parse, with the input as the file's
// "inputs" array declares it (only its ID when it does not), and uses the
// string it returns; an error fails the fields that use the input. Without
// it, an input's "default" is used, and an input with no default is an
// error naming it.
func WithInputs(resolve func(in Input) (string, error)) ConfigOption {
	return func(p *configParser) { p.resolveInput = resolve }
}

// WithWorkspaceFolder sets ${workspaceFolder}, VS Code's folder open in
// the editor, and ${workspaceFolderBasename}. A relative "envFile" is read
// from it too. Without it, a config that uses ${workspaceFolder} is an
// error naming the server, the field and this option.
func WithWorkspaceFolder(dir string) ConfigOption {
	return func(p *configParser) { p.workspace, p.workspaceSet = dir, true }
}

// WithVariables answers ${kind:NAME} with lookup(NAME), for a host's own
// variables. NAME is letters, digits, '_', '-' and '.'; kind is a name of
// letters and digits other than env and input. A value is used as it is,
// never expanded again (a value holding "${HOME}" stays so), and lookup
// returning false is an error naming the variable and the field, never a
// value.
func WithVariables(kind string, lookup func(name string) (string, bool)) ConfigOption {
	return WithVariablesAt(kind, func(name string, _ VariableUse) (string, error) {
		if v, ok := lookup(name); ok {
			return v, nil
		}
		return "", fmt.Errorf("${%s:%s} has no value", kind, name)
	})
}

// VariableUse is where a ${kind:NAME} stands: the server's entry, the
// field as errors name it ("url", "headers.Authorization", "args[1]",
// "oauth.issuer") and the field's text before the variable, expanded.
type VariableUse struct {
	Server, Field, Before string
}

// WithVariablesAt is WithVariables for a host whose values must be fitted
// to where they go: the fleet package percent-encodes a ${user:NAME} in a
// URL and refuses a path in a file name. lookup returns the text to put
// in place of the variable, used as it is, never expanded again; its
// error fails the field, naming the server and the field after it (so it
// should not quote a secret value).
func WithVariablesAt(kind string, lookup func(name string, at VariableUse) (string, error)) ConfigOption {
	return func(p *configParser) {
		if p.vars == nil {
			p.vars = map[string]func(string, VariableUse) (string, error){}
		}
		p.vars[kind] = lookup
	}
}

// withConfigDir sets the directory a relative envFile is read from when no
// workspace folder is set: LoadConfig's file's.
func withConfigDir(dir string) ConfigOption {
	return func(p *configParser) { p.dir = dir }
}

// inputIDOK reports whether s can be an input's id: VS Code's examples use
// letters, digits, "_", "-" and ".".
func inputIDOK(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c != '_' && c != '-' && c != '.' && !(c >= 'a' && c <= 'z') && !(c >= 'A' && c <= 'Z') && !(c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// inputs parses the top-level "inputs" array of VS Code's mcp.json.
func (p *configParser) inputs(raw json.RawMessage) {
	var list []json.RawMessage
	if err := json.Unmarshal(raw, &list); err != nil {
		p.errorf("", "inputs", `must be an array like [{"type": "promptString", "id": "token", "description": "API token", "password": true}]`)
		return
	}
	p.declared = map[string]Input{}
	for i, item := range list {
		where := fmt.Sprintf("inputs[%d]", i)
		var in Input
		if !p.block("", where, item, "must be an object", []blockKey{
			{"id", into("", p.rawString, &in.ID)},
			{"type", into("", p.rawString, &in.Type)},
			{"description", into("", p.rawString, &in.Description)},
			{"default", into("", p.rawString, &in.Default)},
			{"password", into("", p.boolean, &in.Password)},
			{"options", func(f string, v json.RawMessage) { in.Options = p.inputOptions(f, v) }},
			{"command", into("", p.rawString, &in.Command)},
			// A command input's arguments, for VS Code to pass.
			{"args", func(string, json.RawMessage) {}},
		}) {
			continue
		}
		switch {
		case !inputIDOK(in.ID):
			p.errorf("", where+".id", "missing or not a name of letters, digits, _, - and .")
			continue
		case in.Type != "promptString" && in.Type != "pickString" && in.Type != "command":
			p.errorf("", where+".type", "want promptString, pickString or command")
		}
		if _, dup := p.declared[in.ID]; dup {
			p.errorf("", where+".id", "input %q is declared twice", in.ID)
		}
		p.declared[in.ID] = in
	}
}

// inputOptions parses a pickString's options: strings, or objects with a
// "value" (and a "label" to show).
func (p *configParser) inputOptions(field string, v json.RawMessage) []string {
	var list []json.RawMessage
	if err := json.Unmarshal(v, &list); err != nil {
		p.errorf("", field, "must be an array of strings")
		return nil
	}
	var out []string
	for i, o := range list {
		var s string
		if json.Unmarshal(o, &s) == nil {
			out = append(out, s)
			continue
		}
		var obj struct{ Value string }
		if err := json.Unmarshal(o, &obj); err != nil || obj.Value == "" {
			p.errorf("", fmt.Sprintf("%s[%d]", field, i), `must be a string or {"label": ..., "value": ...}`)
			continue
		}
		out = append(out, obj.Value)
	}
	return out
}

// rawString decodes a JSON string without expanding variables in it.
func (p *configParser) rawString(server, field string, v json.RawMessage) string {
	var s string
	if err := json.Unmarshal(v, &s); err != nil {
		p.errorf(server, field, "must be a string")
	}
	return s
}

// input answers ${input:id}, once per id.
func (p *configParser) input(id string) (string, error) {
	if !inputIDOK(id) {
		return "", fmt.Errorf("invalid input id %q", id)
	}
	if a, ok := p.answers[id]; ok {
		return a.value, a.err
	}
	in, declared := p.declared[id]
	if !declared {
		in = Input{ID: id}
	}
	var a answer
	switch {
	case p.resolveInput != nil:
		a.value, a.err = p.resolveInput(in)
		if a.err != nil {
			a.err = fmt.Errorf("input %q: %w", id, a.err)
		}
	case in.Default != "":
		a.value = in.Default
	case !declared:
		a.err = fmt.Errorf("${input:%s}: no input %q is declared in \"inputs\" and no client.WithInputs answers it", id, id)
	default:
		a.err = fmt.Errorf("${input:%s}: the input has no \"default\" and no client.WithInputs answers it", id)
	}
	if p.answers == nil {
		p.answers = map[string]answer{}
	}
	p.answers[id] = a
	return a.value, a.err
}

// answer is an input's value, or why it has none.
type answer struct {
	value string
	err   error
}

// errUnset is an environment variable that is not set and has no default.
var errUnset = errors.New("not set")

// variable expands one ${...} expression (the text between the braces).
// It knows the shell-like ${VAR} and ${VAR:-default} that Claude Code and
// Cursor read, VS Code's ${env:VAR}, ${input:id}, ${userHome},
// ${workspaceFolder}, ${workspaceFolderBasename}, ${pathSeparator} and
// ${/}.
func (p *configParser) variable(at VariableUse, expr string) (string, error) {
	switch expr {
	case "userHome":
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("${userHome}: %v", err)
		}
		return home, nil
	case "workspaceFolder", "workspaceFolderBasename":
		if !p.workspaceSet {
			return "", fmt.Errorf("${%s} is used but no workspace folder is set: pass client.WithWorkspaceFolder(dir)", expr)
		}
		if expr == "workspaceFolderBasename" {
			return filepath.Base(p.workspace), nil
		}
		return p.workspace, nil
	case "pathSeparator", "/":
		return string(filepath.Separator), nil
	}
	if id, ok := strings.CutPrefix(expr, "input:"); ok {
		return p.input(id)
	}
	if kind, name, ok := strings.Cut(expr, ":"); ok && p.vars[kind] != nil {
		if !inputIDOK(name) {
			return "", fmt.Errorf("invalid variable name %q in ${%s:…}", redactVar(name), kind)
		}
		return p.vars[kind](name, at)
	}
	name, hasPrefix := strings.CutPrefix(expr, "env:")
	name, def, hasDef := strings.Cut(name, ":-")
	if !validVarName(name) {
		if kind, _, ok := strings.Cut(expr, ":"); ok && !hasPrefix && validVarName(kind) {
			return "", fmt.Errorf("${%s:…} is not supported (want ${VAR}, ${VAR:-default}, ${env:VAR}, ${input:id}, ${userHome} or ${workspaceFolder})", kind)
		}
		return "", fmt.Errorf("invalid variable name %q", redactVar(name))
	}
	if v, ok := p.lookup(name); ok && (v != "" || !hasDef) {
		return v, nil
	}
	if hasDef {
		return def, nil
	}
	return "", fmt.Errorf("environment variable %s is %w (write ${%s:-default} for a default)", name, errUnset, name)
}

// expand replaces every variable in s: ${...} expressions (see variable),
// and in Gemini CLI's settings $VAR as well. An unset ${VAR} without a
// default is an error: sending an empty token is worse than refusing to
// start. (An unset $VAR stays as written, as in Gemini CLI: a bare $ is
// too common in arguments to refuse.)
func (p *configParser) expand(server, field, s string) (string, error) {
	bare := p.dialect == DialectGemini
	if !strings.Contains(s, "${") && !(bare && strings.Contains(s, "$")) {
		return s, nil
	}
	var b strings.Builder
	for {
		i := strings.IndexByte(s, '$')
		if i < 0 || i == len(s)-1 {
			b.WriteString(s)
			return b.String(), nil
		}
		b.WriteString(s[:i])
		switch {
		case s[i+1] == '{':
			end := strings.IndexByte(s[i:], '}')
			if end < 0 {
				return "", fmt.Errorf("unterminated ${ in %q", redactVar(s[i:]))
			}
			v, err := p.variable(VariableUse{Server: server, Field: field, Before: b.String()}, s[i+2:i+end])
			if err != nil {
				return "", err
			}
			b.WriteString(v)
			s = s[i+end+1:]
		case bare && varStart(s[i+1]):
			// Gemini CLI's $VAR: an environment variable, kept as
			// written when unset, as Gemini CLI keeps it.
			n := i + 2
			for n < len(s) && (varStart(s[n]) || s[n] >= '0' && s[n] <= '9') {
				n++
			}
			if v, ok := p.lookup(s[i+1 : n]); ok {
				b.WriteString(v)
			} else {
				b.WriteString(s[i:n])
			}
			s = s[n:]
		default:
			b.WriteByte('$')
			s = s[i+1:]
		}
	}
}

func varStart(c byte) bool { return c == '_' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' }

func validVarName(s string) bool {
	if s == "" {
		return false
	}
	for i, c := range s {
		if c == '_' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || i > 0 && c >= '0' && c <= '9' {
			continue
		}
		return false
	}
	return true
}

// redactVar shows the shape of a malformed value without its content.
func redactVar(s string) string {
	if len(s) > 8 {
		return s[:8] + "…"
	}
	return s
}
