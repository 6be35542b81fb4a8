package mcpserve

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hivecrew/hivecrew/core/files"
	"github.com/hivecrew/hivecrew/core/wire"
)

// Bounds of the output tools.
const (
	maxOutputs      = 500 // files listed
	maxFileName     = 1024
	defaultReadSize = 64 << 10
	maxReadSize     = 256 << 10
	maxImageSize    = 4 << 20
	maxReadOffset   = 1 << 40
)

// OutputFile is one file a task made.
type OutputFile struct {
	Name     string `json:"name" jsonschema:"its name (a path under the task's outbox/), for read_task_output"`
	Size     int64  `json:"size" jsonschema:"its size in bytes"`
	MimeType string `json:"mimeType,omitempty" jsonschema:"its type, by its name"`
	// SavedTo is where the helper copied it on this computer.
	SavedTo string `json:"savedTo,omitempty" jsonschema:"where it was copied on the computer Hivecrew runs on"`
	// Download is the REST API's path of the file (HTTP callers).
	Download string `json:"download,omitempty" jsonschema:"the REST API's path that downloads it (with the same API key)"`
}

// Outputs is get_task_outputs' answer.
type Outputs struct {
	TaskID string       `json:"taskId"`
	Files  []OutputFile `json:"files"`
	// More counts the files left out past the first maxOutputs.
	More int `json:"more,omitempty" jsonschema:"how many more files the task made than are listed"`
}

// OutputRead is what read_task_output read of a file.
type OutputRead struct {
	Name string `json:"name"`
	Size int64  `json:"size"`
	// Kind is text (Text holds the part read) or image (the image is the
	// answer's content).
	Kind   string `json:"kind" jsonschema:"text or image"`
	Offset int64  `json:"offset,omitempty" jsonschema:"the byte of the file the text starts at"`
	Text   string `json:"text,omitempty" jsonschema:"the part read (control characters shown as escapes)"`
	// NextOffset, when set, is where the next part starts.
	NextOffset int64 `json:"nextOffset,omitempty" jsonschema:"there is more: read again from this offset"`
}

type readInput struct {
	TaskID   string `json:"taskId" jsonschema:"the task's id"`
	Name     string `json:"name" jsonschema:"the file's name, as get_task_outputs lists it"`
	Offset   int64  `json:"offset,omitempty" jsonschema:"the byte to start at (nextOffset of the last read)"`
	MaxBytes int    `json:"maxBytes,omitempty" jsonschema:"read at most this many bytes"`
}

func (s *server) addOutputTools(srv *mcp.Server) {
	no := false
	mcp.AddTool(srv, &mcp.Tool{
		Name:        "get_task_outputs",
		Description: "The files a task made (what its agent left in outbox/): name, size, type and where they were saved on this computer. read_task_output reads one.",
		InputSchema: schema[taskRef](taskID("taskId")),
		Annotations: &mcp.ToolAnnotations{Title: "List a task's outputs", ReadOnlyHint: true},
	}, s.outputs)
	mcp.AddTool(srv, &mcp.Tool{
		Name:        "read_task_output",
		Description: "Read one of a task's output files: a text file a part at a time (control characters shown as escapes), an image (PNG, JPEG, GIF, WebP up to 4 MB) as an image. Other files are not sent: get_task_outputs says where they were saved.",
		InputSchema: schema[readInput](taskID("taskId"), str("name", 1, maxFileName),
			integer("offset", 0, maxReadOffset, 0), integer("maxBytes", 1, maxReadSize, defaultReadSize)),
		Annotations: &mcp.ToolAnnotations{Title: "Read a task's output", ReadOnlyHint: true, OpenWorldHint: &no},
	}, s.readOutput)
}

func (s *server) outputs(ctx context.Context, req *mcp.CallToolRequest, in taskRef) (*mcp.CallToolResult, Outputs, error) {
	h, err := s.helper(req.Extra)
	if err != nil {
		return nil, Outputs{}, err
	}
	fs, err := h.TaskFiles(ctx, in.TaskID)
	if err != nil {
		return nil, Outputs{}, callerError(err)
	}
	out := Outputs{TaskID: in.TaskID, Files: []OutputFile{}}
	for i, f := range fs.OutputFiles {
		if i == maxOutputs {
			out.More = len(fs.OutputFiles) - i
			break
		}
		out.Files = append(out.Files, s.outputFile(in.TaskID, f))
	}
	return nil, out, nil
}

// outputFile is f as the tools show it; names are the guest's, so they
// are shown printable (read_task_output takes them as listed).
func (s *server) outputFile(taskID string, f wire.File) OutputFile {
	o := OutputFile{Name: files.Printable(f.Name), Size: f.Size, MimeType: line(f.MimeType, maxName), SavedTo: files.Printable(f.SavedTo)}
	if s.cfg.DownloadURL != nil {
		o.Download = s.cfg.DownloadURL(taskID, f.Name)
	}
	return o
}

func (s *server) readOutput(ctx context.Context, req *mcp.CallToolRequest, in readInput) (*mcp.CallToolResult, OutputRead, error) {
	h, err := s.helper(req.Extra)
	if err != nil {
		return nil, OutputRead{}, err
	}
	fs, err := h.TaskFiles(ctx, in.TaskID)
	if err != nil {
		return nil, OutputRead{}, callerError(err)
	}
	var f *wire.File
	for i := range fs.OutputFiles {
		// A name is given as listed: printable, so a name with control
		// characters is found by its escaped form.
		if files.Printable(fs.OutputFiles[i].Name) == in.Name {
			f = &fs.OutputFiles[i]
			break
		}
	}
	if f == nil {
		return nil, OutputRead{}, callerError(fmt.Errorf("task %s has no output file %q (get_task_outputs lists them)", in.TaskID, in.Name))
	}
	if in.Offset > f.Size {
		return nil, OutputRead{}, callerError(fmt.Errorf("offset %d is past the end of %s (%d bytes)", in.Offset, in.Name, f.Size))
	}
	if in.Offset == 0 && f.Size <= maxImageSize {
		head, err := readPart(ctx, h, in.TaskID, f.Name, 0, 512)
		if err != nil {
			return nil, OutputRead{}, callerError(err)
		}
		if mime := imageType(head); mime != "" {
			return s.readImage(ctx, h, in.TaskID, f, mime)
		}
	}
	size := in.MaxBytes
	if size <= 0 {
		size = defaultReadSize
	}
	// Read a few bytes more: a character cut at the end is left for the
	// next part, and one cut at the start (an offset not given by
	// nextOffset) is skipped.
	part, err := readPart(ctx, h, in.TaskID, f.Name, in.Offset, size+utf8.UTFMax)
	if err != nil {
		return nil, OutputRead{}, callerError(err)
	}
	start := 0
	for in.Offset > 0 && start < len(part) && start < utf8.UTFMax-1 && !utf8.RuneStart(part[start]) {
		start++
	}
	end := min(start+size, len(part))
	for end < len(part) && end > start && !utf8.RuneStart(part[end]) {
		end--
	}
	body := part[start:end]
	if bytes.IndexByte(body, 0) >= 0 || !utf8.Valid(body) {
		where := "it was not saved on this computer"
		if f.SavedTo != "" {
			where = "it was saved at " + files.Printable(f.SavedTo)
		}
		return nil, OutputRead{}, callerError(fmt.Errorf("%s is not text (%s, %d bytes) and is not sent here: %s", in.Name, or(f.MimeType, "unknown type"), f.Size, where))
	}
	out := OutputRead{Name: in.Name, Size: f.Size, Kind: "text", Offset: in.Offset + int64(start), Text: files.PrintableText(string(body))}
	if next := in.Offset + int64(end); next < f.Size {
		out.NextOffset = next
	}
	return nil, out, nil
}

// readImage answers with a whole image file as an image.
func (s *server) readImage(ctx context.Context, h Helper, id string, f *wire.File, mime string) (*mcp.CallToolResult, OutputRead, error) {
	data, err := readPart(ctx, h, id, f.Name, 0, maxImageSize)
	if err != nil {
		return nil, OutputRead{}, callerError(err)
	}
	if imageType(data) != mime {
		return nil, OutputRead{}, callerError(fmt.Errorf("%s changed while it was read", files.Printable(f.Name)))
	}
	name := files.Printable(f.Name)
	res := &mcp.CallToolResult{Content: []mcp.Content{
		&mcp.TextContent{Text: fmt.Sprintf("%s (%s, %d bytes)", name, mime, len(data))},
		&mcp.ImageContent{Data: data, MIMEType: mime},
	}}
	return res, OutputRead{Name: name, Size: int64(len(data)), Kind: "image"}, nil
}

// imageType is the type of an image a client shows (by its bytes, not
// its name), or "".
func imageType(head []byte) string {
	switch mime := http.DetectContentType(head); mime {
	case "image/png", "image/jpeg", "image/gif", "image/webp":
		return mime
	}
	return ""
}

// readPart reads at most n bytes of a task's output from offset: the
// download stops there.
func readPart(ctx context.Context, h Helper, id, name string, offset int64, n int) ([]byte, error) {
	w := &partWriter{skip: offset, room: n}
	if err := h.Download(ctx, id, name, "output", w); err != nil && !errors.Is(err, errPartFull) {
		return nil, fmt.Errorf("read %s: %w", files.Printable(name), err)
	}
	return w.buf.Bytes(), nil
}

// errPartFull stops a download once the part is read.
var errPartFull = errors.New("part read")

// partWriter keeps room bytes after skipping skip, then refuses more.
type partWriter struct {
	skip int64
	room int
	buf  bytes.Buffer
}

func (w *partWriter) Write(p []byte) (int, error) {
	n := len(p)
	if w.skip > 0 {
		k := min(w.skip, int64(len(p)))
		w.skip -= k
		p = p[k:]
	}
	take := min(len(p), w.room-w.buf.Len())
	w.buf.Write(p[:take])
	if w.buf.Len() >= w.room {
		return n, errPartFull
	}
	return n, nil
}
