package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"strings"
)

// lintDelegateOrder finds, in a Go file, a handler set on a delegate after
// the delegate was installed: x.SetDelegate(d) (or SetDelegateObject, or
// any Set…Delegate(d)) and then d.SetSomething(…) later in the same
// function. AppKit (NSApplication, NSWindow) asks a delegate which of its
// optional methods it implements when it is installed and may keep the
// answer; darwinkit's delegates answer from the handlers set at that
// moment, so a later handler may never be called.
func lintDelegateOrder(path string, src []byte) []string {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, src, parser.SkipObjectResolution)
	if err != nil {
		return nil // the type-check reports syntax errors
	}
	var out []string
	for _, decl := range f.Decls {
		fn, ok := decl.(*ast.FuncDecl)
		if !ok || fn.Body == nil {
			continue
		}
		installed := map[string]token.Pos{} // delegate name: where it was installed
		ast.Inspect(fn.Body, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok || !strings.HasPrefix(sel.Sel.Name, "Set") {
				return true
			}
			if isDelegateInstall(sel.Sel.Name) && len(call.Args) == 1 {
				if arg, ok := call.Args[0].(*ast.Ident); ok {
					if _, seen := installed[arg.Name]; !seen {
						installed[arg.Name] = call.Pos()
					}
				}
				return true
			}
			recv, ok := sel.X.(*ast.Ident)
			if !ok {
				return true
			}
			if at, ok := installed[recv.Name]; ok && at < call.Pos() {
				out = append(out, fmt.Sprintf("%s:%d: %s.%s: a handler set after the delegate was installed (line %d): AppKit may never ask for it; set every handler first",
					path, fset.Position(call.Pos()).Line, recv.Name, sel.Sel.Name, fset.Position(at).Line))
			}
			return true
		})
	}
	return out
}

// isDelegateInstall reports whether a setter installs a delegate:
// SetDelegate, SetDelegateObject, SetUIDelegate, SetNavigationDelegate….
func isDelegateInstall(name string) bool {
	name = strings.TrimSuffix(name, "Object")
	return strings.HasSuffix(name, "Delegate")
}
