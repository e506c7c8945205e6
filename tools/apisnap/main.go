// Command apisnap writes the exported API of the public packages of the
// given modules to text files, one per package, so that a change to the API
// shows as a change to a file in review.
//
// Usage:
//
//	apisnap -root MODULE_PATH -out DIR MODULE_DIR...
//
// A public package is one with Go files other than tests, not a command and
// with no "internal" or "testdata" element in its path. Its file in DIR is
// named after its import path below MODULE_PATH, with dots for slashes
// (driver/goredis becomes driver.goredis.txt). Each line states one part of
// the API, in the spirit of the Go distribution's api files, and the lines
// are sorted:
//
//	const Name Type = value
//	var Name Type
//	func Name(ParamTypes) Results
//	type Name struct
//	type Name struct, Field Type
//	type Name interface, Method(ParamTypes) Results
//	method (*Name) Method(ParamTypes) Results
//
// Parameter names are left out: renaming one changes nothing for a caller.
// Types of other packages are written with their full import path.
package main

import (
	"flag"
	"fmt"
	"go/types"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"golang.org/x/tools/go/packages"
)

func main() {
	rootPath := flag.String("root", "", "import path of the repository's root module")
	out := flag.String("out", "", "directory to write the API files into")
	flag.Parse()
	if *rootPath == "" || *out == "" || flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: apisnap -root MODULE_PATH -out DIR MODULE_DIR...")
		os.Exit(2)
	}
	if err := run(*rootPath, *out, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "apisnap:", err)
		os.Exit(1)
	}
}

func run(rootPath, out string, dirs []string) error {
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	for _, dir := range dirs {
		cfg := &packages.Config{
			Mode: packages.NeedName | packages.NeedFiles | packages.NeedTypes,
			Dir:  dir,
		}
		pkgs, err := packages.Load(cfg, "./...")
		if err != nil {
			return fmt.Errorf("%s: %w", dir, err)
		}
		for _, pkg := range pkgs {
			if !public(pkg) {
				continue
			}
			if len(pkg.Errors) > 0 {
				return fmt.Errorf("%s: %v", pkg.PkgPath, pkg.Errors[0])
			}
			name := fileName(rootPath, pkg.PkgPath)
			if name == "" {
				return fmt.Errorf("%s is not below %s", pkg.PkgPath, rootPath)
			}
			text := "pkg " + pkg.PkgPath + "\n" + strings.Join(apiLines(pkg.Types), "\n") + "\n"
			if err := os.WriteFile(filepath.Join(out, name), []byte(text), 0o644); err != nil {
				return err
			}
		}
	}
	return nil
}

func public(pkg *packages.Package) bool {
	if pkg.Name == "main" || len(pkg.GoFiles) == 0 {
		return false
	}
	for _, elem := range strings.Split(pkg.PkgPath, "/") {
		if elem == "internal" || elem == "testdata" {
			return false
		}
	}
	return true
}

func fileName(rootPath, pkgPath string) string {
	if pkgPath == rootPath {
		return "root.txt"
	}
	rel, ok := strings.CutPrefix(pkgPath, rootPath+"/")
	if !ok {
		return ""
	}
	return strings.ReplaceAll(rel, "/", ".") + ".txt"
}

func apiLines(pkg *types.Package) []string {
	q := types.RelativeTo(pkg)
	var lines []string
	scope := pkg.Scope()
	for _, name := range scope.Names() {
		obj := scope.Lookup(name)
		if !obj.Exported() {
			continue
		}
		switch obj := obj.(type) {
		case *types.Const:
			lines = append(lines, fmt.Sprintf("const %s %s = %s", name, types.TypeString(obj.Type(), q), obj.Val().ExactString()))
		case *types.Var:
			lines = append(lines, fmt.Sprintf("var %s %s", name, types.TypeString(obj.Type(), q)))
		case *types.Func:
			sig := obj.Type().(*types.Signature)
			lines = append(lines, "func "+name+typeParams(sig.TypeParams(), q)+signature(sig, q))
		case *types.TypeName:
			lines = append(lines, typeLines(obj, q)...)
		}
	}
	sort.Strings(lines)
	return lines
}

func typeLines(obj *types.TypeName, q types.Qualifier) []string {
	name := obj.Name()
	if obj.IsAlias() {
		return []string{fmt.Sprintf("type %s = %s", name, types.TypeString(types.Unalias(obj.Type()), q))}
	}
	named, ok := obj.Type().(*types.Named)
	if !ok {
		return []string{fmt.Sprintf("type %s %s", name, types.TypeString(obj.Type().Underlying(), q))}
	}
	head := "type " + name + typeParams(named.TypeParams(), q)
	var lines []string
	switch u := named.Underlying().(type) {
	case *types.Struct:
		lines = append(lines, head+" struct")
		for i := range u.NumFields() {
			f := u.Field(i)
			switch {
			case f.Embedded():
				lines = append(lines, fmt.Sprintf("%s struct, embedded %s", head, types.TypeString(f.Type(), q)))
			case f.Exported():
				lines = append(lines, fmt.Sprintf("%s struct, %s %s", head, f.Name(), types.TypeString(f.Type(), q)))
			}
		}
	case *types.Interface:
		lines = append(lines, head+" interface")
		unexported := false
		for i := range u.NumEmbeddeds() {
			lines = append(lines, fmt.Sprintf("%s interface, embedded %s", head, types.TypeString(u.EmbeddedType(i), q)))
		}
		for i := range u.NumExplicitMethods() {
			m := u.ExplicitMethod(i)
			if !m.Exported() {
				unexported = true
				continue
			}
			lines = append(lines, fmt.Sprintf("%s interface, %s%s", head, m.Name(), signature(m.Type().(*types.Signature), q)))
		}
		if unexported {
			lines = append(lines, head+" interface, unexported methods")
		}
	default:
		lines = append(lines, fmt.Sprintf("%s %s", head, types.TypeString(u, q)))
	}
	for i := range named.NumMethods() {
		m := named.Method(i)
		if !m.Exported() {
			continue
		}
		sig := m.Type().(*types.Signature)
		recv := name
		if _, ptr := sig.Recv().Type().(*types.Pointer); ptr {
			recv = "*" + name
		}
		lines = append(lines, fmt.Sprintf("method (%s) %s%s", recv, m.Name(), signature(sig, q)))
	}
	return lines
}

func typeParams(list *types.TypeParamList, q types.Qualifier) string {
	if list.Len() == 0 {
		return ""
	}
	var parts []string
	for i := range list.Len() {
		tp := list.At(i)
		parts = append(parts, tp.Obj().Name()+" "+types.TypeString(tp.Constraint(), q))
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// signature writes sig without parameter names.
func signature(sig *types.Signature, q types.Qualifier) string {
	params := tupleTypes(sig.Params(), q)
	if sig.Variadic() && len(params) > 0 {
		last := sig.Params().At(sig.Params().Len() - 1).Type().(*types.Slice)
		params[len(params)-1] = "..." + types.TypeString(last.Elem(), q)
	}
	s := "(" + strings.Join(params, ", ") + ")"
	results := tupleTypes(sig.Results(), q)
	switch len(results) {
	case 0:
	case 1:
		s += " " + results[0]
	default:
		s += " (" + strings.Join(results, ", ") + ")"
	}
	return s
}

func tupleTypes(t *types.Tuple, q types.Qualifier) []string {
	var out []string
	for i := range t.Len() {
		out = append(out, types.TypeString(t.At(i).Type(), q))
	}
	return out
}
