package store

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"gorm.io/gorm"
)

// TestConcurrentWritersLoseNothing: 8 goroutines write tasks and events for 5
// seconds; every write they were told succeeded is in the database, every
// write succeeds (writers queue on the lock, none fails), and every task's
// events are numbered without gaps.
func TestConcurrentWritersLoseNothing(t *testing.T) {
	ctx := context.Background()
	s, _ := openTemp(t)
	const writers = 8
	deadline := time.Now().Add(5 * time.Second)
	var wg sync.WaitGroup
	committed := make([][]string, writers)
	errs := make(chan error, writers)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; time.Now().Before(deadline); i++ {
				task := newTask(fmt.Sprintf("writer %d task %d", w, i))
				if err := s.CreateTask(ctx, task, []TaskFile{{Name: "in.txt", Size: 1, Path: "in.txt"}}); err != nil {
					errs <- fmt.Errorf("writer %d: %w", w, err)
					return
				}
				if _, err := s.AppendEvents(ctx, task.ID, Event{Type: "llm_response"}, Event{Type: "tool_call_start"}); err != nil {
					errs <- fmt.Errorf("writer %d: %w", w, err)
					return
				}
				committed[w] = append(committed[w], task.ID)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	total := 0
	for w, ids := range committed {
		total += len(ids)
		for _, id := range ids {
			evs, err := s.ListEvents(ctx, id, 0, 0)
			if err != nil {
				t.Fatal(err)
			}
			if len(evs) != 3 || evs[0].Seq != 1 || evs[2].Seq != 3 {
				t.Fatalf("writer %d task %s: %d events, want 3 numbered 1..3", w, id, len(evs))
			}
		}
	}
	var tasks, files int64
	s.db.Model(&Task{}).Count(&tasks)
	s.db.Model(&TaskFile{}).Count(&files)
	if int(tasks) != total || int(files) != total {
		t.Fatalf("database has %d tasks and %d files; writers committed %d", tasks, files, total)
	}
	if total < writers*10 {
		t.Fatalf("only %d tasks in 5 s: writers are starving", total)
	}
	t.Logf("%d writers committed %d tasks (+%d events) in 5 s", writers, total, 3*total)
	if err := s.IntegrityCheck(ctx); err != nil {
		t.Fatal(err)
	}
}

// crashWriterEnv makes TestCrashWriterProcess act as the writer process of
// TestSIGKILLMidTransaction.
const crashWriterEnv = "HIVECREW_TEST_CRASH_WRITER_DB"

const eventsPerCrashTask = 40

// TestCrashWriterProcess is the child of TestSIGKILLMidTransaction: it commits
// tasks (each with a file and eventsPerCrashTask events in one transaction),
// printing "committed ID" after each, then opens one more transaction, writes
// half of it, prints "mid ID" and waits to be killed.
func TestCrashWriterProcess(t *testing.T) {
	path := os.Getenv(crashWriterEnv)
	if path == "" {
		return // only meaningful as the child process
	}
	ctx := context.Background()
	s, err := Open(ctx, path, testLogger(t))
	if err != nil {
		fmt.Println("error", err)
		os.Exit(3)
	}
	write := func(tx *gorm.DB, task *Task, events int) error {
		task.ID = fmt.Sprintf("crash-%d", time.Now().UnixNano())
		task.CreatedAt = time.Now().UTC()
		task.Title = task.Description
		task.Status = StatusRunning
		if err := tx.Omit("Task").Create(task).Error; err != nil {
			return err
		}
		if err := tx.Omit("Task").Create(&TaskFile{TaskID: task.ID, Kind: FileInput, Name: "in", Path: "in", CreatedAt: task.CreatedAt}).Error; err != nil {
			return err
		}
		evs := make([]Event, events)
		for i := range evs {
			evs[i] = Event{Type: "tool_call_result", Summary: strings.Repeat("x", 200)}
		}
		_, err := appendEvents(tx, task.ID, evs)
		return err
	}
	for i := range 20 {
		task := newTask(fmt.Sprintf("committed %d", i))
		if err := s.db.Transaction(func(tx *gorm.DB) error { return write(tx, task, eventsPerCrashTask) }); err != nil {
			fmt.Println("error", err)
			os.Exit(3)
		}
		fmt.Println("committed", task.ID)
	}
	_ = s.db.Transaction(func(tx *gorm.DB) error {
		task := newTask("never committed")
		if err := write(tx, task, eventsPerCrashTask/2); err != nil {
			fmt.Println("error", err)
			os.Exit(3)
		}
		fmt.Println("mid", task.ID)
		time.Sleep(time.Minute) // killed here, inside the transaction
		return nil
	})
	os.Exit(4) // not reached when the parent kills us
}

// TestSIGKILLMidTransaction: a writer process killed with SIGKILL while it
// holds an open write transaction leaves a database that opens, passes the
// integrity check, has every committed task whole and nothing of the
// transaction in flight.
func TestSIGKILLMidTransaction(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hivecrew.db")
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashWriterProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), crashWriterEnv+"="+path)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var committed []string
	var mid string
	sc := bufio.NewScanner(out)
	for mid == "" && sc.Scan() {
		f := strings.Fields(sc.Text())
		switch {
		case len(f) == 2 && f[0] == "committed":
			committed = append(committed, f[1])
		case len(f) == 2 && f[0] == "mid":
			mid = f[1]
		case len(f) > 0 && f[0] == "error":
			t.Fatalf("writer: %s", sc.Text())
		}
	}
	if mid == "" {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("writer never reached its open transaction (committed %d)", len(committed))
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	werr := cmd.Wait()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("writer did not die of SIGKILL: %v", werr)
	}

	ctx := context.Background()
	s, err := Open(ctx, path, testLogger(t))
	if err != nil {
		t.Fatalf("database does not open after the crash: %v", err)
	}
	defer s.Close()
	if err := s.IntegrityCheck(ctx); err != nil {
		t.Fatal(err)
	}
	for _, id := range committed {
		evs, err := s.ListEvents(ctx, id, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		files, _ := s.TaskFiles(ctx, id, FileInput)
		if len(evs) != eventsPerCrashTask || len(files) != 1 {
			t.Fatalf("committed task %s has %d events and %d files, want %d and 1", id, len(evs), len(files), eventsPerCrashTask)
		}
	}
	if _, err := s.GetTask(ctx, mid); err == nil {
		t.Fatalf("task %s of the killed transaction is in the database", mid)
	}
	var orphans int64
	s.db.Model(&Event{}).Where("task_id = ?", mid).Count(&orphans)
	if orphans != 0 {
		t.Fatalf("%d events of the killed transaction survived", orphans)
	}
	var tasks int64
	s.db.Model(&Task{}).Count(&tasks)
	if int(tasks) != len(committed) {
		t.Fatalf("%d tasks after the crash, %d were committed", tasks, len(committed))
	}
}
