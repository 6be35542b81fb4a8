package main

import (
	"debug/macho"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// toolchain is the C toolchain of the clang build.
type toolchain struct {
	clang string
	// lld links with ld64.lld (-fuse-ld=lld): off a Mac, where the
	// system's ld cannot link Mach-O.
	lld bool
	// links is a folder put first on PATH (off a Mac): strip (llvm-strip),
	// ld64.lld and dsymutil, by the names clang and Go's link look for.
	links string
}

// tool is one program of the Linux toolchain: the name it is looked up
// by, the names it is installed as (Debian's versioned ones included), and
// the Debian package that has it.
type tool struct {
	as    string
	names []string
	pkg   string
}

// clangNames are the names clang goes by; Debian's clang-19 package
// installs clang-19.
var clangNames = []string{"clang", "clang-19"}

// linuxTools are what a darwin link needs besides clang off a Mac. Go's
// darwin link runs dsymutil and then strip on the executable, each found
// through `clang --print-prog-name`, which falls back to PATH: there the
// system's strip (GNU binutils) does not read Mach-O.
var linuxTools = []tool{
	{as: "ld64.lld", names: []string{"ld64.lld", "ld64.lld-19"}, pkg: "lld-19"},
	{as: "strip", names: []string{"llvm-strip", "llvm-strip-19"}, pkg: "llvm-19"},
	{as: "dsymutil", names: []string{"dsymutil", "dsymutil-19"}, pkg: "llvm-19"},
}

// findToolchain finds clang, and off a Mac (host is runtime.GOOS) the
// linker, strip and dsymutil, linking them into links by the names the
// build looks for.
func findToolchain(host, links string) (toolchain, error) {
	clang, err := lookPath(clangNames)
	if err != nil {
		return toolchain{}, fmt.Errorf("clang is not installed (Debian: apt-get install clang-19 lld-19 llvm-19)")
	}
	tc := toolchain{clang: clang}
	if host == "darwin" {
		return tc, nil // Xcode's ld, strip and dsymutil
	}
	if err := os.MkdirAll(links, 0o755); err != nil {
		return toolchain{}, err
	}
	for _, t := range linuxTools {
		path, err := lookPath(t.names)
		if err != nil {
			return toolchain{}, fmt.Errorf("%s is not installed: the darwin link needs it off a Mac (Debian: apt-get install %s)", strings.Join(t.names, " or "), t.pkg)
		}
		if err := os.Symlink(path, filepath.Join(links, t.as)); err != nil {
			return toolchain{}, err
		}
	}
	tc.lld, tc.links = true, links
	return tc, nil
}

// lookPath returns the first of names found on PATH.
func lookPath(names []string) (string, error) {
	for _, n := range names {
		if p, err := exec.LookPath(n); err == nil {
			return p, nil
		}
	}
	return "", exec.ErrNotFound
}

// lcBuildVersion is the Mach-O load command that names the platform and
// the minimum OS (debug/macho does not decode it).
const lcBuildVersion = 0x32

// describeExecutable checks that path is an arm64 Mach-O executable and
// says so, with its size and the macOS versions its LC_BUILD_VERSION
// names (the deployment target, and the SDK it was linked against).
func describeExecutable(path string) (string, error) {
	f, err := macho.Open(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return "", fmt.Errorf("no executable was written (%s)", filepath.Base(path))
		}
		return "", fmt.Errorf("%s is not a Mach-O file: %w", filepath.Base(path), err)
	}
	defer f.Close()
	if f.Cpu != macho.CpuArm64 || f.Type != macho.TypeExec {
		return "", fmt.Errorf("%s is a Mach-O %s of type %d, not an arm64 executable", filepath.Base(path), f.Cpu, f.Type)
	}
	fi, err := os.Stat(path)
	if err != nil {
		return "", err
	}
	desc := fmt.Sprintf("%s, arm64 Mach-O executable, %.1f MB", filepath.Base(path), float64(fi.Size())/1e6)
	for _, l := range f.Loads {
		raw := l.Raw()
		// cmd, cmdsize, platform, minos, sdk, ntools
		if len(raw) < 20 || f.ByteOrder.Uint32(raw) != lcBuildVersion {
			continue
		}
		desc += fmt.Sprintf(", minimum macOS %s, SDK %s", machoVersion(f.ByteOrder, raw[12:16]), machoVersion(f.ByteOrder, raw[16:20]))
	}
	return desc, nil
}

// machoVersion reads a Mach-O version: xxxx.yy.zz in nibbles.
func machoVersion(order binary.ByteOrder, b []byte) string {
	v := order.Uint32(b)
	s := fmt.Sprintf("%d.%d", v>>16, (v>>8)&0xff)
	if p := v & 0xff; p != 0 {
		s += fmt.Sprintf(".%d", p)
	}
	return s
}
