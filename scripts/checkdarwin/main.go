// Command checkdarwin type-checks the project's packages as they build for
// darwin/arm64 with cgo, on any OS, without a C compiler or the macOS SDK;
// lints their darwin-only code for deprecated and nil-returning Apple APIs
// (lint.go); and, given a macOS SDK, compiles their cgo and Objective-C
// with clang and links the executables (crosscompile.go, toolchain.go).
// With -sdk-check it only says whether a macOS SDK is new enough for
// Hivecrew (sdk.go): make app runs that first.
//
// `go list -deps` under GOOS=darwin GOARCH=arm64 CGO_ENABLED=1 picks each
// package's file set (it never runs cgo); go/types then checks every package
// from source in dependency order, with FakeImportC so `import "C"` and C.x
// references type-check. Dependencies (the standard library and modules) are
// checked without function bodies and their errors ignored; the packages named
// on the command line are checked in full and any error fails the run.
//
//	go run ./scripts/checkdarwin [-C dir] [packages]   (default ./...)
//	go run ./scripts/checkdarwin -sdk-check SDK
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

func main() {
	dir := flag.String("C", ".", "directory of the module to check")
	sdkCheck := flag.String("sdk-check", "", "only check that the macOS SDK at this path is macOS "+minMacOS+" or later")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: checkdarwin [-C dir] [packages] | checkdarwin -sdk-check SDK")
		flag.PrintDefaults()
	}
	flag.Parse()
	if *sdkCheck != "" {
		v, err := checkSDK(*sdkCheck)
		if err != nil {
			fmt.Fprintln(os.Stderr, "check-darwin:", err)
			os.Exit(1)
		}
		fmt.Printf("check-darwin: the macOS %s SDK at %s builds for macOS %s: ok\n", v, *sdkCheck, minMacOS)
		return
	}
	patterns := flag.Args()
	if len(patterns) == 0 {
		patterns = []string{"./..."}
	}
	res, err := check(context.Background(), *dir, patterns)
	if err != nil {
		fmt.Fprintln(os.Stderr, "check-darwin:", err)
		os.Exit(2)
	}
	res.report(os.Stdout)
	cc := runCrossCompile(context.Background(), *dir, patterns, res.pkgs)
	fmt.Println(cc.report())
	if len(res.Errors) > 0 || len(res.Lint) > 0 || cc.err != nil {
		os.Exit(1)
	}
}

// target is the platform checked.
var targetEnv = []string{"GOOS=darwin", "GOARCH=arm64", "CGO_ENABLED=1"}

// listedPackage is the part of `go list -json` output the checker needs.
type listedPackage struct {
	ImportPath string
	Dir        string
	Name       string
	GoFiles    []string
	CgoFiles   []string
	MFiles     []string
	CFiles     []string
	HFiles     []string
	ImportMap  map[string]string
	Deps       []string
	Standard   bool
	DepOnly    bool
	Module     *struct{ GoVersion string }
	Error      *struct{ Err string }
}

// result is what a check found.
type result struct {
	Own    int      // packages checked in full
	Deps   int      // dependencies checked for their declarations
	Darwin int      // own files that only darwin builds include
	Errors []string // "file:line:col: message", own packages only
	// Lint are the lint's findings (lint.go) in own darwin-only code, and
	// Linted the number of files it read.
	Lint     []string
	Linted   int
	Duration time.Duration
	// pkgs are the packages listed, dependencies first.
	pkgs []listedPackage
}

func (r result) report(w io.Writer) {
	for _, e := range r.Errors {
		fmt.Fprintln(w, e)
	}
	for _, e := range r.Lint {
		fmt.Fprintln(w, e)
	}
	fmt.Fprintf(w, "check-darwin: %d packages (%d darwin-only files) type-checked for darwin/arm64 against %d dependencies in %s: %d errors\n",
		r.Own, r.Darwin, r.Deps, r.Duration.Round(time.Millisecond), len(r.Errors))
	fmt.Fprintf(w, "check-darwin: deprecated and nil-returning Apple APIs: %d darwin files (Go, Objective-C, C, headers) linted: %d findings\n", r.Linted, len(r.Lint))
}

func check(ctx context.Context, dir string, patterns []string) (result, error) {
	start := time.Now()
	pkgs, err := goList(ctx, dir, patterns)
	if err != nil {
		return result{}, err
	}
	res := result{pkgs: pkgs}
	fset := token.NewFileSet()
	checked := map[string]*types.Package{"unsafe": types.Unsafe}
	sizes := types.SizesFor("gc", "arm64")
	for _, p := range pkgs {
		if p.ImportPath == "unsafe" {
			continue
		}
		own := !p.DepOnly
		if own && p.Error != nil {
			res.Errors = append(res.Errors, fmt.Sprintf("%s: %s", p.ImportPath, p.Error.Err))
			continue
		}
		files, darwinOnly, perr := parseFiles(fset, p, own)
		if own {
			res.Own++
			res.Darwin += len(darwinOnly)
			res.Errors = append(res.Errors, perr...)
			targets := lintTargets(p, darwinOnly)
			found, err := lintFiles(targets)
			if err != nil {
				return result{}, err
			}
			res.Linted += len(targets)
			res.Lint = append(res.Lint, found...)
		} else {
			res.Deps++
		}
		conf := types.Config{
			Importer:         importerFor(p, checked),
			FakeImportC:      true,
			IgnoreFuncBodies: !own,
			Sizes:            sizes,
			Error: func(err error) {
				if own {
					res.Errors = append(res.Errors, err.Error())
				}
			},
		}
		if p.Module != nil && p.Module.GoVersion != "" {
			conf.GoVersion = "go" + p.Module.GoVersion
		}
		// Errors are collected by conf.Error; the package is kept either way
		// so that its importers can still be checked.
		tp, _ := conf.Check(p.ImportPath, fset, files, nil)
		checked[p.ImportPath] = tp
	}
	res.Duration = time.Since(start)
	return res, nil
}

// goList lists the packages matching patterns and all their dependencies for
// the darwin target, dependencies first.
func goList(ctx context.Context, dir string, patterns []string) ([]listedPackage, error) {
	args := append([]string{"list", "-e", "-deps",
		"-json=ImportPath,Dir,Name,GoFiles,CgoFiles,MFiles,CFiles,HFiles,ImportMap,Deps,Standard,DepOnly,Module,Error"}, patterns...)
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), targetEnv...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list for darwin/arm64: %w: %s", err, strings.TrimSpace(stderr.String()))
	}
	var pkgs []listedPackage
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p listedPackage
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, fmt.Errorf("read go list output: %w", err)
		}
		pkgs = append(pkgs, p)
	}
	if len(pkgs) == 0 {
		return nil, fmt.Errorf("no packages match %s", strings.Join(patterns, " "))
	}
	return pkgs, nil
}

// parseFiles parses a package's darwin file set. For own packages it also
// lists the files a linux build would not include and reports syntax errors.
func parseFiles(fset *token.FileSet, p listedPackage, own bool) ([]*ast.File, []string, []string) {
	mode := parser.SkipObjectResolution
	if own {
		mode |= parser.ParseComments
	}
	var files []*ast.File
	var errs, darwinOnly []string
	for _, name := range append(append([]string{}, p.GoFiles...), p.CgoFiles...) {
		path := filepath.Join(p.Dir, name)
		f, err := parser.ParseFile(fset, path, nil, mode)
		if err != nil {
			if own {
				errs = append(errs, err.Error())
			}
			if f == nil {
				continue
			}
		}
		files = append(files, f)
		if own && (strings.HasSuffix(name, "_darwin.go") || strings.HasSuffix(name, "_darwin_arm64.go") || hasDarwinConstraint(f)) {
			darwinOnly = append(darwinOnly, path)
		}
	}
	return files, darwinOnly, errs
}

func hasDarwinConstraint(f *ast.File) bool {
	for _, cg := range f.Comments {
		if cg.Pos() > f.Package {
			break
		}
		for _, c := range cg.List {
			if strings.HasPrefix(c.Text, "//go:build") && strings.Contains(c.Text, "darwin") && !strings.Contains(c.Text, "!darwin") {
				return true
			}
		}
	}
	return false
}

// importerFor resolves the imports of p (through its ImportMap, for vendored
// standard-library packages) to packages already checked.
func importerFor(p listedPackage, checked map[string]*types.Package) types.Importer {
	return importerFunc(func(path string) (*types.Package, error) {
		if mapped, ok := p.ImportMap[path]; ok {
			path = mapped
		}
		if tp, ok := checked[path]; ok && tp != nil {
			return tp, nil
		}
		return nil, fmt.Errorf("package %s not checked (missing from go list output?)", path)
	})
}

type importerFunc func(path string) (*types.Package, error)

func (f importerFunc) Import(path string) (*types.Package, error) { return f(path) }
