package sandbox

import (
	"encoding/json"
	"os"
	"strconv"
	"syscall"
	"testing"
)

// TestSlirpJailHoldsAnExploitedSlirp answers "a guest exploits a libslirp
// bug and runs code as slirp4netns" (see slirp): a program of the
// attacker's, run in slirp4netns's place in the same jail, looks for what
// it could take. It must find none of the host's files but /usr and the
// resolver configuration, nothing it can write, no
// process of the host to signal, no capability, and no way back to root.
func TestSlirpJailHoldsAnExploitedSlirp(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("the jail switches uids: run this test as root (the test machines are)")
	}
	uid := uint32(1_900_500_000 + os.Getpid()%1000)
	attack := `
import json, os
r = {}
def tryit(name, f):
    try:
        f(); r[name] = "done"
    except Exception as e:
        r[name] = type(e).__name__
tryit("read /etc/shadow", lambda: open("/etc/shadow").read())
tryit("read /etc/resolv.conf", lambda: open("/etc/resolv.conf").read())
for d in ["/home", "/root", "/work", "/var", "/srv", "/opt", "/run", "/sys"]:
    r["exists " + d] = os.path.exists(d)
tryit("write /usr", lambda: open("/usr/pwned", "w").write("x"))
tryit("write /etc", lambda: open("/etc/pwned", "w").write("x"))
tryit("write /tmp", lambda: open("/tmp/scratch", "w").write("x"))
tryit("signal the helper", lambda: os.kill(HELPER, 0))
tryit("setuid 0", lambda: os.setuid(0))
r["pids"] = sorted(int(p) for p in os.listdir("/proc") if p.isdigit())
st = dict(l.split(":\t", 1) for l in open("/proc/self/status").read().splitlines() if ":\t" in l)
for k in ["Uid", "CapEff", "CapPrm", "CapBnd", "NoNewPrivs"]:
    r[k] = st[k].strip()
print(json.dumps(r))
`
	cmd, err := jailSlirp(&syscall.Credential{Uid: uid, Gid: uid}, "/usr/bin/python3", "-c",
		"HELPER = "+strconv.Itoa(os.Getpid())+attack)
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	var r map[string]any
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	want := map[string]any{
		"read /etc/shadow":      "FileNotFoundError",
		"read /etc/resolv.conf": "done",    // the DNS forwarder needs it
		"write /usr":            "OSError", // read-only bind
		"write /etc":            "PermissionError",
		"write /tmp":            "FileNotFoundError",
		"signal the helper":     "ProcessLookupError",
		"setuid 0":              "PermissionError",
		"Uid":                   strconv.Itoa(int(uid)) + "\t" + strconv.Itoa(int(uid)) + "\t" + strconv.Itoa(int(uid)) + "\t" + strconv.Itoa(int(uid)),
		"CapEff":                "0000000000000000",
		"CapPrm":                "0000000000000000",
		"CapBnd":                "0000000000000000",
		"NoNewPrivs":            "1",
	}
	for _, d := range []string{"/home", "/root", "/work", "/var", "/srv", "/opt", "/run", "/sys"} {
		want["exists "+d] = false
	}
	for k, v := range want {
		if r[k] != v {
			t.Errorf("%s: %v, want %v", k, r[k], v)
		}
	}
	// Its own PID namespace: bubblewrap's init and itself.
	if pids, _ := r["pids"].([]any); len(pids) > 2 {
		t.Errorf("the jail sees processes %v", pids)
	}
}
