package template

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hivecrew/hivecrew/core/errdefs"
	"github.com/hivecrew/hivecrew/core/store"
	"github.com/hivecrew/hivecrew/core/vm"
)

// TestKCPassword: loginwindow's form of "admin" begins as cirruslabs'
// published /etc/kcpassword for it (1ced3f4abcbc: the password and its
// NUL; the padding after the NUL is not read), and the whole is a
// multiple of 12 bytes.
func TestKCPassword(t *testing.T) {
	got := kcpassword("admin")
	if !strings.HasPrefix(hex.EncodeToString(got), "1ced3f4abcbc") || len(got) != 12 {
		t.Errorf("kcpassword(admin) = %x", got)
	}
	if n := len(kcpassword("abcdefghijklmnop")); n != 24 {
		t.Errorf("a 16-character password gives %d bytes, want 24", n)
	}
}

// TestUnattendedFallsBackToTheGuidedSetup: where the VM has no console
// (here the fake backend's), the unattended setup stages its kit, boots the
// template and leaves it running for its guided setup, saying why and
// where the account is; nothing is lost.
func TestUnattendedFallsBackToTheGuidedSetup(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, vm.KindMacOS)
	tm := e.add(t, store.Template{ID: "mac", Name: "Mac", OS: "macos", Kind: "macos", Status: store.TemplateBuilding, Manifest: "macos-15-base"})
	man, err := Builtin("macos-15-base")
	if err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	res, err := e.m.setupUnattended(ctx, tm, man, &log, newTracker(macosUnattendedSpans, func(Progress) {}))
	if err != nil {
		t.Fatal(err)
	}
	if res.status != store.TemplateSetup || !strings.Contains(res.reason, "no console") || !strings.Contains(res.reason, "hivecrew templates setup mac --finish") {
		t.Errorf("result %+v", res)
	}
	mach := e.backend.Machine("setup-mac")
	if mach == nil || mach.Status().State != vm.StateRunning {
		t.Fatal("the template is not left running for its guided setup")
	}
	kit := filepath.Join(e.m.dir("mac"), "shared", KitDir)
	pw, err := os.ReadFile(filepath.Join(kit, passwordFile))
	if err != nil || len(strings.TrimSpace(string(pw))) != 16 {
		t.Fatalf("the kit's password: %q %v", pw, err)
	}
	kc, _ := os.ReadFile(filepath.Join(kit, kcpasswordFile))
	if !bytes.Equal(kc, kcpassword(strings.TrimSpace(string(pw)))) {
		t.Error("the kit's kcpassword is not the password's")
	}
	script, _ := os.ReadFile(filepath.Join(kit, unattendedScript))
	if !bytes.Contains(script, []byte("install-agent.sh")) {
		t.Errorf("the kit's unattended.sh: %.80s", script)
	}
	account := filepath.Join(e.m.dir("mac"), accountFile)
	fi, err := os.Stat(account)
	if err != nil || fi.Mode().Perm() != 0o600 || !strings.Contains(res.reason, account) {
		t.Errorf("the account file %s: %v %v", account, fi, err)
	}
	// The fallback is the guided setup: finishing (forced: the fake's
	// agent never ran install-agent.sh) stops it and removes the kit,
	// password included.
	e.st.UpdateTemplate(ctx, "mac", func(t *store.Template) error { t.Status = store.TemplateSetup; return nil })
	if _, err := e.m.Setup(ctx, "mac", SetupOptions{Finish: true, Force: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(kit, passwordFile)); !os.IsNotExist(err) {
		t.Errorf("the password stayed in the shared folder: %v", err)
	}
}

func TestUnattendedIsForMacOS(t *testing.T) {
	e := newEnv(t, vm.KindRootFS)
	_, err := e.m.Create(context.Background(), CreateRequest{Manifest: "linux-desktop", Unattended: true})
	if !errors.Is(err, errdefs.ErrInvalid) {
		t.Errorf("unattended Linux build: %v", err)
	}
}
