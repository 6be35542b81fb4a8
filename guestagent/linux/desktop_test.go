package linux

import (
	"slices"
	"strings"
	"testing"
)

func TestParseDesktopEntry(t *testing.T) {
	e, ok := parseDesktopEntry("org.xfce.mousepad", strings.NewReader(`[Desktop Entry]
Name=Mousepad
Name[de]=Mauspad
Exec=mousepad %U
Type=Application

[Desktop Action new]
Name=New Window
Exec=mousepad --new
`))
	if !ok || e.Name != "Mousepad" || e.Exec != "mousepad %U" || e.NoShow {
		t.Fatalf("entry = %+v, %v", e, ok)
	}
	if _, ok := parseDesktopEntry("x", strings.NewReader("[Desktop Entry]\nType=Link\nURL=http://x\n")); ok {
		t.Fatal("a Link entry was accepted as an application")
	}
}

func TestExecArgs(t *testing.T) {
	for _, c := range []struct {
		exec  string
		files []string
		want  []string
	}{
		{"mousepad %U", []string{"/s/a.txt", "/s/b.txt"}, []string{"mousepad", "/s/a.txt", "/s/b.txt"}},
		{"gedit %f", []string{"/s/my file.txt"}, []string{"gedit", "/s/my file.txt"}},
		{"xterm", []string{"/s/a"}, []string{"xterm", "/s/a"}},
		{`sh -c "echo \"hi\"; sleep 1" %i %c`, nil, []string{"sh", "-c", `echo "hi"; sleep 1`}},
		{"app --pct=100%% %u", nil, []string{"app", "--pct=100%"}},
	} {
		if got := execArgs(c.exec, c.files); !slices.Equal(got, c.want) {
			t.Errorf("execArgs(%q, %q) = %q, want %q", c.exec, c.files, got, c.want)
		}
	}
}
