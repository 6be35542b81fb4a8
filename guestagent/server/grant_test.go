package server

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/hivecrew/hivecrew/guestagent/protocol"
)

// grantChildEnv names the shared folder of TestSharedFolderGrant's child
// (the scenario run as nobody, for a parent that is root).
const grantChildEnv = "HIVECREW_TEST_GRANT_CHILD"

// TestSharedFolderGrant answers issue 35.10: an agent that may not read
// its shared folder (macOS asks before a process reads a volume; here the
// folder's mode refuses it) still runs, health_check reports the missing
// grant by name, file methods answer permission denied, and once the
// grant comes the same agent reads the folder, without a restart.
func TestSharedFolderGrant(t *testing.T) {
	if shared := os.Getenv(grantChildEnv); shared != "" {
		// The child: the parent grants when told, through stdin.
		grantScenario(t, shared, func() {
			os.Stdout.WriteString("\nREFUSED\n")
			bufio.NewReader(os.Stdin).ReadString('\n')
		})
		return
	}
	dir, err := os.MkdirTemp("", "grant")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	shared := filepath.Join(dir, "shared")
	// Searchable (it is there, stat works) but neither readable nor
	// writable by the agent.
	if err := os.Mkdir(shared, 0o711); err != nil {
		t.Fatal(err)
	}
	os.Chmod(dir, 0o755)
	if os.Geteuid() != 0 {
		os.Chmod(shared, 0o100)
		grantScenario(t, shared, func() { os.Chmod(shared, 0o700) })
		return
	}
	// Root reads everything: the scenario runs in a copy of this test
	// binary as nobody.
	bin := filepath.Join(dir, "server.test")
	if err := copyExecutable(os.Args[0], bin); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-test.run=^TestSharedFolderGrant$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), grantChildEnv+"="+shared)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	var out strings.Builder
	cmd.Stderr = &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stdout)
	refused := false
	for sc.Scan() {
		out.WriteString(sc.Text() + "\n")
		if sc.Text() == "REFUSED" {
			refused = true
			if err := os.Chmod(shared, 0o777); err != nil {
				t.Error(err)
			}
			stdin.Write([]byte("\n"))
		}
	}
	err = cmd.Wait()
	if err != nil || !refused || !strings.Contains(out.String(), "--- PASS: TestSharedFolderGrant") {
		t.Fatalf("the scenario as nobody (refused seen: %v): %v\n%s", refused, err, out.String())
	}
}

// grantScenario runs an agent on shared, which it may not read, checks
// what it reports, calls grant and checks again.
func grantScenario(t *testing.T, shared string, grant func()) {
	h := newHarness(t, func(c *Config) { c.SharedDir = shared })
	health, err := call[protocol.HealthResult](t, h.cli, protocol.MethodHealthCheck, nil)
	if err != nil {
		t.Fatal(err)
	}
	if health.OK || !health.SharedMounted || health.Permissions.SharedFolder || !strings.Contains(strings.Join(health.Problems, "\n"), "may not read the shared folder") ||
		!strings.Contains(strings.Join(health.Problems, "\n"), "Files and Folders") {
		t.Fatalf("refused: health %+v", health)
	}
	if _, err := call[protocol.ListDirectoryResult](t, h.cli, protocol.MethodListDirectory, protocol.ListDirectoryParams{Path: ""}); codeOf(err) != protocol.CodePermissionDenied {
		t.Fatalf("list_directory while refused: %v", err)
	}
	grant()
	health, err = call[protocol.HealthResult](t, h.cli, protocol.MethodHealthCheck, nil)
	if err != nil || !health.OK || !health.Permissions.SharedFolder {
		t.Fatalf("granted: health %+v, %v", health, err)
	}
	ok := "ok"
	if _, err := call[protocol.WriteFileResult](t, h.cli, protocol.MethodWriteFile, protocol.WriteFileParams{Path: "outbox/after-grant.txt", Contents: &ok}); err != nil {
		t.Fatalf("write_file after the grant: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(shared, "outbox", "after-grant.txt")); err != nil || string(b) != "ok" {
		t.Fatalf("the file written after the grant: %q %v", b, err)
	}
}

func copyExecutable(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
