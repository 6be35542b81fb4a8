package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/hivecrew/hivecrew/core/errdefs"
)

// templatesExport: hivecrew templates export NAME FILE [--force]. The
// archive is written beside FILE and renamed into place once the helper
// sent all of it.
func templatesExport(e *env, args []string) error {
	flags := e.flags()
	force := flags.Bool("force", false, "replace FILE if it exists")
	c, pos, err := e.connect(flags, args, 2)
	if err != nil {
		return err
	}
	id, err := e.templateID(c, pos[0])
	if err != nil {
		return err
	}
	dst, err := filepath.Abs(pos[1])
	if err != nil {
		return err
	}
	if _, err := os.Lstat(dst); err == nil && !*force {
		return errdefs.Conflictf("%s exists (--force replaces it)", dst)
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(dst), "."+filepath.Base(dst)+".partial-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name()) // gone once renamed
	if err := c.ExportTemplate(e.ctx, id, f); err != nil {
		f.Close()
		return fmt.Errorf("export template %s: %w", id, err)
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(f.Name(), dst); err != nil {
		return err
	}
	fi, err := os.Stat(dst)
	if err != nil {
		return err
	}
	if e.json {
		return e.printJSON(map[string]any{"template": id, "file": dst, "bytes": fi.Size()})
	}
	e.out("Exported template %s to %s (%s).", id, dst, size(fi.Size()))
	return nil
}

// templatesImport: hivecrew templates import FILE [--name N].
func templatesImport(e *env, args []string) error {
	flags := e.flags()
	name := flags.String("name", "", "import under this `NAME` (default: the archive's)")
	c, pos, err := e.connect(flags, args, 1)
	if err != nil {
		return err
	}
	f, err := os.Open(pos[0])
	if err != nil {
		return err
	}
	defer f.Close()
	t, err := c.ImportTemplate(e.ctx, f, *name)
	if err != nil {
		return fmt.Errorf("import %s: %w", pos[0], err)
	}
	if e.json {
		return e.printJSON(t)
	}
	e.out("Imported template %s (%s), guest agent %s.", t.ID, t.Name, agentCell(t.AgentVersion, t.AgentOutdated))
	if t.AgentOutdated {
		e.out("Its guest agent is older than the helper's: hivecrew templates update-agent %s", t.ID)
	}
	return nil
}

// templatesUpdateAgent: hivecrew templates update-agent NAME.
func templatesUpdateAgent(e *env, args []string) error {
	c, id, err := e.connectTemplate(args)
	if err != nil {
		return err
	}
	t, err := c.UpdateTemplateAgent(e.ctx, id)
	if err != nil {
		return err
	}
	if e.json {
		return e.printJSON(t)
	}
	if t.Status == "setup" {
		e.out("Template %s is running with the current guest agent kit: %s", t.ID, t.StatusReason)
		e.out("In its window run install/install-agent.sh (see templates/macos-15-base/README.md), then: hivecrew templates setup %s --finish", t.ID)
		return nil
	}
	e.out("Template %s now has guest agent %s; new VMs get it.", t.ID, t.AgentVersion)
	return nil
}
