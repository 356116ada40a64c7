// Package apicheck records the exported API of the module's public packages
// in api/*.txt and tells what changed against that record. It stands where
// golang.org/x/exp/cmd/apidiff would, over go/types and the compiler's
// export data, so that the check needs nothing beyond the Go toolchain.
//
// One line per exported name, in the form of the Go distribution's own
// api/go1.*.txt: "func New(...Option) *Manager", "method (*Manager) Close()
// error", "type ServerSpec struct, Stdio *stdio.Spec". A line removed or
// changed is an incompatible change; a line added is a compatible one.
// Either way the record is updated in the same change (make api-update),
// with an entry in CHANGELOG.md.
package apicheck

import (
	"bytes"
	"encoding/json"
	"fmt"
	"go/importer"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
)

// Packages are the module's public packages whose API is recorded: every
// importable package of the core module but the command and the examples.
// The nested modules (otel, llm/<provider>, store/<engine>) are not
// recorded yet.
var Packages = []string{
	"client",
	"fleet",
	"gateway",
	"lifecycle",
	"llm",
	"snapshot",
	"store",
	"toolsearch",
	"transport",
	"transport/http",
	"transport/http/oauth",
	"transport/stdio",
}

// File is the record's file of the package at rel (a path below the
// module's root): api/client.txt, api/transport_http.txt.
func File(rel string) string {
	return path.Join("api", strings.ReplaceAll(rel, "/", "_")+".txt")
}

// Dump returns the API of the packages at rels (paths below dir, the
// module's root), one sorted list of lines per package.
func Dump(dir string, rels []string) (map[string][]string, error) {
	args := []string{"list", "-export", "-deps", "-json=ImportPath,Export,Dir,Error"}
	for _, r := range rels {
		args = append(args, "./"+r)
	}
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("apicheck: go list: %v: %s", err, stderr.Bytes())
	}
	exports := map[string]string{} // import path → export data file
	byDir := map[string]string{}   // directory → import path
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p struct {
			ImportPath, Export, Dir string
			Error                   *struct{ Err string }
		}
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			return nil, fmt.Errorf("apicheck: go list: %v", err)
		}
		if p.Error != nil {
			return nil, fmt.Errorf("apicheck: %s: %s", p.ImportPath, p.Error.Err)
		}
		exports[p.ImportPath] = p.Export
		byDir[p.Dir] = p.ImportPath
	}
	absRoot, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	if r, err := filepath.EvalSymlinks(absRoot); err == nil {
		absRoot = r
	}
	fset := token.NewFileSet()
	imp := importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		f, ok := exports[path]
		if !ok || f == "" {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(f)
	})
	api := make(map[string][]string, len(rels))
	for _, r := range rels {
		ip, ok := byDir[filepath.Join(absRoot, filepath.FromSlash(r))]
		if !ok {
			return nil, fmt.Errorf("apicheck: %s: not listed by go list", r)
		}
		pkg, err := imp.Import(ip)
		if err != nil {
			return nil, fmt.Errorf("apicheck: %s: %v", ip, err)
		}
		api[r] = Lines(pkg)
	}
	return api, nil
}

// Lines returns the API of pkg: a line per exported name, exported field,
// interface method and method, sorted.
func Lines(pkg *types.Package) []string {
	q := func(p *types.Package) string {
		if p == pkg {
			return ""
		}
		return p.Name()
	}
	var lines []string
	add := func(format string, a ...any) { lines = append(lines, fmt.Sprintf(format, a...)) }
	scope := pkg.Scope()
	for _, name := range scope.Names() {
		obj := scope.Lookup(name)
		if !obj.Exported() {
			continue
		}
		switch o := obj.(type) {
		case *types.Const:
			add("const %s %s = %s", name, types.TypeString(o.Type(), q), o.Val().ExactString())
		case *types.Var:
			add("var %s %s", name, types.TypeString(o.Type(), q))
		case *types.Func:
			add("func %s%s", name, strings.TrimPrefix(types.TypeString(o.Type(), q), "func"))
		case *types.TypeName:
			typeLines(o, q, add)
		}
	}
	sort.Strings(lines)
	return slices.Compact(lines)
}

func typeLines(o *types.TypeName, q types.Qualifier, add func(string, ...any)) {
	name := o.Name()
	if o.IsAlias() {
		add("type %s = %s", name, types.TypeString(o.Type(), q))
		return
	}
	named, ok := o.Type().(*types.Named)
	if !ok {
		return
	}
	if tp := named.TypeParams(); tp.Len() > 0 {
		var ps []string
		for i := range tp.Len() {
			p := tp.At(i)
			ps = append(ps, p.Obj().Name()+" "+types.TypeString(p.Constraint(), q))
		}
		name += "[" + strings.Join(ps, ", ") + "]"
	}
	switch u := named.Underlying().(type) {
	case *types.Struct:
		add("type %s struct", name)
		for f := range u.Fields() {
			if f.Exported() {
				if f.Embedded() {
					add("type %s struct, embedded %s", name, types.TypeString(f.Type(), q))
				} else {
					add("type %s struct, %s %s", name, f.Name(), types.TypeString(f.Type(), q))
				}
			}
		}
	case *types.Interface:
		add("type %s interface", name)
		for i := range u.NumMethods() {
			m := u.Method(i)
			if m.Exported() {
				add("type %s interface, %s%s", name, m.Name(), strings.TrimPrefix(types.TypeString(m.Type(), q), "func"))
			}
		}
	default:
		add("type %s %s", name, types.TypeString(u, q))
	}
	for m := range named.Methods() {
		if !m.Exported() {
			continue
		}
		recv := o.Name()
		if _, ptr := m.Signature().Recv().Type().(*types.Pointer); ptr {
			recv = "*" + recv
		}
		add("method (%s) %s%s", recv, m.Name(), strings.TrimPrefix(types.TypeString(m.Type(), q), "func"))
	}
}

// Diff returns the lines of want missing from got (removed or changed:
// incompatible) and those of got missing from want (added).
func Diff(want, got []string) (removed, added []string) {
	w := make(map[string]bool, len(want))
	for _, l := range want {
		w[l] = true
	}
	g := make(map[string]bool, len(got))
	for _, l := range got {
		g[l] = true
		if !w[l] {
			added = append(added, l)
		}
	}
	for _, l := range want {
		if !g[l] {
			removed = append(removed, l)
		}
	}
	return removed, added
}
