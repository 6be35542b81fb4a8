package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// exportFormats maps the CLI's format names to the API's.
var exportFormats = map[string]string{"html": "html", "md": "markdown", "markdown": "markdown", "json": "json"}

// cmdExport: hivecrew export ID [--format html|md|json] [-o FILE]
func cmdExport(e *env, args []string) error {
	fs := e.flags()
	format := fs.String("format", "", "`FORMAT`: html, md or json (default: from -o's extension, else md; json with --json)")
	outPath := fs.String("o", "", "write to `FILE` instead of stdout")
	pos, err := e.parseN(fs, args, 1)
	if err != nil {
		return err
	}
	name := strings.ToLower(*format)
	if name == "" {
		switch strings.ToLower(filepath.Ext(*outPath)) {
		case ".html", ".htm":
			name = "html"
		case ".json":
			name = "json"
		default:
			name = "md"
			if e.json {
				name = "json"
			}
		}
	}
	apiFormat, ok := exportFormats[name]
	if !ok {
		return e.bad(fs, "--format %q: want html, md or json", *format)
	}
	c, id, err := e.connectTask(pos[0])
	if err != nil {
		return err
	}
	if *outPath == "" || *outPath == "-" {
		return c.Export(e.ctx, id, apiFormat, e.stdout)
	}
	// Into a temporary file next to the target, renamed once complete.
	dir := filepath.Dir(*outPath)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(*outPath)+".*")
	if err != nil {
		return fmt.Errorf("export: %w", err)
	}
	defer os.Remove(tmp.Name())
	if err := c.Export(e.ctx, id, apiFormat, tmp); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("export: %w", err)
	}
	if err := os.Rename(tmp.Name(), *outPath); err != nil {
		return fmt.Errorf("export: %w", err)
	}
	e.out("Exported task %s to %s.", shortID(id), *outPath)
	return nil
}
