package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/hivecrew/hivecrew/core/client"
	"github.com/hivecrew/hivecrew/core/files"
)

// cmdFiles: hivecrew files ID [--get NAME]... [--all] [-o DIR]
//
// Lists a task's input and output files, and where each output was saved;
// --get and --all download outputs (kept with the task's session even when
// they could not be copied to its output folder) into DIR, never
// overwriting a file there.
func cmdFiles(e *env, args []string) error {
	flags := e.flags()
	var get listFlag
	flags.Var(&get, "get", "download the output file `NAME` (repeatable)")
	all := flags.Bool("all", false, "download every output file")
	dir := flags.String("o", ".", "download into `DIR`")
	c, id, err := e.oneTask(args, flags)
	if err != nil {
		return err
	}
	list, err := c.TaskFiles(e.ctx, id)
	if err != nil {
		return err
	}
	if len(get) == 0 && !*all {
		if e.json {
			return e.printJSON(list)
		}
		if len(list.InputFiles)+len(list.OutputFiles) == 0 {
			e.out("Task %s has no files.", shortID(id))
			return nil
		}
		tw := table(e.stdout, "KIND", "NAME", "SIZE", "SAVED TO")
		for _, f := range list.InputFiles {
			row(tw, "input", files.Printable(f.Name), size(f.Size), "")
		}
		for _, f := range list.OutputFiles {
			row(tw, "output", files.Printable(f.Name), size(f.Size), or(f.SavedTo, "not saved: `hivecrew files "+shortID(id)+" --get NAME` downloads it"))
		}
		return tw.Flush()
	}
	want := get
	if *all {
		want = nil
		for _, f := range list.OutputFiles {
			want = append(want, f.Name)
		}
	}
	known := map[string]bool{}
	for _, f := range list.OutputFiles {
		known[f.Name] = true
	}
	var names []string
	for _, f := range list.OutputFiles {
		names = append(names, f.Name)
	}
	for _, name := range want {
		if !known[name] {
			return fmt.Errorf("task %s has no output file %q (it has: %s)", shortID(id), name, or(strings.Join(names, ", "), "none"))
		}
	}
	if err := os.MkdirAll(*dir, 0o755); err != nil {
		return err
	}
	for _, name := range want {
		path, err := download(e, c, id, name, *dir)
		if err != nil {
			return fmt.Errorf("download %s: %w", name, err)
		}
		e.out("%s", path)
	}
	return nil
}

// download saves output file name (a slash path inside the outbox) under
// dir, as name, or "name (1)"… when that is taken, and returns the path.
// A partial download is removed.
func download(e *env, c *client.Client, id, name, dir string) (string, error) {
	want := filepath.Join(dir, filepath.FromSlash(name))
	if rel, err := filepath.Rel(dir, want); err != nil || rel == "." || strings.HasPrefix(rel, "..") || filepath.IsAbs(name) {
		return "", fmt.Errorf("the name %q does not stay inside %s", name, dir) // collection never makes one; refused all the same
	}
	if err := os.MkdirAll(filepath.Dir(want), 0o755); err != nil {
		return "", err
	}
	path, f, err := files.CreateUnique(want)
	if err != nil {
		return "", err
	}
	err = c.Download(e.ctx, id, name, "output", f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
		return "", err
	}
	return path, nil
}
