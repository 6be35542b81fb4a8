// Package trace keeps the record of one agent session on disk, in the
// session's folder: events.jsonl (append-only, one event a line),
// conversation.jsonl (append-only, one LLM message a line, screenshots left
// out), screenshots/NNNN.png|jpg and artifacts/ (the outbox when the task
// ends). Everything written is durable once Sync returns. The agent calls
// SyncSoon at every step boundary, which syncs off its path within
// SyncDelay, and Sync when the session ends. Read tolerates a last line
// cut short by a crash; Export writes the session as JSON, Markdown or a
// self-contained HTML replay.
package trace

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// Event is one entry of a session's trace.
type Event struct {
	Seq       int       `json:"seq"`
	Time      time.Time `json:"time"`
	Type      string    `json:"type"` // as the API's event types
	Step      int       `json:"step,omitempty"`
	Tool      string    `json:"tool,omitempty"`
	Summary   string    `json:"summary"`
	Details   string    `json:"details,omitempty"`
	Reasoning string    `json:"reasoning,omitempty"`
	Status    string    `json:"status,omitempty"`
	// Screenshot is the screenshot's path relative to the session folder.
	Screenshot string `json:"screenshot,omitempty"`
	// Tokens used by the LLM call this event records.
	PromptTokens     int `json:"promptTokens,omitempty"`
	CompletionTokens int `json:"completionTokens,omitempty"`
}

// File and folder names inside a session folder.
const (
	EventsFile       = "events.jsonl"
	ConversationFile = "conversation.jsonl"
	// legacyConversationFile is where traces written before conversation.jsonl
	// kept the whole conversation as one JSON array.
	legacyConversationFile = "conversation.json"
	ScreenshotsDir         = "screenshots"
	ArtifactsDir           = "artifacts"
)

// Writer appends to one session's trace. It is safe for concurrent use.
type Writer struct {
	dir string
	// mu guards everything below.
	mu    sync.Mutex
	f     *os.File // events.jsonl
	conv  *os.File // conversation.jsonl
	seq   int
	shots int
	// unsynced are the screenshots written since the last Sync, open so
	// that Sync can make them durable before the events that name them.
	unsynced []*os.File
	// soon is SyncSoon's pending background Sync, lateErr the error of one
	// that failed, until SyncSoon or Sync reports it.
	soon    *time.Timer
	lateErr error
	closed  bool
}

// SyncDelay bounds how long SyncSoon leaves what was written unsynced.
const SyncDelay = time.Second

// Create makes the session folder (or continues an existing trace) and
// opens its events file for appending.
func Create(dir string) (*Writer, error) {
	for _, d := range []string{dir, filepath.Join(dir, ScreenshotsDir), filepath.Join(dir, ArtifactsDir)} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, fmt.Errorf("create trace folder: %w", err)
		}
	}
	w := &Writer{dir: dir}
	if s, err := Read(dir); err == nil {
		for _, e := range s.Events {
			w.seq = max(w.seq, e.Seq)
		}
	}
	ents, _ := os.ReadDir(filepath.Join(dir, ScreenshotsDir))
	w.shots = len(ents)
	// A trace continued after a crash may end in a line cut short: it is
	// cut off, so that what is appended starts a line of its own.
	for _, name := range []string{EventsFile, ConversationFile} {
		if err := cutTornLine(filepath.Join(dir, name)); err != nil {
			return nil, fmt.Errorf("open trace: %w", err)
		}
	}
	f, err := os.OpenFile(filepath.Join(dir, EventsFile), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open trace: %w", err)
	}
	conv, err := os.OpenFile(filepath.Join(dir, ConversationFile), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("open trace: %w", err)
	}
	w.f, w.conv = f, conv
	return w, nil
}

// cutTornLine truncates a file after its last newline (a missing file is
// left missing).
func cutTornLine(path string) error {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) || (err == nil && (len(data) == 0 || data[len(data)-1] == '\n')) {
		return nil
	}
	if err != nil {
		return err
	}
	return os.Truncate(path, int64(bytes.LastIndexByte(data, '\n')+1))
}

// Dir is the session folder.
func (w *Writer) Dir() string { return w.dir }

// Append numbers an event, stamps it and writes it as one line. The line is
// on disk after the next Sync.
func (w *Writer) Append(e Event) (Event, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.seq++
	e.Seq = w.seq
	if e.Time.IsZero() {
		e.Time = time.Now().UTC()
	}
	line, err := json.Marshal(e)
	if err != nil {
		return e, err
	}
	if _, err := w.f.Write(append(line, '\n')); err != nil {
		w.seq--
		return e, fmt.Errorf("write trace: %w", err)
	}
	return e, nil
}

// Sync makes everything written so far durable: the screenshots first,
// then the conversation and the events that refer to them. The agent calls
// it at the end of every step.
func (w *Writer) Sync() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return errors.Join(w.takeLateErr(), w.syncLocked())
}

// takeLateErr returns, once, the error of a background Sync that failed;
// w.mu is held.
func (w *Writer) takeLateErr() error {
	err := w.lateErr
	w.lateErr = nil
	return err
}

// SyncSoon makes everything written so far durable within SyncDelay
// without waiting for it: a background Sync is scheduled unless one is
// pending. An agent's step so costs no fsync on its path (three a step,
// each a journal commit of the host's filesystem shared by every running
// agent), and a crash loses at most the last second of a trace, as the
// database, in WAL mode with synchronous=NORMAL, may lose its last
// transactions. It returns the error of a background Sync that failed
// since the last SyncSoon or Sync.
func (w *Writer) SyncSoon() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.soon == nil && !w.closed {
		w.soon = time.AfterFunc(SyncDelay, w.syncLate)
	}
	return w.takeLateErr()
}

// syncLate is SyncSoon's background Sync.
func (w *Writer) syncLate() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.soon = nil
	if w.closed {
		return
	}
	if err := w.syncLocked(); err != nil && w.lateErr == nil {
		w.lateErr = err
	}
}

func (w *Writer) syncLocked() error {
	var errs []error
	for _, f := range w.unsynced {
		errs = append(errs, f.Sync(), f.Close())
	}
	w.unsynced = w.unsynced[:0]
	errs = append(errs, w.conv.Sync(), w.f.Sync())
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("sync trace: %w", err)
	}
	return nil
}

// Screenshot stores an image as screenshots/NNNN.<format> and returns its
// path relative to the session folder. The file is complete when this
// returns (a crash while writing leaves a file no event names) and durable
// after the next Sync.
func (w *Writer) Screenshot(format string, data []byte) (string, error) {
	if format != "png" && format != "jpeg" {
		return "", fmt.Errorf("screenshot format %q", format)
	}
	ext := map[string]string{"png": "png", "jpeg": "jpg"}[format]
	w.mu.Lock()
	w.shots++
	rel := filepath.Join(ScreenshotsDir, fmt.Sprintf("%04d.%s", w.shots, ext))
	w.mu.Unlock()
	// The number is ours: write without holding up the events.
	path := filepath.Join(w.dir, rel)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", fmt.Errorf("save screenshot: %w", err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		os.Remove(path)
		return "", fmt.Errorf("save screenshot: %w", err)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.unsynced = append(w.unsynced, f)
	return rel, nil
}

// AppendConversation appends LLM messages to conversation.jsonl, one a
// line. The agent appends each message once, with its screenshots left out.
func (w *Writer) AppendConversation(msgs ...any) error {
	var buf bytes.Buffer
	for _, m := range msgs {
		line, err := json.Marshal(m)
		if err != nil {
			return fmt.Errorf("save conversation: %w", err)
		}
		buf.Write(line)
		buf.WriteByte('\n')
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, err := w.conv.Write(buf.Bytes()); err != nil {
		return fmt.Errorf("save conversation: %w", err)
	}
	return nil
}

// Close syncs and closes the trace's files.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil
	}
	w.closed = true
	if w.soon != nil {
		w.soon.Stop()
		w.soon = nil
	}
	return errors.Join(w.lateErr, w.syncLocked(), w.conv.Close(), w.f.Close())
}

// Session is a trace read back.
type Session struct {
	Dir          string
	Events       []Event
	Conversation json.RawMessage
	// Truncated says the last line was cut short (a crash while writing)
	// and was left out.
	Truncated bool
}

// readConversation returns the conversation as one JSON array: the lines
// of conversation.jsonl (up to one cut short by a crash), or an older
// trace's conversation.json; nil when there is none.
func readConversation(dir string) json.RawMessage {
	data, err := os.ReadFile(filepath.Join(dir, ConversationFile))
	if err != nil {
		if old, err := os.ReadFile(filepath.Join(dir, legacyConversationFile)); err == nil && json.Valid(old) {
			return old
		}
		return nil
	}
	out := []byte{'['}
	for line := range bytes.Lines(data) {
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		if !json.Valid(line) {
			break // only the last line can be cut short
		}
		if len(out) > 1 {
			out = append(out, ',')
		}
		out = append(out, line...)
	}
	return append(out, ']')
}

// Read reads a session's trace.
func Read(dir string) (Session, error) {
	s := Session{Dir: dir}
	data, err := os.ReadFile(filepath.Join(dir, EventsFile))
	if err != nil {
		return s, fmt.Errorf("read trace: %w", err)
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var e Event
		if err := json.Unmarshal(line, &e); err != nil {
			s.Truncated = true // only the last line can be cut short; stop there
			break
		}
		s.Events = append(s.Events, e)
	}
	s.Conversation = readConversation(dir)
	return s, nil
}
