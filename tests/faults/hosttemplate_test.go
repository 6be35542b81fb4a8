package faults

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hivecrew/hivecrew/core/guest"
	"github.com/hivecrew/hivecrew/core/vm"
	vmsandbox "github.com/hivecrew/hivecrew/core/vm/sandbox"
	"github.com/hivecrew/hivecrew/core/vm/vmtest"
	"github.com/hivecrew/hivecrew/guestagent/protocol"
)

// startGuest starts one real sandbox of the default host template with
// network mode nm (and internet-mode allowlist allow) and connects to its
// guest agent.
func startGuest(t *testing.T, nm vm.NetworkMode, allow ...string) (vm.Machine, *guest.Client) {
	t.Helper()
	return startGuestWith(t, nil, nm, allow...)
}

// startGuestWith is startGuest with the spec changed by edit first.
func startGuestWith(t *testing.T, edit func(*vm.Spec), nm vm.NetworkMode, allow ...string) (vm.Machine, *guest.Client) {
	t.Helper()
	data := t.TempDir()
	b, err := vmsandbox.New(vmsandbox.Config{AgentBinary: filepath.Join(bin, "hivecrew-guestagent"), DataDir: data, AllowHosts: allow, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	id := "f" + randHex(4)
	spec := vm.Spec{ID: id, Template: vm.Template{ID: "host", Kind: vm.KindHost}, Dir: filepath.Join(data, "VMs", id), CPUs: 1, MemoryMB: 1024, Network: nm}
	if edit != nil {
		edit(&spec)
	}
	m, err := b.Create(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Delete(context.Background()) })
	if err := m.Start(ctx); err != nil {
		t.Fatal(err)
	}
	return m, vmtest.Connect(ctx, t, m)
}

func randHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// guestSh runs a shell command in the guest.
func guestSh(t *testing.T, c *guest.Client, cmd string) protocol.ShellResult {
	t.Helper()
	r, err := c.Shell(context.Background(), protocol.ShellParams{Command: cmd, TimeoutSeconds: 20})
	if err != nil {
		t.Fatalf("run %q: %v", cmd, err)
	}
	return r
}

// TestHostTemplateShowsNoHostData answers issue 24.2: a prompt-injected
// agent in the default host template lists and reads the host's folders
// (/work source trees, /srv, /opt, /var) and /etc secrets. World-readable
// canaries are planted in each; from the guest none can be listed or read,
// /etc/shadow is absent and /etc/machine-id is not the host's.
func TestHostTemplateShowsNoHostData(t *testing.T) {
	tag := randHex(6)
	secret := "canary-" + tag
	var dirs []string
	for _, parent := range []string{"/srv", "/opt", "/var/tmp", "/work", "/var/lib"} {
		d := filepath.Join(parent, "canary-"+tag)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(d) })
		if err := os.WriteFile(filepath.Join(d, "secret"), []byte(secret), 0o644); err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, d)
	}
	_, c := startGuest(t, vm.NetworkOffline)
	for _, d := range dirs {
		r := guestSh(t, c, "ls -a "+filepath.Dir(d)+"; cat "+d+"/secret; ls -a "+d)
		if r.ExitCode == 0 || strings.Contains(r.Stdout, secret) || strings.Contains(r.Stdout, "canary-"+tag) {
			t.Errorf("the guest sees %s: exit %d, %q", d, r.ExitCode, r.Stdout)
		}
	}
	// Whole host folders are absent, not just emptied.
	r := guestSh(t, c, "ls -a /")
	for _, absent := range []string{"work", "srv", "opt", "boot"} {
		for _, n := range strings.Fields(r.Stdout) {
			if n == absent {
				t.Errorf("/%s exists in the guest: %q", absent, r.Stdout)
			}
		}
	}
	if r := guestSh(t, c, "test -e /etc/shadow || test -e /etc/gshadow || test -e /etc/ssh || test -e /etc/subuid"); r.ExitCode == 0 {
		t.Error("/etc/shadow, /etc/gshadow, /etc/ssh or /etc/subuid exists in the guest")
	}
	if r := guestSh(t, c, "cat /etc/resolv.conf"); r.ExitCode == 0 {
		t.Errorf("an offline guest has a resolv.conf: %q", r.Stdout)
	}
	host, err := os.ReadFile("/etc/machine-id")
	if err != nil {
		t.Fatal(err)
	}
	r = guestSh(t, c, "cat /etc/machine-id /var/lib/dbus/machine-id")
	ids := strings.Fields(r.Stdout)
	if r.ExitCode != 0 || len(ids) != 2 || len(ids[0]) != 32 || ids[0] != ids[1] || ids[0] == strings.TrimSpace(string(host)) {
		t.Errorf("guest machine ids %q (exit %d), host's %q", r.Stdout, r.ExitCode, host)
	}
	// Nothing of the sandbox's setup is inherited by guest programs (the
	// offline guest's unused resolv.conf descriptor was, before the agent
	// sealed what it inherits).
	// (A program the shell starts is looked at once it runs: while a
	// pipeline runs the shell holds the pipe's ends, and between its fork
	// and its exec a background job opens /dev/null for its stdin.)
	const started = `sleep 5 & p=$!; s=$(readlink -f /bin/sleep); while [ "$(readlink /proc/$p/exe)" != "$s" ]; do :; done; ls /proc/$p/fd; kill $p`
	if r := guestSh(t, c, started); strings.Join(strings.Fields(r.Stdout), " ") != "0 1 2" {
		t.Errorf("a program of a guest shell holds descriptors %q; want only 0 1 2", r.Stdout)
	}
	// What programs need is still there, the font cache included (without
	// it every GTK app rescans the fonts at start).
	if r := guestSh(t, c, "getent passwd user && ls /usr/bin/Xvfb && test -d /var/tmp -a -w /var/tmp && fc-list | head -1 | grep . && ls /var/cache/fontconfig | grep -q cache"); r.ExitCode != 0 {
		t.Errorf("programs lack what they need: exit %d, %q %q", r.ExitCode, r.Stdout, r.Stderr)
	}
}
