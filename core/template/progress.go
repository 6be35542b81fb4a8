package template

import (
	"strconv"
	"strings"
	"sync"
)

// Phases of a template build, in order.
const (
	PhaseQueued    = "queued"    // waiting for another build to end
	PhaseBootstrap = "bootstrap" // debootstrap of the base system
	PhasePackages  = "packages"  // APT installs the package set
	PhaseConfigure = "configure" // agent, provisioning, clean-up
	PhaseDownload  = "download"  // the macOS restore image
	PhaseInstall   = "install"   // VZMacOSInstaller
	PhaseSetup     = "setup"     // macOS, unattended: Setup Assistant and the agent
	PhaseStop      = "stop"      // sealing: the VM stops
	PhaseCopy      = "copy"      // sealing: its disk becomes the template's
	PhaseRegister  = "register"
	PhaseDone      = "done"
)

// Progress is how far a build has come.
type Progress struct {
	Phase string
	// Percent of the whole build, 0 to 100, never going back.
	Percent float64
	// Message says what happens now ("Unpacking xterm").
	Message string
}

// span is the share of a build a phase takes, in percent of the whole.
type span struct{ from, to float64 }

// Spans of the phases of each kind of build.
var (
	rootfsSpans = map[string]span{
		PhaseQueued: {0, 0}, PhaseBootstrap: {0, 40}, PhasePackages: {40, 90}, PhaseConfigure: {90, 98}, PhaseRegister: {98, 100},
	}
	macosSpans = map[string]span{
		PhaseQueued: {0, 0}, PhaseDownload: {0, 50}, PhaseInstall: {50, 98}, PhaseRegister: {98, 100},
	}
	macosUnattendedSpans = map[string]span{
		PhaseQueued: {0, 0}, PhaseDownload: {0, 35}, PhaseInstall: {35, 70}, PhaseSetup: {70, 98}, PhaseRegister: {98, 100},
	}
	sealSpans = map[string]span{
		PhaseQueued: {0, 0}, PhaseStop: {0, 10}, PhaseCopy: {10, 98}, PhaseRegister: {98, 100},
	}
)

// tracker turns the progress of phases into the progress of a build and
// hands it to a report function. It is safe for concurrent use.
type tracker struct {
	spans  map[string]span
	report func(Progress)

	// mu guards last.
	mu   sync.Mutex
	last Progress
}

func newTracker(spans map[string]span, report func(Progress)) *tracker {
	if report == nil {
		report = func(Progress) {}
	}
	return &tracker{spans: spans, report: report}
}

// set reports that phase is fraction (0..1) done, with a message ("" keeps
// the last one).
func (t *tracker) set(phase string, fraction float64, msg string) {
	s, ok := t.spans[phase]
	if !ok {
		s = span{0, 100}
	}
	fraction = min(max(fraction, 0), 1)
	t.mu.Lock()
	p := Progress{Phase: phase, Percent: s.from + (s.to-s.from)*fraction, Message: msg}
	if p.Percent < t.last.Percent {
		p.Percent = t.last.Percent
	}
	if p.Message == "" && p.Phase == t.last.Phase {
		p.Message = t.last.Message
	}
	t.last = p
	t.mu.Unlock()
	t.report(p)
}

// debootstrapProgress follows debootstrap's "I: ..." lines. debootstrap
// does not say how many packages it will take before it retrieves them,
// so the count seen so far (at least expected) stands for the total.
type debootstrapProgress struct {
	expected  int
	retrieved map[string]bool
	done      map[string]int // per stage: packages seen
}

func newDebootstrapProgress(expected int) *debootstrapProgress {
	return &debootstrapProgress{expected: expected, retrieved: map[string]bool{}, done: map[string]int{}}
}

// debootstrapStages are debootstrap's stages and the part of its phase
// each covers (retrieving and validating share theirs).
var debootstrapStages = map[string]span{
	"Retrieving": {0, 0.30}, "Validating": {0, 0.30}, "Extracting": {0.30, 0.45},
	"Unpacking": {0.45, 0.75}, "Configuring": {0.75, 0.98},
}

// line takes one line of debootstrap's output and returns the phase's
// fraction and a message, or ok false for a line that says nothing new.
func (d *debootstrapProgress) line(l string) (fraction float64, msg string, ok bool) {
	rest, found := strings.CutPrefix(strings.TrimSpace(l), "I: ")
	if !found {
		return 0, "", false
	}
	if strings.HasPrefix(rest, "Base system installed successfully") {
		return 1, "Base system installed", true
	}
	verb, obj, _ := strings.Cut(rest, " ")
	st, known := debootstrapStages[verb]
	if !known {
		return 0, "", false
	}
	f := strings.Fields(obj)
	if len(f) == 0 || strings.HasSuffix(obj, "...") && (strings.Contains(obj, "packages") || strings.Contains(obj, "system")) ||
		verb == "Retrieving" && (f[0] == "InRelease" || f[0] == "Release" || f[0] == "Packages") || verb == "Validating" && f[0] == "Packages" {
		return st.from, rest, true // the start of a stage
	}
	pkg := strings.TrimSuffix(f[0], "...")
	n := 0
	if verb == "Retrieving" || verb == "Validating" {
		d.retrieved[pkg] = true
		n = len(d.retrieved)
	} else {
		d.done[verb]++
		n = d.done[verb]
	}
	total := max(d.expected, len(d.retrieved))
	return st.from + (st.to-st.from)*min(float64(n)/float64(total), 1), verb + " " + pkg, true
}

// aptProgress follows APT's status lines (-o APT::Status-Fd): downloads
// ("dlstatus:N:PERCENT:TEXT") take the first half of the phase, dpkg
// ("pmstatus:PKG:PERCENT:TEXT") the second.
func aptProgress(line string) (fraction float64, msg string, ok bool) {
	parts := strings.SplitN(strings.TrimSpace(line), ":", 4)
	if len(parts) != 4 {
		return 0, "", false
	}
	pct, err := strconv.ParseFloat(parts[2], 64)
	if err != nil || pct < 0 || pct > 100 {
		return 0, "", false
	}
	switch parts[0] {
	case "dlstatus":
		return pct / 200, parts[3], true
	case "pmstatus":
		return 0.5 + pct/200, parts[3], true
	}
	return 0, "", false
}
