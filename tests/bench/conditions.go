package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
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
//     machine's busy time (/proc/stat) less the bench's own process tree
//     (itself, the helper and the sandboxes, with the children they have
//     reaped) and less kernel threads, which are given apart (loop devices
//     and writeback work there, for the bench as for anyone).
//
// Pressure is caused by the bench's own load too (128 agents on 2 cores
// keep CPUs busy), so it explains a miss but does not assign it; the
// other processes' CPU does: above busyCores, the machine was busy.
type Conditions struct {
	Window                  time.Duration
	CPUSome, IOSome, IOFull float64 // shares of the window, 0..1
	Others, Kernel          float64 // cores
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

// Busy reports whether other processes loaded the machine.
func (c Conditions) Busy() bool { return c.Others >= busyCores }

// String is the conditions in a line, as the table's machine column.
func (c Conditions) String() string {
	if c.Window == 0 {
		return ""
	}
	s := fmt.Sprintf("others %.2f cores, kernel %.2f; pressure cpu %.0f%%, io %.0f%% (full %.0f%%)",
		c.Others, c.Kernel, 100*c.CPUSome, 100*c.IOSome, 100*c.IOFull)
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
		return fmt.Sprintf("missed on a busy machine: other processes used %.2f cores (the bench's own tree aside); measure again on a quiet one", c.Others)
	}
	return fmt.Sprintf("missed on a quiet machine (other processes %.2f cores): the product's miss", c.Others)
}

// snapshot is the counters at one moment.
type snapshot struct {
	at                      time.Time
	cpuSome, ioSome, ioFull int64 // µs stalled since boot
	busy, bench, kernel     int64 // clock ticks
	missing                 []string
}

// sampler measures Conditions between start and stop.
type sampler struct {
	self  int
	first snapshot
}

// startConditions starts measuring the machine's conditions.
func startConditions() *sampler {
	s := &sampler{self: os.Getpid()}
	s.first = s.take()
	return s
}

// stop returns the conditions since start.
func (s *sampler) stop() Conditions {
	b := s.take()
	a := s.first
	c := Conditions{Window: b.at.Sub(a.at)}
	if c.Window <= 0 {
		return c
	}
	us := float64(c.Window.Microseconds())
	c.CPUSome = float64(b.cpuSome-a.cpuSome) / us
	c.IOSome = float64(b.ioSome-a.ioSome) / us
	c.IOFull = float64(b.ioFull-a.ioFull) / us
	secs := c.Window.Seconds() * clockTicks
	c.Kernel = float64(b.kernel-a.kernel) / secs
	c.Others = max(0, float64((b.busy-a.busy)-(b.bench-a.bench)-(b.kernel-a.kernel))/secs)
	c.Missing = strings.Join(dedupe(append(a.missing, b.missing...)), "; ")
	return c
}

func (s *sampler) take() snapshot {
	n := snapshot{at: time.Now()}
	var err error
	if n.cpuSome, _, err = psi("cpu"); err != nil {
		n.missing = append(n.missing, "no CPU pressure: "+err.Error())
	}
	if n.ioSome, n.ioFull, err = psi("io"); err != nil {
		n.missing = append(n.missing, "no IO pressure: "+err.Error())
	}
	if n.busy, err = machineBusy(); err != nil {
		n.missing = append(n.missing, "no CPU time of other processes: "+err.Error())
		return n
	}
	n.bench, n.kernel = processTicks(s.self)
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

// machineBusy is the machine's non-idle CPU time since boot, in ticks:
// user, nice, system, irq, softirq and steal of /proc/stat's cpu line.
func machineBusy() (int64, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, err
	}
	line, _, _ := bytes.Cut(b, []byte("\n"))
	f := strings.Fields(string(line))
	if len(f) < 9 || f[0] != "cpu" {
		return 0, fmt.Errorf("/proc/stat starts %q", line)
	}
	var busy int64
	for _, i := range []int{1, 2, 3, 6, 7, 8} { // user nice system (idle iowait) irq softirq steal
		n, err := strconv.ParseInt(f[i], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/stat field %d %q: %w", i, f[i], err)
		}
		busy += n
	}
	return busy, nil
}

// procStat is what the bench reads of /proc/PID/stat.
type procStat struct {
	ppid            int
	kthread         bool
	ticks, children int64 // utime+stime; cutime+cstime
}

// processTicks sums the CPU ticks of root's process tree (with what its
// members have reaped of their children) and of kernel threads.
func processTicks(root int) (tree, kernel int64) {
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	procs := make(map[int]procStat, len(dirs))
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
			procs[pid] = st
		}
	}
	for pid, st := range procs {
		if st.kthread {
			kernel += st.ticks
			continue
		}
		for p, hops := pid, 0; p > 1 && hops < 64; hops++ {
			if p == root {
				tree += st.ticks + st.children
				break
			}
			p = procs[p].ppid
		}
	}
	return tree, kernel
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
	// Fields from 3 (state) on: ppid is 4, flags 9, utime..cstime 14..17.
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 15 {
		return procStat{}, fmt.Errorf("stat %q: %d fields", b, len(f))
	}
	num := func(field int) int64 {
		n, _ := strconv.ParseInt(f[field-3], 10, 64)
		return n
	}
	return procStat{ppid: int(num(4)), kthread: uint64(num(9))&pfKthread != 0,
		ticks: num(14) + num(15), children: num(16) + num(17)}, nil
}

func dedupe(ss []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, s := range ss {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}
