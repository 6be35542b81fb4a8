package sandbox

import "os"

// gateScript holds the sandbox's first process until the helper has put it
// into the machine's cgroups (cgroup v1 has no CLONE_INTO_CGROUP): it
// waits for a line on its stdin (a pipe from the helper; end of file, as
// when the helper dies, stops it), then becomes bubblewrap with /dev/null
// as stdin. The guest's first instruction thus runs capped.
const gateScript = `read -r go || exit 111; exec "$@" </dev/null`

// gate is the start gate of a sandbox's first process; nil without one.
type gate struct {
	r, w *os.File
}

func newGate() (*gate, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	return &gate{r: r, w: w}, nil
}

// wrap returns argv run behind the gate.
func (g *gate) wrap(argv []string) []string {
	if g == nil {
		return argv
	}
	return append([]string{"/bin/sh", "-c", gateScript, "hivecrew-gate"}, argv...)
}

// started closes the helper's copy of the read end (the child has its own).
func (g *gate) started() {
	if g != nil {
		g.r.Close()
	}
}

// open lets the gated process go on.
func (g *gate) open() error {
	if g == nil {
		return nil
	}
	_, err := g.w.Write([]byte("go\n"))
	if cerr := g.w.Close(); err == nil {
		err = cerr
	}
	return err
}

// close stops a gated process that was not let through (it exits), and
// releases the pipe.
func (g *gate) close() {
	if g != nil {
		g.r.Close()
		g.w.Close()
	}
}
