package api

import (
	"bytes"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"strings"
	"unicode/utf8"

	udiff "github.com/aymanbagabas/go-udiff"

	"github.com/hivecrew/hivecrew/core/errdefs"
	"github.com/hivecrew/hivecrew/core/files"
	"github.com/hivecrew/hivecrew/core/store"
	"github.com/hivecrew/hivecrew/core/wire"
)

// The review of a task's changes to its host folders (issue 20): GET
// /tasks/:id/writeback in Swift's shape, with extensions, and the file
// versions for a preview. Approving and discarding are task actions.

// Bounds of the previews: a text file larger than maxDiffInput is not
// diffed; a diff or a preview is cut at maxPreview.
const (
	maxDiffInput = 256 << 10
	maxPreview   = 64 << 10
)

// writeback answers GET /tasks/:id/writeback: 204 unless the task's
// changes wait for review. Each pending change is checked against the host
// folder as it is now (a conflict says how the host file changed).
func (a *API) writeback(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	t, err := a.st.GetTask(r.Context(), id)
	if err != nil {
		return err
	}
	if t.Status != store.StatusWritebackReview {
		w.WriteHeader(http.StatusNoContent)
		return nil
	}
	items, err := a.wb.Items(r.Context(), id)
	if err != nil {
		return err
	}
	out := wire.WritebackReview{TaskID: id, Items: make([]wire.WritebackItem, len(items))}
	for i, it := range items {
		out.Items[i] = a.writebackItem(it)
		out.HasConflicts = out.HasConflicts || out.Items[i].HasConflict
	}
	return writeJSON(w, http.StatusOK, out)
}

func (a *API) writebackItem(it store.WritebackItem) wire.WritebackItem {
	dest := filepath.Join(it.HostRoot, filepath.FromSlash(it.Path))
	out := wire.WritebackItem{ID: it.ID, Operation: map[string]string{"added": "copy", "modified": "replace_file", "deleted": "delete"}[it.Op],
		SourceFileName: path.Base(it.Path), DestinationPath: dest, DestinationExists: it.Op != "added",
		Folder: it.Folder, Path: it.Path, Op: it.Op, State: it.State, Refused: it.Refused,
		SizeBefore: it.BeforeSize, SizeAfter: it.AfterSize, Kind: "binary"}
	if strings.HasPrefix(files.MimeType(it.Path), "image/") {
		out.Kind = "image"
	}
	conflict := a.wb.Check(it)
	if conflict != "" {
		out.HasConflict, out.ConflictReason = true, &conflict
	}
	var before, after []byte
	var ok bool
	if it.Op != "deleted" {
		if after, ok = a.smallText(filepath.Join(a.cfg.Paths.Home, filepath.FromSlash(it.StagedPath))); !ok {
			return out
		}
		preview := clipText(string(after))
		out.StagedPreview = &preview
	}
	if it.Op != "added" && conflict == "" {
		if before, ok = a.smallText(dest); !ok {
			return out
		}
	}
	if out.Kind == "binary" {
		out.Kind = "text"
	}
	if conflict == "" || it.Op == "added" {
		d := clipText(udiff.Unified("a/"+it.Path, "b/"+it.Path, string(before), string(after)))
		out.DiffPreview = &d
	}
	return out
}

// smallText reads a file that is text (UTF-8, no NUL) and small enough to
// diff.
func (a *API) smallText(p string) ([]byte, bool) {
	fi, err := os.Lstat(p)
	if err != nil || !fi.Mode().IsRegular() || fi.Size() > maxDiffInput {
		return nil, false
	}
	b, err := os.ReadFile(p)
	if err != nil || !utf8.Valid(b) || bytes.IndexByte(b, 0) >= 0 {
		return nil, false
	}
	return b, true
}

func clipText(s string) string {
	if len(s) <= maxPreview {
		return s
	}
	cut := maxPreview
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "\n… [cut]"
}

// writebackFile answers GET /tasks/:id/writeback/:item/file?side=before|after:
// the host file as the task found it (if it is still so) or the agent's
// version, for a preview (an image's before and after).
func (a *API) writebackFile(w http.ResponseWriter, r *http.Request) error {
	id, itemID := r.PathValue("id"), r.PathValue("item")
	items, err := a.wb.Items(r.Context(), id)
	if err != nil {
		return err
	}
	for _, it := range items {
		if it.ID != itemID {
			continue
		}
		var base, rel string
		switch r.URL.Query().Get("side") {
		case "after":
			if it.StagedPath == "" {
				return errdefs.NotFoundf("the change %s has no new version", itemID)
			}
			base, rel = a.cfg.Paths.Home, filepath.FromSlash(it.StagedPath)
		case "before", "":
			if it.Op == "added" || a.wb.Check(it) != "" {
				return errdefs.NotFoundf("the host file of %s is not as the task found it", it.Path)
			}
			base, rel = it.HostRoot, filepath.FromSlash(it.Path)
		default:
			return errdefs.Invalidf("side: want before or after")
		}
		// Raster images are shown inline (an SVG could carry script);
		// anything else is a download.
		switch mt := files.MimeType(it.Path); mt {
		case "image/png", "image/jpeg", "image/gif", "image/webp":
			return serveFrom(w, r, base, rel, mt, "")
		default:
			return serveFrom(w, r, base, rel, "application/octet-stream", path.Base(it.Path))
		}
	}
	return errdefs.NotFoundf("task %s has no change %q", id, itemID)
}
