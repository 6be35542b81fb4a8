package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hivecrew/hivecrew/core/daemon"
	"github.com/hivecrew/hivecrew/core/wire"
	"github.com/hivecrew/hivecrew/tests/daemontest"
	"github.com/hivecrew/hivecrew/tests/llmtest"
)

// Hostile input: request bodies no client should send, Host names a DNS
// rebinding page sends, file names that climb out of their folder, and
// bodies over the caps. The API answers each with a 4xx in its error
// shape, never a 5xx or a dropped connection, and stays healthy.

// target is an in-process helper (fake VMs) that fuzz inputs are sent to,
// with a finished task, a provider and a schedule for the routes that
// need one.
type target struct {
	d          *daemontest.Helper
	client     *http.Client
	taskID     string
	providerID string
	scheduleID string
}

func startTarget(f *testing.F, mutate func(*daemon.Config)) *target {
	f.Helper()
	llm := llmtest.New(f)
	d := daemontest.Start(f, mutate)
	ctx := context.Background()
	name, model, key := "Scripted", "scripted", "sk-fuzz"
	p, err := d.Unix.AddProvider(ctx, wire.ProviderInput{DisplayName: &name, BaseURL: &llm.URL, APIKey: &key, DefaultModelID: &model})
	if err != nil {
		f.Fatal(err)
	}
	task, err := d.Unix.CreateTask(ctx, wire.CreateTask{Description: "A task for the fuzzer"})
	if err != nil {
		f.Fatal(err)
	}
	daemontest.WaitTask(f, d.Unix, task.ID, "the fuzzer's task", 20*time.Second, func(t wire.Task) bool { return t.CompletedAt != nil })
	at := time.Now().Add(24 * time.Hour)
	s, err := d.Unix.CreateSchedule(ctx, wire.CreateSchedule{Title: "Fuzz", Description: "Later", Schedule: &wire.When{ScheduledAt: &at}})
	if err != nil {
		f.Fatal(err)
	}
	return &target{d: d, client: &http.Client{Timeout: 30 * time.Second}, taskID: task.ID, providerID: p.ID, scheduleID: s.ID}
}

// send sends a request over TCP with the API key and checks the promise:
// an answer (a handler that panics drops the connection), no 5xx, and an
// error in the API's shape.
func (tg *target) send(t *testing.T, method, path, contentType string, body []byte, hdr ...string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, "http://"+tg.d.Addr+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+tg.d.Key)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
		if hdr[i] == "Host" {
			req.Host = hdr[i+1]
		}
	}
	start := time.Now()
	resp, err := tg.client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: no answer (did a handler panic?): %v", method, path, err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("%s %s with %q: answered after %s", method, path, truncate(body), took)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: answer cut short: %v", method, path, err)
	}
	if resp.StatusCode >= 500 {
		t.Fatalf("%s %s with %q: %d %s", method, path, truncate(body), resp.StatusCode, out)
	}
	if resp.StatusCode >= 400 {
		checkErrorShape(t, out)
	}
	return resp.StatusCode, out
}

// checkErrorShape requires {"error": {"message", "code"}}.
func checkErrorShape(t *testing.T, out []byte) {
	t.Helper()
	var e wire.Error
	if err := json.Unmarshal(out, &e); err != nil || e.Error.Message == "" || e.Error.Code == "" {
		t.Fatalf("error body %s is not {error: {message, code}}", truncate(out))
	}
}

func truncate(b []byte) string {
	if len(b) > 300 {
		return string(b[:300]) + "…"
	}
	return string(b)
}

// healthy checks that the helper still answers.
func (tg *target) healthy(t *testing.T) {
	t.Helper()
	if code, _ := tg.send(t, "GET", "/api/v1/system/status", "", nil); code != 200 {
		t.Fatalf("status after the input: %d", code)
	}
}

// noStagedUploads waits briefly for the request's staging folder to go:
// an upload, accepted or refused, leaves nothing in Tasks/.upload-*.
func (tg *target) noStagedUploads(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for {
		left, _ := filepath.Glob(filepath.Join(tg.d.Paths.Tasks(), ".upload-*"))
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("staged uploads left behind: %v", left)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// jsonRoutes are the routes that decode a JSON body; {task}, {provider}
// and {schedule} name existing ones.
var jsonRoutes = []struct{ method, path string }{
	{"POST", "/api/v1/tasks"},
	{"PATCH", "/api/v1/tasks/{task}"},
	{"POST", "/api/v1/tasks/{task}/question/answer"},
	{"POST", "/api/v1/tasks/{task}/permission/respond"},
	{"POST", "/api/v1/tasks/{task}/instructions"},
	{"POST", "/api/v1/tasks/{task}/takeover"},
	{"POST", "/api/v1/tasks/{task}/input"},
	{"POST", "/api/v1/providers"},
	{"PATCH", "/api/v1/providers/{provider}"},
	{"POST", "/api/v1/schedules"},
	{"PATCH", "/api/v1/schedules/{schedule}"},
	{"PATCH", "/api/v1/settings"},
	{"POST", "/api/v1/apikeys"},
}

func (tg *target) path(p string) string {
	return strings.NewReplacer("{task}", tg.taskID, "{provider}", tg.providerID, "{schedule}", tg.scheduleID).Replace(p)
}

// FuzzJSONBodies sends arbitrary bodies to every route that decodes JSON.
func FuzzJSONBodies(f *testing.F) {
	deep := strings.Repeat("[", 20000) + strings.Repeat("]", 20000)
	seeds := []string{
		``, `{}`, `null`, `[]`, `"x"`, `1e999`, `{} {}`, `{"a":1}`, "\xef\xbb\xbf{}", `{`, `}`, deep,
		`{"description":"do it","timeoutMinutes":1e400}`,
		`{"description":"do it","maxIterations":-9223372036854775809}`,
		`{"description":"\u0000\ud800\udfff","toolPolicy":{"run_shell":"ask"}}`,
		`{"description":"x","toolPolicy":{"run_shell":"maybe","":""}}`,
		`{"description":"x","outputDirectory":"../../etc","templateId":"../host"}`,
		`{"description":"x","description":"y"}`,
		`{"action":"cancel"}`, `{"action":"rerun"}`, `{"action":"resume","instructions":"` + strings.Repeat("z", 5000) + `"}`,
		`{"questionId":"q","answer":{"nested":true}}`, `{"permissionId":"p","approved":"yes"}`,
		`{"text":"` + strings.Repeat("é", 2000) + `"}`, `{"action":"start"}`,
		`{"type":"click","x":1e308,"y":-1e308}`, `{"type":"key","key":"\u0000","modifiers":["cmd","cmd"]}`,
		`{"displayName":"X","baseURL":"http://[::1]:0/v1","timeoutInterval":-1}`,
		`{"displayName":"` + strings.Repeat("P", 300) + `","baseURL":"javascript:alert(1)"}`,
		`{"isDefault":false}`, `{"apiKey":"a\nb"}`,
		`{"title":"t","description":"d","schedule":{"type":"recurring","recurrence":{"frequency":"daily","time":"25:99"}}}`,
		`{"title":"t","description":"d","schedule":{"type":"one-time","at":"yesterday"}}`,
		`{"schedule":{"type":"recurring","recurrence":{"frequency":"weekly","daysOfWeek":[-1,99]}}}`,
		`{"maxConcurrentVMs":0}`, `{"maxConcurrentVMs":"4"}`, `{"toolPolicy":null}`, `{"modelPrices":{"x":{"input":-1}}}`,
		`{"name":"` + strings.Repeat("k", 1000) + `"}`, `{"name":null}`,
	}
	for i, s := range seeds {
		f.Add(uint8(i%len(jsonRoutes)), []byte(s))
		f.Add(uint8((i*7+3)%len(jsonRoutes)), []byte(s))
	}
	tg := startTarget(f, nil)
	f.Fuzz(func(t *testing.T, route uint8, body []byte) {
		r := jsonRoutes[int(route)%len(jsonRoutes)]
		tg.send(t, r.method, tg.path(r.path), "application/json", body)
		tg.healthy(t)
	})
}

// multipartBody builds a multipart body; each part is (headers, content).
func multipartBody(boundary string, parts ...[2]string) []byte {
	var b bytes.Buffer
	for _, p := range parts {
		fmt.Fprintf(&b, "--%s\r\n%s\r\n\r\n%s\r\n", boundary, p[0], p[1])
	}
	fmt.Fprintf(&b, "--%s--\r\n", boundary)
	return b.Bytes()
}

func field(name, value string) [2]string {
	return [2]string{`Content-Disposition: form-data; name="` + name + `"`, value}
}

func file(disposition, content string) [2]string {
	return [2]string{"Content-Disposition: " + disposition + "\r\nContent-Type: application/octet-stream", content}
}

// FuzzMultipartBodies sends arbitrary multipart bodies (and boundaries) to
// the routes that take files; a refused or accepted upload leaves nothing
// staged, and a file name never leads out of the task's folder.
func FuzzMultipartBodies(f *testing.F) {
	const b = "fuzzboundary"
	desc := field("description", "Read the file")
	seeds := [][]byte{
		multipartBody(b, desc, file(`form-data; name="files"; filename="notes.txt"`, "hello")),
		multipartBody(b, desc, file(`form-data; name="files"; filename="../escape.txt"`, "x")),
		multipartBody(b, desc, file(`form-data; name="files"; filename*=UTF-8''..%2F..%2Fescape.txt`, "x")),
		multipartBody(b, desc, file(`form-data; name="files"; filename="a\\b.txt"`, "x")),
		multipartBody(b, desc, file(`form-data; name="files"; filename=".."`, "x")),
		multipartBody(b, desc, file(`form-data; name="files"; filename="`+strings.Repeat("n", 300)+`"`, "x")),
		multipartBody(b, desc, file(`form-data; name="files"; filename="x.txt"`, "1"), file(`form-data; name="files"; filename="x.txt"`, "2")),
		multipartBody(b, desc, file(`form-data; name="other"; filename="x.txt"`, "1")),
		multipartBody(b, desc, desc),
		multipartBody(b, desc, field("colour", "blue")),
		multipartBody(b, desc, field("planFirst", "perhaps"), field("timeoutMinutes", "9999999999999999999")),
		multipartBody(b, desc, field("toolPolicy", `{"run_shell":`)),
		multipartBody(b, field("title", "s"), desc, field("schedule", `{"type":"one-time","at":"2999-01-01T00:00:00Z"}`)),
		multipartBody(b, [2]string{"Content-Disposition: form-data", "no name"}),
		multipartBody(b, [2]string{"Content-Disposition: " + strings.Repeat("x", 20000), "long header"}),
		[]byte("--" + b + "\r\nContent-Disposition: form-data; name=\"description\"\r\n\r\ncut off"),
		[]byte("not multipart at all"),
		nil,
	}
	for i, s := range seeds {
		f.Add(uint8(i), b, s)
	}
	f.Add(uint8(0), "", seeds[0])
	f.Add(uint8(1), strings.Repeat("b", 80), seeds[0])
	tg := startTarget(f, func(c *daemon.Config) { c.MaxUploadBytes = 1 << 20 })
	f.Fuzz(func(t *testing.T, route uint8, boundary string, body []byte) {
		path := "/api/v1/tasks"
		if route%2 == 1 {
			path = "/api/v1/schedules"
		}
		ct := "multipart/form-data; boundary=" + strings.Map(func(r rune) rune {
			if r < 0x20 || r == 0x7f {
				return -1 // not a header a client can send
			}
			return r
		}, boundary)
		code, out := tg.send(t, "POST", path, ct, body)
		if code == 201 {
			var got struct {
				InputFiles []wire.File `json:"inputFiles"`
			}
			json.Unmarshal(out, &got)
			for _, in := range got.InputFiles {
				if in.Name == "" || in.Name == "." || in.Name == ".." || strings.ContainsAny(in.Name, `/\`) {
					t.Fatalf("input file stored as %q", in.Name)
				}
			}
		}
		tg.noStagedUploads(t)
		tg.healthy(t)
	})
}

// TestDNSRebindingHosts: a page on a domain that resolves to 127.0.0.1
// sends its own name as Host; the API refuses it (or Go refuses the
// header), even with a valid key. The names of this machine pass.
func TestDNSRebindingHosts(t *testing.T) {
	h := startHelper(t, nil)
	_, port, _ := strings.Cut(h.addr, ":")
	for _, host := range []string{
		"127.0.0.1.evil.com", "127.0.0.1.evil.com:" + port, "localhost.evil.com:" + port, "evil.localhost.com",
		"127.0.0.1.nip.io:" + port, "localhost.:" + port, "127.1:" + port, "2130706433:" + port, "0x7f.0.0.1:" + port,
		"[::1].evil.com", "evil.com:" + port, "evil.com#@127.0.0.1", "127.0.0.1@evil.com",
	} {
		code, out := h.req("GET", "/api/v1/tasks", nil, "Host", host)
		switch {
		case code == http.StatusForbidden:
			var e wire.Error
			if json.Unmarshal(out, &e) != nil || !strings.Contains(e.Error.Message, "not this machine") {
				t.Errorf("Host %q: 403 without the API's reason: %s", host, out)
			}
		case code == http.StatusBadRequest && !json.Valid(out):
			// net/http refused a malformed Host before the API saw it.
		default:
			t.Errorf("Host %q: %d %s; want 403", host, code, out)
		}
	}
	for _, host := range []string{"127.0.0.1:" + port, "localhost:" + port, "LOCALHOST:" + port, "[::1]:" + port} {
		h.expect(200, "GET", "/api/v1/tasks", nil, "Host", host)
	}
	// A rebinding page's own origin, with the victim's Host, is refused too.
	for _, origin := range []string{"http://127.0.0.1.evil.com:" + port, "null", "file://", "http://localhost:" + port + ".evil.com", "chrome-extension://abc"} {
		h.expect(403, "GET", "/api/v1/tasks", nil, "Origin", origin)
	}
}

// TestPathTraversalInFileNames: upload names that climb or carry a path
// are refused and store nothing; download names that climb reach nothing
// but the task's own files (never the database next door).
func TestPathTraversalInFileNames(t *testing.T) {
	h := startHelper(t, nil)
	h.addProvider()
	for _, name := range []string{"../escape.txt", "..", ".", "a/b.txt", `a\b.txt`, "/etc/passwd", `C:\boot.ini`, "x\x00y.txt", "tab\tname", strings.Repeat("n", 256), "bad\xffutf8"} {
		ct, body := multipartTask(map[string]string{"description": "x"}, map[string]string{name: "x"})
		h.expect(400, "POST", "/api/v1/tasks", body, "Content-Type", ct)
	}
	// RFC 2231 encoded names are decoded before the check.
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	mw.WriteField("description", "x")
	hdr := textproto.MIMEHeader{}
	hdr.Set("Content-Disposition", `form-data; name="files"; filename*=UTF-8''..%2F..%2Fescape.txt`)
	w, _ := mw.CreatePart(hdr)
	w.Write([]byte("x"))
	mw.Close()
	h.expect(400, "POST", "/api/v1/tasks", buf.Bytes(), "Content-Type", mw.FormDataContentType())
	var list wire.TaskList
	json.Unmarshal(h.expect(200, "GET", "/api/v1/tasks", nil), &list)
	if list.Total != 0 {
		t.Fatalf("%d tasks stored from refused uploads", list.Total)
	}
	filepath.WalkDir(h.paths.Home, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.Name() == "escape.txt" {
			t.Errorf("a refused upload was written: %s", p)
		}
		return nil
	})

	ct, body := multipartTask(map[string]string{"description": "Keep the notes"}, map[string]string{"notes.txt": "my notes"})
	var task wire.Task
	json.Unmarshal(h.expect(201, "POST", "/api/v1/tasks", body, "Content-Type", ct), &task)
	h.waitTask(task.ID, "the end", terminal)
	if _, out := h.req("GET", "/api/v1/tasks/"+task.ID+"/files/notes.txt", nil); string(out) != "my notes" {
		t.Fatalf("the task's own file: %q", out)
	}
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for _, name := range []string{
		"../../../hivecrew.db", "..%2F..%2F..%2Fhivecrew.db", "%2e%2e/%2e%2e/%2e%2e/hivecrew.db", "notes.txt/../../../../hivecrew.db",
		"..%5C..%5C..%5Chivecrew.db", "%2Fetc%2Fpasswd", "notes.txt%00", "..", "hivecrew.db", "inputs/notes.txt",
	} {
		for _, typ := range []string{"", "?type=input", "?type=output"} {
			req, _ := http.NewRequest("GET", "http://"+h.addr+"/api/v1/tasks/"+task.ID+"/files/"+name+typ, nil)
			req.Header.Set("Authorization", "Bearer "+h.key)
			resp, err := noRedirect.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			out, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			switch loc := resp.Header.Get("Location"); {
			case resp.StatusCode == 404 || resp.StatusCode == 400:
				checkErrorShape(t, out)
			case resp.StatusCode/100 == 3 && strings.HasPrefix(loc, "/api/v1/"):
				// The router cleaned the path; where it leads is no file either.
				req, _ := http.NewRequest("GET", "http://"+h.addr+loc, nil)
				req.Header.Set("Authorization", "Bearer "+h.key)
				next, err := noRedirect.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				body, _ := io.ReadAll(next.Body)
				next.Body.Close()
				if next.StatusCode >= 500 || next.Header.Get("Content-Disposition") != "" || bytes.Contains(body, []byte("SQLite format 3")) {
					t.Errorf("download of %q%s led to %s: %d %s", name, typ, loc, next.StatusCode, truncate(body))
				}
			default:
				t.Errorf("download of %q%s: %d %s %s", name, typ, resp.StatusCode, loc, truncate(out))
			}
			if bytes.Contains(out, []byte("SQLite format 3")) || bytes.Contains(out, []byte("root:")) {
				t.Errorf("download of %q%s reached a file outside the task: %s", name, typ, truncate(out))
			}
		}
	}
}

// TestOversizedBodies: a JSON body over 1 MiB, a form field over 1 MiB and
// a file over the upload cap (with and without a Content-Length) are
// refused with 413 in the API's shape; nothing is stored or left staged
// and the helper goes on answering.
func TestOversizedBodies(t *testing.T) {
	h := startHelper(t, func(c *daemon.Config) { c.MaxUploadBytes = 2 << 20 })
	h.addProvider()
	big := strings.Repeat("x", 3<<20)
	h.expect(413, "POST", "/api/v1/tasks", `{"description":"`+big[:3<<19]+`"}`)
	h.expect(413, "PATCH", "/api/v1/settings", `{"outputDirectory":"`+big[:3<<19]+`"}`)
	ct, body := multipartTask(map[string]string{"description": big[:3<<19]}, nil)
	out := h.expect(413, "POST", "/api/v1/tasks", body, "Content-Type", ct)
	if !strings.Contains(string(out), "description") {
		t.Errorf("413 for a big field does not name it: %s", out)
	}
	ct, body = multipartTask(map[string]string{"description": "big file"}, map[string]string{"big.bin": big})
	h.expect(413, "POST", "/api/v1/tasks", body, "Content-Type", ct)
	// The same without a Content-Length: the cap holds on the stream.
	req, _ := http.NewRequest("POST", "http://"+h.addr+"/api/v1/tasks", io.MultiReader(bytes.NewReader(body)))
	req.ContentLength = -1
	req.Header.Set("Authorization", "Bearer "+h.key)
	req.Header.Set("Content-Type", ct)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	out, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Fatalf("chunked upload over the cap: %d %s", resp.StatusCode, out)
	}
	checkErrorShape(t, out)
	var list wire.TaskList
	json.Unmarshal(h.expect(200, "GET", "/api/v1/tasks", nil), &list)
	if list.Total != 0 {
		t.Fatalf("%d tasks stored from refused bodies", list.Total)
	}
	if left, _ := filepath.Glob(filepath.Join(h.paths.Tasks(), ".upload-*")); len(left) > 0 {
		t.Fatalf("staged uploads left: %v", left)
	}
	h.expect(200, "GET", "/api/v1/system/status", nil)
}
