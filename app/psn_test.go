package main

import (
	"bytes"
	"slices"
	"strings"
	"testing"
)

// TestProcessSerialNumberIsIgnored answers issue 16.8: the -psn_ argument
// LaunchServices adds on a Finder launch is dropped, so the app runs
// instead of exiting with a usage error; nothing else is dropped.
func TestProcessSerialNumberIsIgnored(t *testing.T) {
	got := dropProcessSerialNumber([]string{"-psn_0_1234567", "--home", "/h", "ls", "-psn"})
	if !slices.Equal(got, []string{"--home", "/h", "ls", "-psn"}) {
		t.Fatalf("filtered = %q", got)
	}
	if got := dropProcessSerialNumber(nil); len(got) != 0 {
		t.Fatalf("filtered nil = %q", got)
	}
	var out, errb bytes.Buffer
	if code := run([]string{"-psn_0_98765", "version"}, &out, &errb); code != 0 || !strings.HasPrefix(out.String(), "hivecrew ") {
		t.Fatalf("run with -psn_: exit %d, stdout %q, stderr %q", code, out.String(), errb.String())
	}
	// Without the filter the same argument is an unknown flag.
	out.Reset()
	errb.Reset()
	if code := run([]string{"-psnx", "version"}, &out, &errb); code != 2 {
		t.Fatalf("an unknown flag: exit %d (%s)", code, errb.String())
	}
}
