package main

import (
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestParsePSI(t *testing.T) {
	for _, c := range []struct {
		name, in   string
		some, full int64
		fails      bool
	}{
		{"io", "some avg10=1.50 avg60=0.80 avg300=0.20 total=4200000\nfull avg10=0.90 avg60=0.40 avg300=0.10 total=2100000\n", 4200000, 2100000, false},
		// Kernels before 5.13 have no full line for the CPU.
		{"cpu before 5.13", "some avg10=0.00 avg60=0.00 avg300=0.00 total=12345\n", 12345, 0, false},
		{"garbage", "none of it\n", 0, 0, true},
		{"bad total", "some avg10=0.00 total=x\n", 0, 0, true},
	} {
		some, full, err := parsePSI([]byte(c.in))
		if (err != nil) != c.fails || some != c.some || full != c.full {
			t.Errorf("%s: %d, %d, %v; want %d, %d, failing %v", c.name, some, full, err, c.some, c.full, c.fails)
		}
	}
}

func TestParseStatCountsFromTheLastParenthesis(t *testing.T) {
	// A command may hold spaces and parentheses (a process can name
	// itself anything); the fields are counted after the last ')'.
	line := "4242 (evil) 1 2 (x) S 77 4242 4242 0 -1 4194560 100 0 0 0 30 12 5 7 20 0 1 0 900 1000 50 18446744073709551615 0 0 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n"
	st, err := parseStat([]byte(line))
	if err != nil {
		t.Fatal(err)
	}
	if st.ppid != 77 || st.ticks != 42 || st.children != 12 || st.kthread || st.start != 900 {
		t.Errorf("parsed %+v; want ppid 77, ticks 42, children 12, start 900, no kernel thread", st)
	}
	kthread := "2 (kthreadd) S 0 0 0 0 -1 2129984 0 0 0 0 3 9 0 0 20 0 1 0 5 0 0 18446744073709551615 0 0 0 0 0 0 0 2147483647 0 0 0 0 0 1 0 0 0 0 0\n"
	if st, err := parseStat([]byte(kthread)); err != nil || !st.kthread || st.ticks != 12 {
		t.Errorf("kthreadd parsed %+v, %v; want a kernel thread with 12 ticks", st, err)
	}
}

// spin burns a CPU until stop closes.
func spin(stop chan struct{}) {
	for {
		select {
		case <-stop:
			return
		default:
		}
	}
}

// TestConditionsTellTheBenchFromOthers runs a CPU burner in the bench's
// own process and another one that is not the bench's (an orphan,
// reparented away from the test's tree), and checks that the sampler
// counts the first as the bench's and the second as another process's:
// the difference between "the product missed" and "the machine was busy".
func TestConditionsTellTheBenchFromOthers(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the conditions are read from /proc on Linux; elsewhere the row says they are missing")
	}
	// The orphan: sh starts a burner in the background and exits at once.
	out, err := exec.Command("sh", "-c", `timeout 5 sh -c 'while :; do :; done' >/dev/null 2>&1 & echo $!`).Output()
	if err != nil {
		t.Fatal(err)
	}
	orphan, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond) // reparented by now
	notOurs(t, orphan)
	before := processTicks(orphan) // timeout and the burner under it
	treeBefore := ownTicks()

	s := startConditions()
	stop := make(chan struct{})
	go spin(stop)
	time.Sleep(3 * time.Second)
	close(stop)
	c := s.stop()
	after := processTicks(orphan)
	orphanUsed := float64(after-before) / clockTicks / c.Window.Seconds() // cores
	treeAfter := ownTicks()
	ownUsed := float64(treeAfter-treeBefore) / clockTicks / c.Window.Seconds()

	t.Logf("conditions: %s; the orphan used %.2f cores, the bench's tree %.2f", c, orphanUsed, ownUsed)
	if c.Missing != "" {
		t.Fatalf("conditions missing on Linux: %s", c.Missing)
	}
	if orphanUsed < 0.05 { // 15 ticks: enough to tell
		t.Fatalf("the orphan burner got %.2f cores; the machine is too loaded to tell", orphanUsed)
	}
	// Other processes include at least the orphan's CPU (and whatever else
	// runs on this machine); the bench's own burner is not among them:
	// with it counted, others would exceed what the machine did.
	if c.Others < 0.8*orphanUsed {
		t.Errorf("others %.2f cores, but the orphan alone used %.2f", c.Others, orphanUsed)
	}
	if ownUsed < 0.05 {
		t.Errorf("the bench's own burner counted %.2f cores in its tree", ownUsed)
	}
	if c.Window < 3*time.Second || c.Window > 5*time.Second {
		t.Errorf("window %s, want about 3s", c.Window)
	}
	if !strings.Contains(c.String(), "others ") {
		t.Errorf("conditions read %q", c)
	}
}

// ownTicks is the CPU ticks of this test's process tree.
func ownTicks() int64 {
	return processTicks(os.Getpid())
}

// notOurs checks that pid is not a child of the test: its CPU is another
// process's.
func notOurs(t *testing.T, pid int) {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		t.Fatalf("the orphan burner %d: %v", pid, err)
	}
	st, err := parseStat(b)
	if err != nil {
		t.Fatal(err)
	}
	if st.ppid == os.Getpid() {
		t.Fatalf("the orphan %d is still the test's child", pid)
	}
}

func TestAMissSaysWhoseItWas(t *testing.T) {
	quiet := Conditions{Window: 20 * time.Second, Others: 0.03, CPUSome: 0.4}
	busy := Conditions{Window: 20 * time.Second, Others: 1.2, IOFull: 0.3}
	stolen := Conditions{Window: 20 * time.Second, Others: 0.1, Steal: 0.2}
	ms := []Metric{
		{Name: "fast", P50: time.Millisecond, Target: 5 * time.Millisecond, Note: "n"},
		{Name: "slow on a quiet machine", P50: 9 * time.Millisecond, Target: 5 * time.Millisecond, Note: "n"},
		{Name: "slow on a busy one", P50: 9 * time.Millisecond, Target: 5 * time.Millisecond, Cond: busy},
		{Name: "skipped", Skipped: "a Mac's"},
		{Name: "slow while the hypervisor took CPU", P50: 9 * time.Millisecond, Target: 5 * time.Millisecond, Cond: stolen},
	}
	stamp(ms, quiet)
	if ms[0].Note != "n" || ms[0].Cond != quiet {
		t.Errorf("a met target: note %q, conditions %+v", ms[0].Note, ms[0].Cond)
	}
	if !strings.HasPrefix(ms[1].Note, "missed on a quiet machine (other processes 0.03 cores, steal 0.00): the product's miss; n") {
		t.Errorf("a miss on a quiet machine: %q", ms[1].Note)
	}
	if ms[2].Cond != busy || !strings.HasPrefix(ms[2].Note, "missed on a busy machine: other processes used 1.20 cores") {
		t.Errorf("a miss measured with its own busy conditions: %q, %+v", ms[2].Note, ms[2].Cond)
	}
	if ms[3].Note != "" {
		t.Errorf("a skipped metric got a verdict: %q", ms[3].Note)
	}
	// Neither other processes (0.10 cores) nor the hypervisor (0.20) alone
	// took a quarter of a core; together they did.
	if !strings.HasPrefix(ms[4].Note, "missed on a busy machine: other processes used 0.10 cores (the bench's own tree aside) and the hypervisor took 0.20 (steal)") {
		t.Errorf("a miss while the hypervisor took CPU: %q", ms[4].Note)
	}
	if !strings.Contains(stolen.String(), "steal 0.20") {
		t.Errorf("conditions read %q, without the steal", stolen)
	}
}

// TestStealIsNotBusyTime: /proc/stat's steal column is the machine's
// steal, not part of its busy time (which other processes are measured
// from); idle and iowait are neither.
func TestStealIsNotBusyTime(t *testing.T) {
	busy, steal, err := parseCPULine([]byte("cpu  4360381 65321 1654557 2876964 40340 7 26573 92892 0 0\ncpu0 1 2 3 4 5 6 7 8 0 0\n"))
	if err != nil {
		t.Fatal(err)
	}
	if want := int64(4360381 + 65321 + 1654557 + 7 + 26573); busy != want {
		t.Errorf("busy %d ticks, want %d (user, nice, system, irq, softirq)", busy, want)
	}
	if steal != 92892 {
		t.Errorf("steal %d ticks, want 92892", steal)
	}
	for _, bad := range []string{"cpu 1 2 3", "cpu0 1 2 3 4 5 6 7 8", "cpu 1 2 x 4 5 6 7 8 9"} {
		if _, _, err := parseCPULine([]byte(bad)); err == nil {
			t.Errorf("parseCPULine(%q) took it", bad)
		}
	}
}

// TestUsedFollowsEachProcess: the CPU of a set of processes over a window
// is each one's own time in it and what it reaped, less what a reaped
// child had used before the window (its parent's reaped time holds all of
// it); a child orphaned and reaped by init takes nothing off its parent.
func TestUsedFollowsEachProcess(t *testing.T) {
	before := map[int]procStat{
		10: {ppid: 1, ticks: 100, children: 5, start: 1}, // the bench: goes on
		11: {ppid: 10, ticks: 40, start: 2},              // a child: ends, reaped by 10
		13: {ppid: 10, ticks: 7, start: 4},               // ends, reaped by 10; its pid reused
	}
	after := map[int]procStat{
		10: {ppid: 1, ticks: 150, children: 5 + 46 + 7, start: 1}, // 11 used 6 more in the window
		13: {ppid: 10, ticks: 9, start: 99},                       // new: all of its 9
		14: {ppid: 10, ticks: 3, children: 2, start: 100},         // new
	}
	if got, want := used(before, after), int64(50+6+9+5); got != want {
		t.Errorf("used %d ticks, want %d", got, want)
	}
	// A child orphaned (reaped by init): its parent reaped nothing, and
	// counts its own time only.
	before = map[int]procStat{10: {ppid: 1, ticks: 100, start: 1}, 12: {ppid: 10, ticks: 30, start: 3}}
	after = map[int]procStat{10: {ppid: 1, ticks: 120, start: 1}}
	if got := used(before, after); got != 20 {
		t.Errorf("with an orphan reaped by init: used %d ticks, want 20", got)
	}
}

// processTicks sums the CPU ticks of root's process tree, with what its
// members reaped of their children.
func processTicks(root int) int64 {
	tree, _ := processes(root, nil)
	var n int64
	for _, p := range tree {
		n += p.ticks + p.children
	}
	return n
}
