package template

import (
	"fmt"
	"strings"
	"testing"
)

// TestDebootstrapProgress: debootstrap's own lines move the bootstrap
// phase forward from retrieving through configuring to done, never back.
func TestDebootstrapProgress(t *testing.T) {
	var log strings.Builder
	log.WriteString("I: Retrieving InRelease \nI: Checking Release signature\nI: Retrieving Packages \nI: Validating Packages \n")
	log.WriteString("I: Resolving dependencies of required packages...\nI: Checking component main on http://deb.debian.org/debian...\n")
	pkgs := []string{}
	for i := range 90 {
		pkgs = append(pkgs, fmt.Sprintf("pkg%d", i))
	}
	for _, p := range pkgs {
		fmt.Fprintf(&log, "I: Retrieving %s 1.0-1\nI: Validating %s 1.0-1\n", p, p)
	}
	log.WriteString("I: Chosen extractor for .deb packages: dpkg-deb\n")
	for _, p := range pkgs {
		fmt.Fprintf(&log, "I: Extracting %s...\n", p)
	}
	log.WriteString("I: Installing core packages...\nI: Unpacking required packages...\n")
	for _, p := range pkgs {
		fmt.Fprintf(&log, "I: Unpacking %s...\n", p)
	}
	log.WriteString("I: Configuring required packages...\n")
	for _, p := range pkgs {
		fmt.Fprintf(&log, "I: Configuring %s...\n", p)
	}
	log.WriteString("W: some warning\nI: Base system installed successfully.\n")

	d := newDebootstrapProgress(90)
	var got []float64
	var msgs []string
	for _, l := range strings.Split(log.String(), "\n") {
		if f, msg, ok := d.line(l); ok {
			got = append(got, f)
			msgs = append(msgs, msg)
		}
	}
	if len(got) < 4*90 {
		t.Fatalf("only %d progress lines", len(got))
	}
	at := func(msg string) float64 {
		for i, m := range msgs {
			if m == msg {
				return got[i]
			}
		}
		t.Fatalf("no progress for %q", msg)
		return 0
	}
	if f := at("Retrieving pkg89"); f < 0.29 || f > 0.31 {
		t.Errorf("all retrieved = %.2f, want 0.30", f)
	}
	if f := at("Extracting pkg44"); f < 0.36 || f > 0.39 {
		t.Errorf("half extracted = %.2f", f)
	}
	if f := at("Configuring pkg89"); f < 0.97 || f > 0.99 {
		t.Errorf("all configured = %.2f", f)
	}
	if got[len(got)-1] != 1 || msgs[len(msgs)-1] != "Base system installed" {
		t.Errorf("last = %.2f %q", got[len(got)-1], msgs[len(msgs)-1])
	}
	if _, _, ok := d.line("W: Failure while configuring base packages."); ok {
		t.Error("a warning moved the progress")
	}
}

// TestAptProgress: APT's status lines map downloads to the first half of
// the packages phase and dpkg to the second; anything else is ignored.
func TestAptProgress(t *testing.T) {
	for line, want := range map[string]float64{
		"dlstatus:1:0.0:Retrieving file 1 of 174":           0,
		"dlstatus:174:100:Retrieving file 174 of 174":       0.5,
		"pmstatus:xterm:50.0:Unpacking xterm (amd64)":       0.75,
		"pmstatus:dpkg-exec:100:Running dpkg":               1,
		"pmerror:xterm:50:subprocess failed":                -1,
		"dlstatus:1:bad:Retrieving":                         -1,
		"media-change: please insert the disc labeled: foo": -1,
	} {
		f, msg, ok := aptProgress(line)
		if want < 0 {
			if ok {
				t.Errorf("%q gave progress %.2f", line, f)
			}
			continue
		}
		if !ok || f != want || msg == "" {
			t.Errorf("%q = %.3f %q %v, want %.3f", line, f, msg, ok, want)
		}
	}
}

// TestTrackerNeverGoesBack: the build's percentage follows the phases'
// spans and never decreases, and a message carries over within a phase.
func TestTrackerNeverGoesBack(t *testing.T) {
	var seen []Progress
	tr := newTracker(rootfsSpans, func(p Progress) { seen = append(seen, p) })
	tr.set(PhaseBootstrap, 0.5, "half")
	tr.set(PhaseBootstrap, 0.25, "")
	tr.set(PhasePackages, 0.5, "apt")
	tr.set(PhaseRegister, 1, "done")
	want := []Progress{{PhaseBootstrap, 20, "half"}, {PhaseBootstrap, 20, "half"}, {PhasePackages, 65, "apt"}, {PhaseRegister, 100, "done"}}
	if fmt.Sprint(seen) != fmt.Sprint(want) {
		t.Errorf("progress = %v, want %v", seen, want)
	}
}
