package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Conditions are what the machine was doing while a figure was measured,
// so that a miss says whether it was the product or the machine:
//   - the kernel's pressure stall information (/proc/pressure/cpu, io): the
//     share of the window in which some task waited for a CPU or for IO,
//     and in which every task waited for IO (full);
//   - the CPU that processes other than the bench's used, in cores: the
//     machine's busy time (/proc/stat) less what the bench's own processes
//     used in the window (itself, the helper and the sandboxes: each
//     followed by pid and start time, so that one that outlives its parent
//     stays the bench's, with what they reaped of their children, less
//     the part a reaped child had used before the window) and less kernel
//     threads, which are given apart (loop devices and writeback work
//     there, for the bench as for anyone). A process whose parent ended
//     is reparented to init, and init reaps it: the sandboxes' bwrap
//     processes end that way. What init reaped in the window is given
//     apart too (Orphans) and not counted as other processes': it may be
//     anyone's, and on a machine where only the bench runs it is the
//     bench's, so a miss is never put on the machine for it;
//   - steal time (/proc/stat): the CPU the hypervisor gave other guests
//     while this machine, itself a VM, had work to run. It is no process
//     of this machine's, but it is CPU the product did not get: it counts
//     with other processes' toward a busy machine (6 to 20% of the
//     machine's time was stolen through one 128-agent level here, the
//     level missing its p95 where quieter runs met it).
//
// Pressure is caused by the bench's own load too (128 agents on 2 cores
// keep CPUs busy), so it explains a miss but does not assign it; the
// other processes' CPU and steal time do: above busyCores together, the
// machine was busy.
type Conditions struct {
	Window                  time.Duration
	CPUSome, IOSome, IOFull float64 // shares of the window, 0..1
	Others, Kernel          float64 // cores
	// Steal is the CPU the hypervisor took from this machine, in cores.
	Steal float64
	// Orphans is what init reaped of processes whose parents had ended,
	// in cores: the bench's sandboxes' among them (see above).
	Orphans float64
	// Missing, when set, says what could not be read (no PSI in this
	// kernel, not Linux); the figures it names are 0.
	Missing string
}

// clockTicks is USER_HZ, the unit of /proc/stat and /proc/PID/stat times
// on Linux.
const clockTicks = 100

// busyCores is the CPU other processes may use before the machine counts
// as busy: a quarter of a core (an editor, a shell, an idle desktop stay
// well under it; a build, a browser test or another helper does not).
const busyCores = 0.25

// Busy reports whether other processes, or the hypervisor, took the
// machine's CPU.
func (c Conditions) Busy() bool { return c.Others+c.Steal >= busyCores }

// String is the conditions in a line, as the table's machine column.
func (c Conditions) String() string {
	if c.Window == 0 {
		return ""
	}
	s := fmt.Sprintf("others %.2f cores, kernel %.2f, orphans %.2f, steal %.2f; pressure cpu %.0f%%, io %.0f%% (full %.0f%%)",
		c.Others, c.Kernel, c.Orphans, c.Steal, 100*c.CPUSome, 100*c.IOSome, 100*c.IOFull)
	if c.Missing != "" {
		s += "; " + c.Missing
	}
	return s
}

// Verdict says, for a metric that missed its target, whose miss it was.
func (c Conditions) Verdict() string {
	switch {
	case c.Window == 0:
		return ""
	case c.Busy():
		return fmt.Sprintf("missed on a busy machine: other processes used %.2f cores (the bench's own tree aside) and the hypervisor took %.2f (steal); measure again on a quiet one", c.Others, c.Steal)
	}
	return fmt.Sprintf("missed on a quiet machine (other processes %.2f cores, steal %.2f): the product's miss", c.Others, c.Steal)
}

// snapshot is the counters at one moment.
type snapshot struct {
	at                      time.Time
	cpuSome, ioSome, ioFull int64 // µs stalled since boot
	busy                    int64 // the machine's non-idle clock ticks, steal aside
	steal                   int64 // clock ticks stolen by the hypervisor
	reaped                  int64 // what init reaped of its children, ticks
	// bench are the bench's processes, kthreads the kernel's, by pid.
	bench, kthreads map[int]procStat
	missing         []string
}

// sampler measures Conditions between start and stop.
type sampler struct {
	self  int
	first snapshot
}

// startConditions starts measuring the machine's conditions.
func startConditions() *sampler {
	s := &sampler{self: os.Getpid()}
	s.first = s.take(nil)
	return s
}

// stop returns the conditions since start.
func (s *sampler) stop() Conditions {
	a := s.first
	b := s.take(a.bench)
	c := Conditions{Window: b.at.Sub(a.at)}
	if c.Window <= 0 {
		return c
	}
	us := float64(c.Window.Microseconds())
	c.CPUSome = float64(b.cpuSome-a.cpuSome) / us
	c.IOSome = float64(b.ioSome-a.ioSome) / us
	c.IOFull = float64(b.ioFull-a.ioFull) / us
	secs := c.Window.Seconds() * clockTicks
	bench, kernel, orphans := used(a.bench, b.bench), used(a.kthreads, b.kthreads), b.reaped-a.reaped
	c.Kernel, c.Orphans = float64(kernel)/secs, float64(orphans)/secs
	c.Others = max(0, float64(b.busy-a.busy-bench-kernel-orphans)/secs)
	c.Steal = float64(b.steal-a.steal) / secs
	c.Missing = strings.Join(slices.Compact(slices.Sorted(slices.Values(append(a.missing, b.missing...)))), "; ")
	return c
}

// used is the CPU ticks a set of processes used between two snapshots of
// it: each one's own time since the first (all of it for one started
// since), and what each reaped of its children meanwhile less what the
// children that were in the first had used before it (a parent's reaped
// time holds all of a child's life). A child that ended may have been
// reaped by init instead (orphaned): what is taken off a parent is at most
// what it reaped, so a parent never counts less than nothing.
func used(before, after map[int]procStat) int64 {
	same := func(m map[int]procStat, pid int, start int64) bool {
		p, ok := m[pid]
		return ok && p.start == start
	}
	earlier := map[int]int64{} // by parent: its ended children's time before the window
	for pid, q := range before {
		if !same(after, pid, q.start) {
			earlier[q.ppid] += q.ticks + q.children
		}
	}
	var n int64
	for pid, p := range after {
		if !same(before, pid, p.start) {
			n += p.ticks + p.children
			continue
		}
		q := before[pid]
		reaped := p.children - q.children
		n += p.ticks - q.ticks + reaped - min(reaped, earlier[pid])
	}
	return n
}

// take reads the counters; prev, when set, are the bench's processes of
// the first snapshot, which stay the bench's if they were reparented.
func (s *sampler) take(prev map[int]procStat) snapshot {
	n := snapshot{at: time.Now()}
	var err error
	if n.cpuSome, _, err = psi("cpu"); err != nil {
		n.missing = append(n.missing, "no CPU pressure: "+err.Error())
	}
	if n.ioSome, n.ioFull, err = psi("io"); err != nil {
		n.missing = append(n.missing, "no IO pressure: "+err.Error())
	}
	if n.busy, n.steal, err = machineCPU(); err != nil {
		n.missing = append(n.missing, "no CPU time of other processes: "+err.Error())
		return n
	}
	n.bench, n.kthreads = processes(s.self, prev)
	if b, err := os.ReadFile("/proc/1/stat"); err == nil {
		if st, err := parseStat(b); err == nil {
			n.reaped = st.children
		}
	}
	return n
}

// psi reads a /proc/pressure file's some and full totals (µs).
func psi(resource string) (some, full int64, err error) {
	b, err := os.ReadFile("/proc/pressure/" + resource)
	if err != nil {
		return 0, 0, err
	}
	return parsePSI(b)
}

// parsePSI parses lines such as
// "some avg10=0.00 avg60=0.00 avg300=0.00 total=12345".
func parsePSI(b []byte) (some, full int64, err error) {
	found := false
	for line := range strings.SplitSeq(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		for _, kv := range f[1:] {
			v, ok := strings.CutPrefix(kv, "total=")
			if !ok {
				continue
			}
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return 0, 0, fmt.Errorf("pressure total %q: %w", v, err)
			}
			switch f[0] {
			case "some":
				some, found = n, true
			case "full":
				full = n
			}
		}
	}
	if !found {
		return 0, 0, fmt.Errorf("no \"some … total=\" line in %q", b)
	}
	return some, full, nil
}

// machineCPU is the machine's non-idle CPU time since boot, in ticks
// (user, nice, system, irq and softirq of /proc/stat's cpu line), and
// its steal time.
func machineCPU() (busy, steal int64, err error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0, err
	}
	return parseCPULine(b)
}

// parseCPULine parses /proc/stat's first line,
// "cpu user nice system idle iowait irq softirq steal ...".
func parseCPULine(b []byte) (busy, steal int64, err error) {
	line, _, _ := bytes.Cut(b, []byte("\n"))
	f := strings.Fields(string(line))
	if len(f) < 9 || f[0] != "cpu" {
		return 0, 0, fmt.Errorf("/proc/stat starts %q", line)
	}
	field := func(i int) int64 {
		if err != nil {
			return 0
		}
		var n int64
		if n, err = strconv.ParseInt(f[i], 10, 64); err != nil {
			err = fmt.Errorf("/proc/stat field %d %q: %w", i, f[i], err)
		}
		return n
	}
	for _, i := range []int{1, 2, 3, 6, 7} { // user nice system (idle iowait) irq softirq
		busy += field(i)
	}
	steal = field(8)
	if err != nil {
		return 0, 0, err
	}
	return busy, steal, nil
}

// procStat is what the bench reads of /proc/PID/stat.
type procStat struct {
	ppid            int
	kthread         bool
	ticks, children int64 // utime+stime; cutime+cstime
	start           int64 // clock ticks after boot: with the pid, one process
}

// processes reads every process and returns root's descendants (and
// those of prev still alive, reparented or not) and the kernel threads.
func processes(root int, prev map[int]procStat) (tree, kthreads map[int]procStat) {
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	all := make(map[int]procStat, len(dirs))
	for _, d := range dirs {
		pid, err := strconv.Atoi(filepath.Base(d))
		if err != nil {
			continue
		}
		b, err := os.ReadFile(d + "/stat")
		if err != nil {
			continue // it exited meanwhile
		}
		if st, err := parseStat(b); err == nil {
			all[pid] = st
		}
	}
	tree, kthreads = map[int]procStat{}, map[int]procStat{}
	for pid, st := range all {
		if st.kthread {
			kthreads[pid] = st
			continue
		}
		if q, ok := prev[pid]; ok && q.start == st.start {
			tree[pid] = st
			continue
		}
		for p, hops := pid, 0; p > 1 && hops < 64; hops++ {
			if p == root {
				tree[pid] = st
				break
			}
			p = all[p].ppid
		}
	}
	return tree, kthreads
}

// pfKthread is the kernel's PF_KTHREAD flag in /proc/PID/stat's flags.
const pfKthread = 0x00200000

// parseStat parses /proc/PID/stat; the command may hold spaces and
// parentheses, so the fields are counted from the last ')'.
func parseStat(b []byte) (procStat, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return procStat{}, fmt.Errorf("stat %q: no command", b)
	}
	// Fields from 3 (state) on: ppid is 4, flags 9, utime..cstime 14..17,
	// starttime 22.
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 {
		return procStat{}, fmt.Errorf("stat %q: %d fields", b, len(f))
	}
	num := func(field int) int64 {
		n, _ := strconv.ParseInt(f[field-3], 10, 64)
		return n
	}
	return procStat{ppid: int(num(4)), kthread: uint64(num(9))&pfKthread != 0,
		ticks: num(14) + num(15), children: num(16) + num(17), start: num(22)}, nil
}
