package api_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/hivecrew/hivecrew/core/daemon"
	"github.com/hivecrew/hivecrew/core/wire"
	"github.com/hivecrew/hivecrew/tests/llmtest"
)

// opened records what the helper asked the desktop to open.
type opened struct {
	// mu guards paths.
	mu    sync.Mutex
	paths []string
}

func (o *opened) launch(_ context.Context, p string) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.paths = append(o.paths, p)
	return nil
}

func (o *opened) take() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	p := o.paths
	o.paths = nil
	return p
}

// TestOpenOutput: a task's saved output opens on this computer and Show in
// folder opens the folder it was saved in; a script the guest left is
// shown in its folder but never opened; an output replaced by a link to a
// file elsewhere, an output that is not there, and names that climb out
// are refused, and nothing is opened for them.
func TestOpenOutput(t *testing.T) {
	t.Parallel()
	var o opened
	h := startHelper(t, func(c *daemon.Config) { c.Launch = o.launch })
	h.addProvider()
	h.llm.Script("[[reveal]]",
		llmtest.Tool("write_file", map[string]any{"path": "outbox/report.txt", "contents": "done\n"}),
		llmtest.Tool("write_file", map[string]any{"path": "outbox/run.sh", "contents": "rm -rf ~\n"}),
		llmtest.Text("Done."), llmtest.Verdict(true, "Wrote the report."))
	out := t.TempDir()
	var task wire.Task
	json.Unmarshal(h.expect(201, "POST", "/api/v1/tasks", map[string]any{"description": "Report [[reveal]]", "outputDirectory": out}), &task)
	if done := h.waitTask(task.ID, "the end", terminal); done.Status != "completed" {
		t.Fatalf("task %s", done.Status)
	}
	var files wire.TaskFiles
	json.Unmarshal(h.expect(200, "GET", "/api/v1/tasks/"+task.ID+"/files", nil), &files)
	saved := map[string]string{}
	for _, f := range files.OutputFiles {
		saved[f.Name] = f.SavedTo
	}
	if filepath.Dir(saved["report.txt"]) != out || saved["run.sh"] == "" {
		t.Fatalf("outputs saved to %v, want in %s", saved, out)
	}
	base := "/api/v1/tasks/" + task.ID + "/outputs/"
	h.expect(204, "POST", base+"report.txt/open", nil)
	h.expect(204, "POST", base+"report.txt/open", map[string]any{"folder": true})
	if got := o.take(); len(got) != 2 || got[0] != saved["report.txt"] || got[1] != out {
		t.Fatalf("opened %q; want the report, then %s", got, out)
	}

	if body := h.expect(400, "POST", base+"run.sh/open", nil); !strings.Contains(string(body), "a .sh file may run") {
		t.Fatalf("a script opened: %s", body)
	}
	h.expect(204, "POST", base+"run.sh/open", map[string]any{"folder": true})
	if got := o.take(); len(got) != 1 || got[0] != out {
		t.Fatalf("the script's folder: %q", got)
	}

	// The report swapped for a link to a file outside: refused.
	elsewhere := filepath.Join(t.TempDir(), "private.txt")
	os.WriteFile(elsewhere, []byte("private"), 0o600)
	os.Remove(saved["report.txt"])
	if err := os.Symlink(elsewhere, saved["report.txt"]); err != nil {
		t.Fatal(err)
	}
	if body := h.expect(400, "POST", base+"report.txt/open", nil); !strings.Contains(string(body), "is a link") {
		t.Fatalf("a link opened: %s", body)
	}
	os.Remove(saved["report.txt"])
	h.expect(404, "POST", base+"report.txt/open", nil)
	for _, evil := range []string{"..%2F..%2Fhivecrew.db", "nope.txt", "%2Fetc%2Fpasswd"} {
		h.expect(404, "POST", base+evil+"/open", nil)
	}
	h.expect(404, "POST", "/api/v1/tasks/nope/outputs/report.txt/open", nil)
	if got := o.take(); len(got) != 0 {
		t.Fatalf("opened %q for refused requests", got)
	}
}
