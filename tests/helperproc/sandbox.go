package helperproc

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// StageRoot is where a root helper stages each sandbox's folders, one
// folder per VM id.
const StageRoot = "/run/hivecrew-sandbox"

// VMIDs is the set of VM ids seen for one data directory: a VM's folder
// under VMs/ exists from its creation on, and watchers note every folder
// they see there, so ids of VMs already gone still scope what is checked.
type VMIDs struct {
	home string
	mu   sync.Mutex // guards seen
	seen map[string]bool
}

var (
	registryMu sync.Mutex // guards registry
	registry   = map[string]*VMIDs{}
)

// IDsOf returns the VM id set of the data directory home, the same for
// every helper started on it and every Watch of it.
func IDsOf(home string) *VMIDs {
	registryMu.Lock()
	defer registryMu.Unlock()
	v := registry[home]
	if v == nil {
		v = &VMIDs{home: home, seen: map[string]bool{}}
		registry[home] = v
	}
	return v
}

// Watch notes the VM folders under home/VMs every 5 ms until the test
// ends (for a helper run in-process; Launch watches its process's home
// while it runs).
func Watch(t testing.TB, home string) *VMIDs {
	v := IDsOf(home)
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		v.watchUntil(done)
	}()
	t.Cleanup(func() { close(done); <-stopped })
	return v
}

// watchUntil scans every 5 ms until done is closed, then once more.
func (v *VMIDs) watchUntil(done <-chan struct{}) {
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		v.Scan()
		select {
		case <-done:
			v.Scan()
			return
		case <-tick.C:
		}
	}
}

// Scan notes the VM folders under home/VMs now.
func (v *VMIDs) Scan() {
	for _, id := range VMDirs(v.home) {
		v.Note(id)
	}
}

// Note adds id (ignoring "").
func (v *VMIDs) Note(id string) {
	if id == "" {
		return
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	v.seen[id] = true
}

// List returns the ids seen, sorted.
func (v *VMIDs) List() []string {
	v.mu.Lock()
	defer v.mu.Unlock()
	out := make([]string, 0, len(v.seen))
	for id := range v.seen {
		out = append(out, id)
	}
	slices.Sort(out)
	return out
}

// VMIDs returns the ids of this helper's VMs: every one seen under
// Home/VMs, those there now, and, while the helper runs, those its pool
// reports (GET /api/v1/vms).
func (p *Proc) VMIDs() []string {
	p.IDs.Scan()
	if p.Running() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if vms, err := p.Unix.VMs(ctx); err == nil {
			for _, v := range vms {
				p.IDs.Note(v.ID)
			}
		}
	}
	return p.IDs.List()
}

// Sandboxes lists the bubblewrap processes of this helper's VMs.
func (p *Proc) Sandboxes() Processes { return Sandboxes(p.Home, p.VMIDs()) }

// Mounts lists the mounts of this helper's home and VMs.
func (p *Proc) Mounts() []string { return Mounts(p.Home, p.VMIDs()) }

// Process is a process as /proc shows it.
type Process struct {
	PID, PPID int
	Cmdline   string // arguments joined by spaces
	// VM is the HIVECREW_VM of its environment (set for bubblewrap by the
	// sandbox backend; readable as root).
	VM string
}

func (p Process) String() string { return strconv.Itoa(p.PID) + ": " + p.Cmdline }

// Processes is a list of processes, shown one a line.
type Processes []Process

func (ps Processes) String() string {
	var b strings.Builder
	for i, p := range ps {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(p.String())
	}
	return b.String()
}

// All lists the machine's processes by pid.
func All() map[int]Process {
	out := map[int]Process{}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		raw, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || len(raw) == 0 {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, so cut at the last ')'.
		f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		if len(f) < 2 {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		p := Process{PID: pid, PPID: ppid, Cmdline: strings.TrimSpace(strings.ReplaceAll(string(raw), "\x00", " "))}
		if env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ")); err == nil {
			for _, kv := range strings.Split(string(env), "\x00") {
				if v, ok := strings.CutPrefix(kv, "HIVECREW_VM="); ok {
					p.VM = v
				}
			}
		}
		out[pid] = p
	}
	return out
}

// IsBwrap reports whether p is a bubblewrap process.
func IsBwrap(p Process) bool {
	return strings.Contains(filepath.Base(strings.SplitN(p.Cmdline, " ", 2)[0]), "bwrap")
}

// Sandboxes lists the bubblewrap processes of the VMs ids of the helper on
// home: those whose environment names the VM (HIVECREW_VM) or whose
// command line names home/VMs/<id> or StageRoot/<id>
// (ids are fixed-length, so no id is a prefix of another).
func Sandboxes(home string, ids []string) Processes {
	var out Processes
	for _, p := range All() {
		if !IsBwrap(p) {
			continue
		}
		for _, id := range ids {
			if id == "" {
				continue
			}
			if p.VM == id || strings.Contains(p.Cmdline, filepath.Join(home, "VMs", id)) || strings.Contains(p.Cmdline, StageRoot+"/"+id) {
				out = append(out, p)
				break
			}
		}
	}
	slices.SortFunc(out, func(a, b Process) int { return a.PID - b.PID })
	return out
}

var vmID = regexp.MustCompile(`vm-[0-9a-f]{12}`)

// CountVMs counts the distinct VMs named in sandbox processes (a sandbox
// is two bubblewrap processes).
func CountVMs(procs Processes) int {
	seen := map[string]bool{}
	for _, p := range procs {
		if p.VM != "" {
			seen[p.VM] = true
		} else {
			seen[vmID.FindString(p.Cmdline)] = true
		}
	}
	return len(seen)
}

// Mounts lists the lines of this process's mountinfo that name a path under
// dir (a staged folder of a VM under it never unmounted) or a staging
// folder of one of the VMs ids.
func Mounts(dir string, ids []string) []string {
	raw, _ := os.ReadFile("/proc/self/mountinfo")
	var out []string
	for _, line := range strings.Split(string(raw), "\n") {
		if strings.Contains(line, dir+"/") {
			out = append(out, line)
			continue
		}
		for _, id := range ids {
			if id != "" && strings.Contains(line, "/hivecrew-sandbox/"+id) {
				out = append(out, line)
				break
			}
		}
	}
	return out
}

// VMDirs lists the VM folders under home/VMs.
func VMDirs(home string) []string {
	ents, _ := os.ReadDir(filepath.Join(home, "VMs"))
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}
