package template

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/hivecrew/hivecrew/core/macsetup"
	"github.com/hivecrew/hivecrew/core/store"
	"github.com/hivecrew/hivecrew/core/vm"
	"github.com/hivecrew/hivecrew/templates"
)

// The unattended setup of a macOS template (`templates create
// macos-15-base --unattended`): once macOS is installed, the template
// boots for its setup as a guided setup would, and the helper drives
// Setup Assistant and the steps after it through the VM's own console
// (core/macsetup), then asks the new guest agent's health_check. If a
// screen is not the one expected, or a grant is missing, the template
// stays running for its guided setup, with the reason, the screenshot and
// what to do next; the manual steps remain the fallback.

// Files the unattended setup adds to the kit (KitDir): the account's
// password, loginwindow's form of it, and the script Terminal runs.
const (
	unattendedScript = "unattended.sh"
	passwordFile     = "account-password"
	kcpasswordFile   = "kcpassword"
	// accountFile keeps the account's name and password in the
	// template's folder (0600) for the user.
	accountFile = "account.txt"
	// agentWait bounds the wait for the installed guest agent to answer.
	agentWait = 3 * time.Minute
)

// kcpassword is /etc/kcpassword's form of a password, which loginwindow
// reads for an automatic login: the password and a NUL, padded with NULs
// to a multiple of 12 bytes, XORed with loginwindow's 11-byte key.
func kcpassword(password string) []byte {
	key := []byte{0x7d, 0x89, 0x52, 0x23, 0xd2, 0xbc, 0xdd, 0xea, 0xa3, 0xb9, 0x1f}
	b := append([]byte(password), 0)
	for len(b)%12 != 0 {
		b = append(b, 0)
	}
	for i := range b {
		b[i] ^= key[i%len(key)]
	}
	return b
}

// newAccountPassword is a password that types the same on any keyboard
// layout Setup Assistant may start with: lower-case letters and digits.
func newAccountPassword() string {
	const chars = "abcdefghijkmnpqrstuvwxyz23456789"
	b := make([]byte, 16)
	rand.Read(b)
	for i := range b {
		b[i] = chars[int(b[i])%len(chars)]
	}
	return string(b)
}

// stageUnattended adds what the unattended setup needs to the kit in
// shared, and keeps the account in the template's folder dir.
func stageUnattended(shared, dir string, man *Manifest, user, password string) error {
	script, err := fs.ReadFile(man.dirOrBuiltin(), unattendedScript)
	if err != nil {
		sub, _ := fs.Sub(templates.FS, "macos-15-base")
		if script, err = fs.ReadFile(sub, unattendedScript); err != nil {
			return fmt.Errorf("the unattended setup's script: %w", err)
		}
	}
	kit := filepath.Join(shared, KitDir)
	for name, data := range map[string][]byte{unattendedScript: script, passwordFile: []byte(password + "\n"), kcpasswordFile: kcpassword(password)} {
		mode := os.FileMode(0o600)
		if name == unattendedScript {
			mode = 0o755
		}
		if err := os.WriteFile(filepath.Join(kit, name), data, mode); err != nil {
			return err
		}
	}
	return os.WriteFile(filepath.Join(dir, accountFile), []byte("user "+user+"\npassword "+password+"\n"), 0o600)
}

// setupUnattended is the rest of a macOS build with --unattended. It
// returns the template ready, or in setup with the reason (a nil error:
// the template is usable through its guided setup).
func (m *Manager) setupUnattended(ctx context.Context, t store.Template, man *Manifest, log io.Writer, track *tracker) (result, error) {
	if m.cfg.Backend == nil {
		return result{}, errors.New("this helper cannot boot templates")
	}
	t.Path = templatePath(vm.KindMacOS, m.dir(t.ID))
	user := or(man.MacOS.AutoLogin.User, "hivecrew")
	password := newAccountPassword()
	shared := vm.Spec{Dir: m.dir(t.ID)}.SharedDir()
	if err := stageKit(shared, man, m.cfg.AgentBinary); err != nil {
		return result{}, err
	}
	if err := stageUnattended(shared, m.dir(t.ID), man, user, password); err != nil {
		return result{}, err
	}
	track.set(PhaseSetup, 0, "booting the template for its unattended setup")
	mach, err := m.bootForSetup(ctx, t, man)
	if err != nil {
		return result{}, err
	}
	fallback := func(why string) (result, error) {
		fmt.Fprintf(log, "unattended setup: %s\n", why)
		return result{status: store.TemplateSetup, reason: why + ". The template is running: finish its setup by hand in its window " +
			"(the account is in " + filepath.Join(m.dir(t.ID), accountFile) + "), then: hivecrew templates setup " + t.ID + " --finish"}, nil
	}
	err = m.driveConsole(ctx, mach, macsetup.Config{
		Steps:   macsetup.Sequoia(),
		Vars:    map[string]string{"user": user, "password": password, "kit": man.MacOS.SharedFolder + "/" + KitDir},
		ShotDir: m.dir(t.ID),
		Log:     m.cfg.Log.With("template", t.ID),
		Progress: func(i, n int, name string) {
			track.set(PhaseSetup, float64(i)/float64(n), "unattended setup: "+name)
			fmt.Fprintf(log, "unattended setup: step %d of %d: %s\n", i+1, n, name)
		},
	})
	if err != nil {
		if ctx.Err() != nil {
			return result{}, err
		}
		return fallback(err.Error())
	}
	track.set(PhaseSetup, 0.95, "waiting for the guest agent's health_check")
	if err := m.awaitGrants(ctx, mach); err != nil {
		if ctx.Err() != nil {
			return result{}, err
		}
		return fallback(err.Error())
	}
	version, err := m.endSetup(ctx, t.ID, "")
	if err != nil {
		return fallback("finishing: " + err.Error())
	}
	fmt.Fprintf(log, "unattended setup: done; the account is in %s\n", filepath.Join(m.dir(t.ID), accountFile))
	return result{status: store.TemplateReady, agentVersion: version}, nil
}

// driveConsole opens mach's console and runs the script on it.
func (m *Manager) driveConsole(ctx context.Context, mach vm.Machine, cfg macsetup.Config) error {
	c, ok := mach.(vm.Consoler)
	if !ok {
		return errors.New("this VM backend has no console to drive Setup Assistant with")
	}
	reader, err := screenReader()
	if err != nil {
		return err
	}
	addr, password, closeConsole, err := c.OpenConsole(ctx)
	if err != nil {
		return err
	}
	defer closeConsole()
	client, err := macsetup.Dial(ctx, addr, password)
	if err != nil {
		return err
	}
	defer client.Close()
	cfg.Console, cfg.Reader = client, reader
	return macsetup.Run(ctx, cfg)
}

// awaitGrants waits for the new guest agent to answer and report every
// grant.
func (m *Manager) awaitGrants(ctx context.Context, mach vm.Machine) error {
	deadline := time.Now().Add(agentWait)
	for {
		err := m.checkGrants(ctx, mach)
		if err == nil || time.Now().After(deadline) || ctx.Err() != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(5 * time.Second):
		}
	}
}
