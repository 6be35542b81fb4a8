package agent

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/hivecrew/hivecrew/core/llm"
	"github.com/hivecrew/hivecrew/core/trace"
)

// The conversation on disk. The session's conversation.jsonl holds the
// run's conversation as it grows, one record a line: each message once it
// is final (a step's user message when it is sent, the model's answer as
// it comes), and each condensation of the history. Screenshots are not in
// it (a message's image names its file in the session's screenshots). A
// task the helper stopped under, running or held, is given the
// conversation back (Load, Config.Resume) and goes on from it in a fresh
// VM; what the last step did after the model's answer was saved is lost,
// and the model is told so.

// conversationVersion is the format of the records; a trace without it
// (an older helper's, of go-openai chat messages) cannot be resumed.
const conversationVersion = 1

// record is a line of conversation.jsonl.
type record struct {
	V int `json:"v"`
	// Message is the conversation's next message.
	Message *llm.Message `json:"message,omitempty"`
	// Condensed replaces the messages between the task and message Keep
	// (its index in the conversation before) with Summary.
	Condensed *condensation `json:"condensed,omitempty"`
}

type condensation struct {
	Keep    int         `json:"keep"`
	Summary llm.Message `json:"summary"`
}

// save writes the messages not yet in the trace. A message is final when
// it is saved: the user message of a step once its screen joins it, the
// model's answer once it came. Every request to the model comes after the
// messages it carries are saved, so a user message is filtered here, the
// one way to the model and to the trace (tool results and errors,
// observations, notes, instructions).
func (r *Runner) save() {
	if r.saved > len(r.msgs) {
		r.saved = len(r.msgs)
	}
	recs := make([]any, 0, len(r.msgs)-r.saved)
	for i := r.saved; i < len(r.msgs); i++ {
		r.filterMessage(&r.msgs[i])
		recs = append(recs, record{V: conversationVersion, Message: &r.msgs[i]})
	}
	if len(recs) == 0 {
		return
	}
	if err := r.cfg.Trace.AppendConversation(recs...); err != nil {
		r.traceFailed(err)
	}
	r.saved = len(r.msgs)
}

// filterMessage filters the text of a user message, its tool results'
// included. The model's own messages are left as they came: they are what
// it was sent back, and a provider may refuse a changed one.
func (r *Runner) filterMessage(m *llm.Message) {
	if m.Role != llm.RoleUser {
		return
	}
	for i := range m.Content {
		switch b := &m.Content[i]; b.Type {
		case llm.BlockText:
			b.Text = r.filter(b.Text)
		case llm.BlockToolResult:
			for j := range b.Result.Content {
				if rb := &b.Result.Content[j]; rb.Type == llm.BlockText {
					rb.Text = r.filter(rb.Text)
				}
			}
		}
	}
}

// saveCondensed records a condensation (after which the summary and the
// messages kept are in the trace).
func (r *Runner) saveCondensed(keep int, summary llm.Message) {
	if r.saved < keep {
		// Messages condensed before they were saved: save them first, so
		// that the record's index means what it says.
		r.save()
	}
	if err := r.cfg.Trace.AppendConversation(record{V: conversationVersion, Condensed: &condensation{Keep: keep, Summary: summary}}); err != nil {
		r.traceFailed(err)
	}
	r.saved = r.saved - keep + 2
}

// Sessions whose conversation cannot be resumed: nothing was saved yet
// (the agent had not taken its first step), or an older helper saved it
// in a form before conversationVersion.
var (
	ErrNoConversation  = errors.New("the session has no conversation yet")
	ErrOldConversation = errors.New("the session's conversation was saved by an older helper, in a form this one cannot resume")
)

// maxConversationLine bounds a record read back (a step's results are cut
// to 16 KB each; a summary to a few KB).
const maxConversationLine = 32 << 20

// LoadConversation reads a session's conversation back, for a task to
// resume with it. Images come back as the notes that stand in for left-out
// screenshots (the task goes on in a fresh VM, whose screen it is shown),
// and a last line cut short by a crash is left out.
func LoadConversation(sessionDir string) ([]llm.Message, error) {
	f, err := os.Open(filepath.Join(sessionDir, trace.ConversationFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, ErrNoConversation
	}
	if err != nil {
		return nil, fmt.Errorf("read the conversation: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), maxConversationLine)
	var msgs []llm.Message
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var rec record
		if err := json.Unmarshal(line, &rec); err != nil {
			break // only the last line can be cut short
		}
		switch {
		case rec.V != conversationVersion:
			return nil, ErrOldConversation
		case rec.Message != nil:
			msgs = append(msgs, *rec.Message)
		case rec.Condensed != nil:
			k := rec.Condensed.Keep
			if k < 1 || k > len(msgs) {
				return nil, fmt.Errorf("read the conversation: a condensation keeps from message %d of %d", k, len(msgs))
			}
			msgs = append([]llm.Message{msgs[0], rec.Condensed.Summary}, msgs[k:]...)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read the conversation: %w", err)
	}
	if len(msgs) == 0 {
		return nil, ErrNoConversation
	}
	return withoutImages(msgs), nil
}

// withoutImages returns msgs with every image a note (Compact keeps none):
// images are saved without their data.
func withoutImages(msgs []llm.Message) []llm.Message { return llm.Compact(msgs, 0) }
