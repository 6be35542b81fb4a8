// Package trace keeps the record of one agent session on disk, in the
// session's folder: events.jsonl (append-only, one event a line, synced at
// step boundaries), screenshots/NNNN.png|jpg, artifacts/ (the outbox when the
// task ends) and conversation.json. Read tolerates a last line cut short by a
// crash; Export writes the session as JSON, Markdown or a self-contained HTML
// replay.
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
	ConversationFile = "conversation.json"
	ScreenshotsDir   = "screenshots"
	ArtifactsDir     = "artifacts"
)

// Writer appends to one session's trace. It is safe for concurrent use.
type Writer struct {
	dir string
	// mu guards f, seq and shots.
	mu    sync.Mutex
	f     *os.File
	seq   int
	shots int
}

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
	f, err := os.OpenFile(filepath.Join(dir, EventsFile), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open trace: %w", err)
	}
	w.f = f
	return w, nil
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

// Sync makes what was appended durable; the agent calls it at the end of
// every step.
func (w *Writer) Sync() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.f.Sync(); err != nil {
		return fmt.Errorf("sync trace: %w", err)
	}
	return nil
}

// Screenshot stores an image as screenshots/NNNN.<format> and returns its
// path relative to the session folder.
func (w *Writer) Screenshot(format string, data []byte) (string, error) {
	if format != "png" && format != "jpeg" {
		return "", fmt.Errorf("screenshot format %q", format)
	}
	ext := map[string]string{"png": "png", "jpeg": "jpg"}[format]
	w.mu.Lock()
	w.shots++
	rel := filepath.Join(ScreenshotsDir, fmt.Sprintf("%04d.%s", w.shots, ext))
	w.mu.Unlock()
	if err := writeAtomic(filepath.Join(w.dir, rel), data); err != nil {
		return "", fmt.Errorf("save screenshot: %w", err)
	}
	return rel, nil
}

// SaveConversation replaces conversation.json with v (the LLM messages).
func (w *Writer) SaveConversation(v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if err := writeAtomic(filepath.Join(w.dir, ConversationFile), data); err != nil {
		return fmt.Errorf("save conversation: %w", err)
	}
	return nil
}

// Close syncs and closes the events file.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return errors.Join(w.f.Sync(), w.f.Close())
}

func writeAtomic(path string, data []byte) error {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	_, werr := f.Write(data)
	if werr == nil {
		werr = f.Sync()
	}
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		os.Remove(tmp)
		return werr
	}
	return os.Rename(tmp, path)
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
	if conv, err := os.ReadFile(filepath.Join(dir, ConversationFile)); err == nil && json.Valid(conv) {
		s.Conversation = conv
	}
	return s, nil
}
