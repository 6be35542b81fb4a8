package template

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hivecrew/hivecrew/core/vm"
)

// buildSpec is what a builder needs.
type buildSpec struct {
	manifest *Manifest
	options  Options
	// mirror overrides the manifest's; restoreImage a macOS manifest's.
	mirror, restoreImage string
	// dir is the template's folder; the build writes its files there.
	dir      string
	cacheDir string
	// agent is the guest agent binary to install.
	agent string
	// owner gets the guestWritable folders (nil: root keeps them).
	owner *Owner
	log   io.Writer
	track *tracker
	// reserve holds a host VM slot for a machine the build runs itself
	// (the macOS installer), as the pool's ReserveSlot does.
	reserve func(ctx context.Context, what string, cpus, memMB int, onWait func(reason string)) (release func(), err error)
}

// sealMachine copies a stopped machine's disk into the template folder dst.
func sealMachine(ctx context.Context, m vm.Machine, dst string, log io.Writer, track *tracker) error {
	spec := m.Spec()
	switch spec.Template.Kind {
	case vm.KindRootFS:
		lower, upper, err := layersOf(m)
		if err != nil {
			return err
		}
		return sealRootFS(ctx, lower, upper, dst, log, track)
	case vm.KindMacOS:
		return sealBundle(ctx, spec.Dir, dst, log, track)
	}
	return fmt.Errorf("machines of %q templates cannot be sealed", spec.Template.Kind)
}

// layered is a machine whose root filesystem is a copy-on-write overlay
// (*sandbox.Machine).
type layered interface {
	Layers() (lower, upper string, err error)
}

func layersOf(m vm.Machine) (string, string, error) {
	l, ok := m.(layered)
	if !ok {
		return "", "", fmt.Errorf("vm %s does not say where its root filesystem's layers are", m.Spec().ID)
	}
	return l.Layers()
}

// command runs one step of a build: its output goes to the build log and,
// line by line, to onLine; it is killed with its process group when ctx
// ends. A failure names the step and quotes the last lines of its output.
func command(ctx context.Context, log io.Writer, onLine func(string), name string, cmd *exec.Cmd) error {
	cmd.SysProcAttr = procAttr()
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 10 * time.Second
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	fmt.Fprintf(log, "$ %s\n", strings.Join(cmd.Args, " "))
	tail := &lastLines{n: 8}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			fmt.Fprintln(log, line)
			tail.add(line)
			if onLine != nil {
				onLine(line)
			}
		}
		io.Copy(io.Discard, pr)
	}()
	err := cmd.Start()
	if err == nil {
		err = cmd.Wait()
	}
	pw.Close()
	wg.Wait()
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("%s: %w", name, context.Cause(ctx))
		}
		return fmt.Errorf("%s failed (%v): %s", name, err, tail.String())
	}
	return nil
}

// lastLines keeps the last n lines it was given.
type lastLines struct {
	n     int
	lines []string
}

func (l *lastLines) add(s string) {
	if strings.TrimSpace(s) == "" {
		return
	}
	l.lines = append(l.lines, s)
	if len(l.lines) > l.n {
		l.lines = l.lines[len(l.lines)-l.n:]
	}
}

func (l *lastLines) String() string { return strings.Join(l.lines, " | ") }

// agentVersion asks a guest agent binary for its version.
func agentVersion(ctx context.Context, bin string) (string, error) {
	out, err := exec.CommandContext(ctx, bin, "--version").Output()
	if err != nil {
		return "", fmt.Errorf("ask %s for its version: %w", bin, err)
	}
	f := strings.Fields(string(out))
	if len(f) < 2 {
		return "", fmt.Errorf("%s --version printed %q", bin, out)
	}
	return f[len(f)-1], nil
}

// copyFile copies src to dst (created or truncated) with mode.
func copyFile(src, dst string, mode os.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, mode)
	if err != nil {
		return err
	}
	_, err = io.Copy(out, in)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(dst, mode)
	}
	return err
}

var errNoAgent = errors.New("no guest agent binary is configured")
