package mcpserve_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"image"
	"image/png"
	"io"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hivecrew/hivecrew/core/client"
	"github.com/hivecrew/hivecrew/core/errdefs"
	"github.com/hivecrew/hivecrew/core/mcpserve"
	"github.com/hivecrew/hivecrew/core/wire"
	"github.com/hivecrew/hivecrew/tests/mcpclient"
)

// helper is the API as the tools see it, in memory: one task whose
// states come one per look (the last one stays), and its output files.
type helper struct {
	// mu guards everything below.
	mu      sync.Mutex
	states  []wire.Task
	looks   int
	outputs map[string][]byte
	saved   map[string]string
	created []wire.CreateTask
}

func (h *helper) CreateTask(_ context.Context, in wire.CreateTask, _ ...string) (wire.Task, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.created = append(h.created, in)
	return h.states[0], nil
}

func (h *helper) Task(_ context.Context, id string) (wire.Task, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if id != h.states[0].ID {
		return wire.Task{}, errdefs.NotFoundf("task %s not found", id)
	}
	t := h.states[min(h.looks, len(h.states)-1)]
	h.looks++
	return t, nil
}

func (h *helper) ListTasks(context.Context, client.TaskQuery) (wire.TaskList, error) {
	return wire.TaskList{}, nil
}
func (h *helper) Answer(context.Context, string, string, string) error { return nil }
func (h *helper) Respond(context.Context, string, string, bool) error  { return nil }
func (h *helper) TaskAction(context.Context, string, wire.TaskAction) (wire.Task, error) {
	return wire.Task{}, nil
}

func (h *helper) TaskFiles(_ context.Context, id string) (wire.TaskFiles, error) {
	out := wire.TaskFiles{TaskID: id}
	for name, b := range h.outputs {
		out.OutputFiles = append(out.OutputFiles, wire.File{Name: name, Size: int64(len(b)), MimeType: "application/octet-stream", SavedTo: h.saved[name]})
	}
	return out, nil
}

func (h *helper) Download(_ context.Context, _, name, kind string, w io.Writer) error {
	if kind != "output" {
		return errors.New("not an output")
	}
	// In small writes, as a stream comes.
	b := h.outputs[name]
	for len(b) > 0 {
		n := min(len(b), 1000)
		if _, err := w.Write(b[:n]); err != nil {
			return err
		}
		b = b[n:]
	}
	return nil
}

const id = "6f1c2d3e-4a5b-4c6d-8e7f-001122334455"

// connect serves h's tools over an in-memory transport to the SDK's client.
func connect(t *testing.T, h *helper) *mcp.ClientSession {
	t.Helper()
	srv, err := mcpserve.New(mcpserve.Config{
		Helper: func(*mcp.RequestExtra) (mcpserve.Helper, error) { return h, nil },
		Poll:   5 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	st, ct := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(context.Background(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close(); ss.Wait() })
	return cs
}

func ptr[T any](v T) *T { return &v }

// hostile is what a guest or a model may put in a string: a terminal's
// escape (a title change, a C1 CSI), a bidi override, a NUL.
const hostile = "ok\x1b]0;pwned\x07 \u009b31m \u202etxt.exe\x00 end"

// printable fails the test when s holds a control character other than
// a line break, or a formatting character.
func printable(t *testing.T, what, s string) {
	t.Helper()
	for _, r := range s {
		if r != '\n' && (unicode.IsControl(r) || unicode.Is(unicode.Cf, r)) {
			t.Fatalf("%s holds %U: %q", what, r, s)
		}
	}
}

// TestWhatATaskSaysIsMadePrintable: a task's title, result, question and
// permission details, and its output files' names, reach the caller with
// their control and formatting characters shown as escapes, in the
// structured answer and in its text; a result past its bound is cut.
func TestWhatATaskSaysIsMadePrintable(t *testing.T) {
	h := &helper{
		states: []wire.Task{{ID: id, Title: hostile, Status: "running", ResultSummary: ptr(hostile + strings.Repeat("x", 20_000)),
			PendingQuestion:   &wire.Question{ID: "q1", Question: hostile, SuggestedAnswers: []string{hostile}},
			PendingPermission: &wire.Permission{ID: "p1", ToolName: hostile, Details: hostile}}},
		outputs: map[string][]byte{"evil\x1b[2J.txt": []byte("x")},
	}
	cs := connect(t, h)
	var task mcpserve.Task
	res, err := mcpclient.Call(context.Background(), cs, "get_task", map[string]any{"taskId": id}, &task)
	if err != nil {
		t.Fatal(err)
	}
	for what, s := range map[string]string{"title": task.Title, "result": task.Result, "question": task.Question.Text,
		"suggested answer": task.Question.SuggestedAnswers[0], "tool": task.Permission.Tool, "details": task.Permission.Details, "text": mcpclient.Text(res)} {
		printable(t, what, s)
	}
	if !strings.Contains(task.Title, `\x1b]0;pwned\x07`) || !strings.Contains(task.Title, `\u202e`) {
		t.Fatalf("title %q: the escapes should be shown", task.Title)
	}
	if len(task.Result) > 8<<10 || !strings.HasSuffix(task.Result, "(cut)") {
		t.Fatalf("a result of %d bytes was not cut: %d", 20_000+len(hostile), len(task.Result))
	}
	var outs mcpserve.Outputs
	res, err = mcpclient.Call(context.Background(), cs, "get_task_outputs", map[string]any{"taskId": id}, &outs)
	if err != nil {
		t.Fatal(err)
	}
	printable(t, "outputs", mcpclient.Text(res))
	if len(outs.Files) != 1 || outs.Files[0].Name != `evil\x1b[2J.txt` {
		t.Fatalf("outputs %+v", outs)
	}
	// The file is read by the name as listed.
	var read mcpserve.OutputRead
	if _, err := mcpclient.Call(context.Background(), cs, "read_task_output", map[string]any{"taskId": id, "name": outs.Files[0].Name}, &read); err != nil || read.Text != "x" {
		t.Fatalf("read %+v %v", read, err)
	}
}

// TestReadTaskOutput: a text file is read a part at a time, a character
// cut by the part's end left for the next, its control bytes shown as
// escapes; a PNG comes as an image (by its bytes, whatever its name); a
// binary file is not sent, and the answer says where it was saved; a
// name the task did not make, or an offset past the end, is refused.
func TestReadTaskOutput(t *testing.T) {
	var img bytes.Buffer
	png.Encode(&img, image.NewRGBA(image.Rect(0, 0, 4, 4)))
	text := strings.Repeat("é", 10) + "\x1b[31mred\r\n"
	h := &helper{
		states:  []wire.Task{{ID: id, Status: "completed"}},
		outputs: map[string][]byte{"notes.txt": []byte(text), "chart.dat": img.Bytes(), "blob.bin": {0x7f, 'E', 'L', 'F', 0, 1, 2}},
		saved:   map[string]string{"blob.bin": "/home/u/Downloads/Hivecrew/blob.bin"},
	}
	cs := connect(t, h)
	ctx := context.Background()
	var got strings.Builder
	for offset, parts := int64(0), 0; ; parts++ {
		var read mcpserve.OutputRead
		if _, err := mcpclient.Call(ctx, cs, "read_task_output", map[string]any{"taskId": id, "name": "notes.txt", "offset": offset, "maxBytes": 5}, &read); err != nil {
			t.Fatal(err)
		}
		if read.Kind != "text" || read.Offset != offset || parts > 20 {
			t.Fatalf("part %d: %+v", parts, read)
		}
		got.WriteString(read.Text)
		if read.NextOffset == 0 {
			break
		}
		offset = read.NextOffset
	}
	if want := strings.Repeat("é", 10) + `\x1b[31mred` + "\n"; got.String() != want {
		t.Fatalf("read %q; want %q", got.String(), want)
	}

	res, err := mcpclient.Call(ctx, cs, "read_task_output", map[string]any{"taskId": id, "name": "chart.dat"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var shown *mcp.ImageContent
	for _, c := range res.Content {
		if i, ok := c.(*mcp.ImageContent); ok {
			shown = i
		}
	}
	if shown == nil || shown.MIMEType != "image/png" || !bytes.Equal(shown.Data, img.Bytes()) {
		t.Fatalf("the PNG came as %+v", res.Content)
	}

	var te mcpclient.ToolError
	for _, c := range []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"taskId": id, "name": "blob.bin"}, "saved at /home/u/Downloads/Hivecrew/blob.bin"},
		{map[string]any{"taskId": id, "name": "../../etc/passwd"}, "no output file"},
		{map[string]any{"taskId": id, "name": "notes.txt", "offset": 1000}, "past the end"},
	} {
		res, err := mcpclient.Call(ctx, cs, "read_task_output", c.args, nil)
		if !errors.As(err, &te) || !strings.Contains(te.Text, c.want) {
			t.Errorf("read %v: %v; want %q", c.args, err, c.want)
		}
		if res != nil && strings.Contains(mcpclient.Text(res), "ELF\x00") {
			t.Error("the binary's bytes were sent")
		}
	}
}

// TestWaitEndsWhenTheTaskNeedsYou: run_task waits while the task runs
// and comes back as soon as a question waits for an answer; get_task
// with a wait gives up at its deadline with the task still running; a
// task paused when the wait begins is waited for, not returned at once.
func TestWaitEndsWhenTheTaskNeedsYou(t *testing.T) {
	running := wire.Task{ID: id, Status: "running", StepCount: ptr(1)}
	asking := running
	asking.PendingQuestion = &wire.Question{ID: "q1", Question: "Which colour?"}
	h := &helper{states: []wire.Task{{ID: id, Status: "queued"}, running, running, asking}}
	cs := connect(t, h)
	ctx := context.Background()
	var task mcpserve.Task
	if _, err := mcpclient.Call(ctx, cs, "run_task", map[string]any{"description": "Paint it", "waitSeconds": 30}, &task); err != nil {
		t.Fatal(err)
	}
	if task.Question == nil || task.Question.ID != "q1" || !strings.Contains(task.Next, "answer_question") {
		t.Fatalf("run_task answered %+v", task)
	}
	if len(h.created) != 1 || h.created[0].Description != "Paint it" {
		t.Fatalf("created %+v", h.created)
	}

	h2 := &helper{states: []wire.Task{running}}
	cs = connect(t, h2)
	start := time.Now()
	if _, err := mcpclient.Call(ctx, cs, "get_task", map[string]any{"taskId": id, "waitSeconds": 1}, &task); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < time.Second || d > 5*time.Second || task.Status != "running" || task.Ended {
		t.Fatalf("get_task waited %v and answered %+v", d, task)
	}

	paused := wire.Task{ID: id, Status: "paused", StatusReason: "paused by the user"}
	done := wire.Task{ID: id, Status: "completed", WasSuccessful: ptr(true), ResultSummary: ptr("Painted.")}
	h3 := &helper{states: []wire.Task{paused, paused, paused, running, done}}
	cs = connect(t, h3)
	if _, err := mcpclient.Call(ctx, cs, "get_task", map[string]any{"taskId": id, "waitSeconds": 30}, &task); err != nil {
		t.Fatal(err)
	}
	if task.Status != "completed" || !task.Ended || task.Result != "Painted." {
		t.Fatalf("get_task of a paused task answered %+v", task)
	}
}

// TestNullArgumentsAreNone: a call whose arguments are JSON null (which
// the SDK would fill with defaults by writing into a nil map, a panic
// that would end the helper) is a call without arguments.
func TestNullArgumentsAreNone(t *testing.T) {
	cs := connect(t, &helper{states: []wire.Task{{ID: id, Status: "running"}}})
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "list_tasks", Arguments: json.RawMessage("null")})
	if err != nil || res.IsError {
		t.Fatalf("list_tasks with null arguments: %+v %v", res, err)
	}
	res, err = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "run_task", Arguments: json.RawMessage("null")})
	if err != nil || !res.IsError || !strings.Contains(mcpclient.Text(res), "description") {
		t.Fatalf("run_task with null arguments: %+v %v; want description asked for", res, err)
	}
}

// TestAWaitEndsWithItsCaller: over HTTP, a caller that stops waiting for
// get_task (its request ends) stops the tool's wait too, whatever
// protocol version it speaks: the task is not looked at any more.
func TestAWaitEndsWithItsCaller(t *testing.T) {
	for _, version := range []string{mcpclient.Protocol, ""} {
		h := &helper{states: []wire.Task{{ID: id, Status: "running"}}}
		srv, err := mcpserve.New(mcpserve.Config{
			Helper: func(*mcp.RequestExtra) (mcpserve.Helper, error) { return h, nil },
			Poll:   5 * time.Millisecond,
		})
		if err != nil {
			t.Fatal(err)
		}
		hs := httptest.NewServer(mcpserve.HTTPHandler(srv, mcp.StreamableHTTPOptions{}))
		defer hs.Close()
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(context.Background(),
			&mcp.StreamableClientTransport{Endpoint: hs.URL, MaxRetries: -1}, &mcp.ClientSessionOptions{ProtocolVersion: version})
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		if _, err := mcpclient.Call(ctx, cs, "get_task", map[string]any{"taskId": id, "waitSeconds": 60}, nil); err == nil {
			t.Fatal("the call outlived its caller's deadline")
		}
		looks := func() int {
			h.mu.Lock()
			defer h.mu.Unlock()
			return h.looks
		}
		time.Sleep(100 * time.Millisecond) // the request's end reaches the server
		before := looks()
		time.Sleep(300 * time.Millisecond)
		if after := looks(); after > before+1 || before < 10 {
			t.Fatalf("protocol %q: the task was looked at %d times while the caller waited, and %d times after it left", version, before, after-before)
		}
	}
}
