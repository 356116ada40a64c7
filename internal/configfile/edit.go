package configfile

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
)

// ErrNoServer is the error of an edit that names a server the file does
// not have.
var ErrNoServer = errors.New("no such server in the file")

// ErrServerExists is the error of an added server whose name the file
// already has.
var ErrServerExists = errors.New("the file already has a server of that name")

// Doc is a config file's text, parsed for editing by byte ranges: an edit
// changes the bytes of the values and members it touches and nothing else,
// so a file keeps its comments, key order, indentation and the keys of
// other hosts. Each edit leaves Doc parsed again.
type Doc struct {
	data []byte
	root *node
}

// ParseDoc parses the text of a config file (JSON, or JSON with comments
// and trailing commas as VS Code writes it). Empty text is an empty
// object.
func ParseDoc(data []byte) (*Doc, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		data = []byte("{}\n")
	}
	d := &Doc{}
	if err := d.reset(data); err != nil {
		return nil, err
	}
	return d, nil
}

func (d *Doc) reset(data []byte) error {
	root, err := parseJSONC(data)
	if err != nil {
		return err
	}
	if root.kind != '{' {
		return errors.New("the file is not a JSON object")
	}
	d.data, d.root = data, root
	return nil
}

// Bytes returns the text as edited.
func (d *Doc) Bytes() []byte { return d.data }

// ServersKey returns the key of the file's server entries: "servers" in
// VS Code's form, else "mcpServers".
func (d *Doc) ServersKey() string {
	if m, _ := d.root.lookup("servers"); m != nil && m.value.kind == '{' {
		if m2, _ := d.root.lookup("mcpServers"); m2 == nil {
			return "servers"
		}
	}
	return "mcpServers"
}

// servers returns the object of server entries, nil if the file has none.
func (d *Doc) servers() *node {
	if m, _ := d.root.lookup(d.ServersKey()); m != nil && m.value.kind == '{' {
		return m.value
	}
	return nil
}

// Servers returns the names of the file's servers, in the file's order.
func (d *Doc) Servers() []string {
	obj := d.servers()
	if obj == nil {
		return nil
	}
	names := make([]string, 0, len(obj.members))
	for _, m := range obj.members {
		names = append(names, m.key)
	}
	return names
}

// Server returns the text of server name's entry, as the file has it.
func (d *Doc) Server(name string) ([]byte, bool) {
	obj := d.servers()
	if obj == nil {
		return nil, false
	}
	m, _ := obj.lookup(name)
	if m == nil {
		return nil, false
	}
	return d.data[m.value.start:m.value.end], true
}

// ServerField returns the text of field in server name's entry, and
// whether the entry has it.
func (d *Doc) ServerField(name, field string) ([]byte, bool) {
	obj := d.servers()
	if obj == nil {
		return nil, false
	}
	m, _ := obj.lookup(name)
	if m == nil || m.value.kind != '{' {
		return nil, false
	}
	f, _ := m.value.lookup(field)
	if f == nil {
		return nil, false
	}
	return d.data[f.value.start:f.value.end], true
}

// UsesVariable reports whether a string of the file uses ${name} (or
// ${name…}, as ${workspaceFolderBasename} uses ${workspaceFolder}).
func (d *Doc) UsesVariable(name string) bool {
	used := false
	walkStrings(d.root, func(s string) { used = used || strings.Contains(s, "${"+name) })
	return used
}

// SetServerField sets field of server name's entry to value (marshalled
// as JSON): the value's bytes are replaced if the entry has the field,
// else the field is added after the entry's last one.
func (d *Doc) SetServerField(name, field string, value any) error {
	obj := d.servers()
	if obj == nil {
		return fmt.Errorf("%w: %q", ErrNoServer, name)
	}
	m, _ := obj.lookup(name)
	if m == nil {
		return fmt.Errorf("%w: %q", ErrNoServer, name)
	}
	if m.value.kind != '{' {
		return fmt.Errorf("the entry of server %q is not an object", name)
	}
	return d.set(m.value, field, value)
}

// AddServer adds server name with entry (marshalled as JSON, indented as
// the file is) after the file's last server, making the object of server
// entries if the file has none.
func (d *Doc) AddServer(name string, entry any) error {
	obj := d.servers()
	if obj == nil {
		return d.add(d.root, d.ServersKey(), map[string]any{name: entry})
	}
	if m, _ := obj.lookup(name); m != nil {
		return fmt.Errorf("%w: %q", ErrServerExists, name)
	}
	return d.add(obj, name, entry)
}

// ReplaceServer replaces the entry of server name with entry.
func (d *Doc) ReplaceServer(name string, entry any) error {
	obj := d.servers()
	if obj == nil {
		return fmt.Errorf("%w: %q", ErrNoServer, name)
	}
	m, _ := obj.lookup(name)
	if m == nil {
		return fmt.Errorf("%w: %q", ErrNoServer, name)
	}
	return d.replace(m, entry)
}

// RemoveServer removes the entry of server name, with its comma, and its
// line when it had one of its own.
func (d *Doc) RemoveServer(name string) error {
	obj := d.servers()
	if obj == nil {
		return fmt.Errorf("%w: %q", ErrNoServer, name)
	}
	m, i := obj.lookup(name)
	if m == nil {
		return fmt.Errorf("%w: %q", ErrNoServer, name)
	}
	var start, end int
	switch {
	case m.comma >= 0:
		start, end = m.keyStart, m.comma+1
		// The rest of the line, if blank, goes too; then so does the
		// line's indentation.
		rest := end
		for rest < len(d.data) && (d.data[rest] == ' ' || d.data[rest] == '\t' || d.data[rest] == '\r') {
			rest++
		}
		if rest < len(d.data) && d.data[rest] == '\n' {
			if ls, ok := d.lineIndent(start); ok {
				start, end = start-len(ls), rest+1
			}
		}
	case i > 0:
		// The last member: the comma before it goes with it, and what
		// lies between (a comment about it).
		start, end = obj.members[i-1].value.end, m.value.end
	default:
		start, end = obj.start+1, obj.end-1 // the only member: {}
	}
	return d.splice(start, end, nil)
}

// set sets key of object obj to value.
func (d *Doc) set(obj *node, key string, value any) error {
	if m, _ := obj.lookup(key); m != nil {
		return d.replace(m, value)
	}
	return d.add(obj, key, value)
}

// replace replaces the value of member m.
func (d *Doc) replace(m *member, value any) error {
	indent, ok := d.lineIndent(m.keyStart)
	if !ok {
		indent = ""
	}
	text, err := d.marshal(value, indent, ok)
	if err != nil {
		return err
	}
	return d.splice(m.value.start, m.value.end, text)
}

// add adds key: value as the last member of object obj.
func (d *Doc) add(obj *node, key string, value any) error {
	k, err := json.Marshal(key)
	if err != nil {
		return err
	}
	if len(obj.members) == 0 {
		outer, _ := d.lineIndent(obj.start)
		indent := outer + d.unit()
		v, err := d.marshal(value, indent, true)
		if err != nil {
			return err
		}
		memberText := indent + string(k) + ": " + string(v)
		if inner := d.data[obj.start+1 : obj.end-1]; len(bytes.TrimSpace(inner)) != 0 {
			// Comments only: kept, and the member goes after them.
			closing := obj.end - 1
			if ind, ok := d.lineIndent(closing); ok {
				at := closing - len(ind)
				return d.splice(at, at, []byte(memberText+"\n"))
			}
			return d.splice(closing, closing, []byte("\n"+memberText+"\n"+outer))
		}
		return d.splice(obj.start, obj.end, []byte("{\n"+memberText+"\n"+outer+"}"))
	}
	last := obj.members[len(obj.members)-1]
	indent, lines := d.lineIndent(obj.members[0].keyStart)
	v, err := d.marshal(value, indent, lines)
	if err != nil {
		return err
	}
	if lines && last.comma >= 0 {
		// A trailing comma: the new member goes on a line of its own
		// after the last one's, with a comma too, and what follows the
		// comma on its line (a comment about the last member) stays there.
		eol := bytes.IndexByte(d.data[last.comma:], '\n')
		if eol >= 0 && !bytes.Contains(d.data[last.comma:last.comma+eol], []byte("/*")) {
			at := last.comma + eol
			return d.splice(at, at, []byte("\n"+indent+string(k)+": "+string(v)+","))
		}
	}
	sep := ", "
	if lines {
		sep = ",\n" + indent
	}
	return d.splice(last.value.end, last.value.end, []byte(sep+string(k)+": "+string(v)))
}

// splice replaces data[start:end] with text and parses the result.
func (d *Doc) splice(start, end int, text []byte) error {
	out := make([]byte, 0, len(d.data)-(end-start)+len(text))
	out = append(append(append(out, d.data[:start]...), text...), d.data[end:]...)
	if err := d.reset(out); err != nil {
		return fmt.Errorf("mcpfleet: config: the edit made the file unreadable (a bug): %w", err)
	}
	return nil
}

// lineIndent returns the indentation of the line pos is on, and whether
// only that indentation comes before pos on the line.
func (d *Doc) lineIndent(pos int) (string, bool) {
	ls := bytes.LastIndexByte(d.data[:pos], '\n') + 1
	i := ls
	for i < pos && (d.data[i] == ' ' || d.data[i] == '\t') {
		i++
	}
	return string(d.data[ls:i]), i == pos
}

// unit is the file's step of indentation: that of the first member of the
// top object, two spaces if it has none on a line of its own.
func (d *Doc) unit() string {
	if len(d.root.members) > 0 {
		if ind, ok := d.lineIndent(d.root.members[0].keyStart); ok && ind != "" {
			return ind
		}
	}
	return "  "
}

// marshal returns value as JSON: indented by the file's unit under a
// member indented by indent when lines says the object is written a member
// a line, else on one line. HTML characters stay as they are.
func (d *Doc) marshal(value any, indent string, lines bool) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if lines {
		enc.SetIndent(indent, d.unit())
	}
	if err := enc.Encode(value); err != nil {
		return nil, err
	}
	out := bytes.TrimRight(b.Bytes(), "\n")
	if !lines {
		out = bytes.ReplaceAll(bytes.ReplaceAll(out, []byte(`,"`), []byte(`, "`)), []byte(`":`), []byte(`": `))
	}
	return out, nil
}

// WriteFile replaces the file at path with data, if it still holds was
// (the text the edit started from): through a file written beside it and
// renamed over it, with the file's mode, so that no reader sees half of
// it. A path that is a symbolic link has its target replaced. A file that
// another user could have written is refused, as Load refuses it.
func WriteFile(path string, was, data []byte) error {
	target, err := filepath.EvalSymlinks(path)
	switch {
	case errors.Is(err, fs.ErrNotExist) && was == nil:
		target = path
	case err != nil:
		return fmt.Errorf("mcpfleet: config: %w", err)
	}
	mode := os.FileMode(0o600)
	if was != nil {
		fi, err := trustedConfig(target)
		if err != nil {
			return err
		}
		mode = fi.Mode().Perm()
		now, err := os.ReadFile(target)
		if err != nil {
			return fmt.Errorf("mcpfleet: config: %w", err)
		}
		if !bytes.Equal(now, was) {
			return fmt.Errorf("mcpfleet: config: %s changed while it was edited; try again", path)
		}
	} else if _, err := os.Stat(target); err == nil {
		return fmt.Errorf("mcpfleet: config: %s appeared while it was written; try again", path)
	} else if err := os.MkdirAll(filepath.Dir(target), 0o700); err != nil {
		return fmt.Errorf("mcpfleet: config: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(target), "."+filepath.Base(target)+".*")
	if err != nil {
		return fmt.Errorf("mcpfleet: config: %w", err)
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(mode); err != nil && runtime.GOOS != "windows" {
		tmp.Close()
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), target)
}
