package main

import (
	"errors"
	"flag"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/hivecrew/hivecrew/core/client"
	"github.com/hivecrew/hivecrew/core/errdefs"
	"github.com/hivecrew/hivecrew/core/wire"
)

// cmdTemplates: hivecrew templates ls|manifests|create|seal|edit|default|rm|log|setup|export|import|update-agent
func cmdTemplates(e *env, args []string) error {
	return runTable(e, "templates", []command{
		{"ls", "", "list VM templates", templatesLs},
		{"manifests", "", "list the template manifests this helper can build", templatesManifests},
		{"create", "MANIFEST|FOLDER [--full] [--with SET]... [--unattended] [--name N] [--no-wait]", "build a template (progress bar)", templatesCreate},
		{"seal", "VM [--name N] [--no-wait]", "make a template of a VM's disk (the VM stops)", templatesSeal},
		{"edit", "ID [--cpus N] [--memory MB] [--disk GB] [--name N] [--description D]", "change a template's resources for new VMs", templatesEdit},
		{"default", "ID", "make a template the default", templatesDefault},
		{"rm", "ID", "delete a template (refused while a VM uses it)", templatesRm},
		{"log", "ID", "print a template's build log", templatesLog},
		{"setup", "ID [--finish [--force]]", "macOS: boot a template for its guided setup, or finish it", templatesSetup},
		{"export", "ID FILE [--force]", "write a template as one archive (manifest, disk, checksums)", templatesExport},
		{"import", "FILE [--name N]", "add a template from an archive (every entry checked first)", templatesImport},
		{"update-agent", "ID", "install the helper's guest agent into a template and reseal it", templatesUpdateAgent},
	}, args)
}

func templatesLs(e *env, args []string) error {
	return listing[wire.TemplateList, wire.Template]{
		get: (*client.Client).Templates,
		// A row says default for the template marked so and for the one
		// Settings names.
		items: func(l wire.TemplateList) []wire.Template {
			ts := slices.Clone(l.Templates)
			for i := range ts {
				ts[i].IsDefault = ts[i].IsDefault || ts[i].ID == l.DefaultTemplateID
			}
			return ts
		},
		none:   "No VM templates yet: hivecrew templates create linux-desktop",
		header: []string{"ID", "NAME", "OS", "KIND", "ISOLATION", "STATUS", "CPUS", "MEMORY", "DISK", "AGENT", "DEFAULT"},
		cells: func(t wire.Template) []string {
			def := ""
			if t.IsDefault {
				def = "yes"
			}
			return []string{t.ID, t.Name, t.OS, t.Kind, isolation(t.Kind), templateStatus(t), orDash(t.CPUCount, ""), orDash(t.MemoryMB, " MB"),
				orDash(t.DiskGB, " GB"), agentCell(t.AgentVersion, t.AgentOutdated), def}
		},
	}.run(e, args)
}

// isolation says what a template kind isolates: the host template runs the
// host's own programs (read-only), a built rootfs template has a root
// filesystem of its own, a macOS template is a full VM.
func isolation(kind string) string {
	switch kind {
	case "host":
		return "host programs, read-only (weaker)"
	case "rootfs":
		return "own root filesystem (stronger)"
	}
	return "full VM"
}

// templateStatus is a template's status with its progress or reason.
func templateStatus(t wire.Template) string {
	s := or(t.Status, "ready")
	switch {
	case t.Progress != nil:
		s += fmt.Sprintf(" %.0f%% %s", t.Progress.Percent, t.Progress.Phase)
	case t.StatusReason != "":
		s += " (" + clip(oneLine(t.StatusReason), 60) + ")"
	}
	return s
}

// agentCell is a guest agent version, flagged when older than the helper.
func agentCell(v string, outdated bool) string {
	if v == "" {
		return "-"
	}
	if outdated {
		return v + " (outdated)"
	}
	return v
}

func templatesManifests(e *env, args []string) error {
	return ask(e, e.flags(), args, 0, func(c *client.Client, _ []string) ([]wire.Manifest, error) {
		ms, err := c.TemplateManifests(e.ctx)
		return nonNil(ms), err
	}, func(ms []wire.Manifest) error {
		return printTable(e, ms, "No manifests.", []string{"NAME", "VERSION", "OS", "OPTIONS", "HERE", "DESCRIPTION"}, func(m wire.Manifest) []string {
			opts := "-"
			if m.Kind == "rootfs" {
				opts = strings.Join(append([]string{"--full"}, prefixed("--with ", m.Extras)...), " ")
			}
			here := "no"
			if m.Supported {
				here = "yes"
			}
			return []string{m.Name, fmt.Sprint(m.Version), m.OS, opts, here, clip(m.Description, 60)}
		})
	})
}

func prefixed(p string, items []string) []string {
	out := make([]string, len(items))
	for i, s := range items {
		out[i] = p + s
	}
	return out
}

// stringList is a flag that may repeat.
type stringList []string

func (l *stringList) String() string { return strings.Join(*l, ",") }
func (l *stringList) Set(v string) error {
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			*l = append(*l, s)
		}
	}
	return nil
}

func templatesCreate(e *env, args []string) error {
	fs := e.flags()
	full := fs.Bool("full", false, "add the manifest's full package set (desktop applications)")
	var with stringList
	fs.Var(&with, "with", "add an optional `SET` (repeatable), e.g. libreoffice")
	name := fs.String("name", "", "the template's `NAME` (default: the manifest's)")
	desc := fs.String("description", "", "a `DESCRIPTION`")
	mirror := fs.String("mirror", "", "Debian mirror `URL` (Linux templates)")
	image := fs.String("restore-image", "", "macOS restore image: latest, an https `URL` or an .ipsw path")
	unattended := fs.Bool("unattended", false, "macOS: drive Setup Assistant and install the guest agent through the VM's own screen and keyboard (the guided setup is the fallback)")
	noWait := fs.Bool("no-wait", false, "return once the build has started")
	c, pos, err := e.connect(fs, args, 1)
	if err != nil {
		return err
	}
	manifest := pos[0]
	if strings.ContainsRune(manifest, filepath.Separator) || manifest == "." {
		// A folder of the user's: the helper runs on this machine.
		if manifest, err = filepath.Abs(manifest); err != nil {
			return err
		}
	}
	in := wire.CreateTemplate{Manifest: manifest, Name: *name, Description: *desc, Full: *full, With: with, Mirror: *mirror, RestoreImage: *image, Unattended: *unattended}
	t, err := c.CreateTemplate(e.ctx, in)
	if err != nil {
		return err
	}
	if err := e.followTemplate(c, t, *noWait, "Building template %s (%s)"); err != nil || *noWait || !*unattended {
		return err
	}
	// The unattended setup that stopped leaves the template waiting for
	// its guided setup: say so as a failure, with the reason (the
	// screen's text and screenshot).
	if t, err = c.Template(e.ctx, t.ID); err == nil && t.Status == "setup" {
		return fmt.Errorf("the unattended setup of template %s did not finish; the guided setup is the fallback: %s", t.ID, t.StatusReason)
	}
	return err
}

func templatesSeal(e *env, args []string) error {
	fs := e.flags()
	name := fs.String("name", "", "the new template's `NAME`")
	desc := fs.String("description", "", "a `DESCRIPTION`")
	noWait := fs.Bool("no-wait", false, "return once sealing has started")
	c, pos, err := e.connect(fs, args, 1)
	if err != nil {
		return err
	}
	t, err := c.CreateTemplate(e.ctx, wire.CreateTemplate{FromVMID: pos[0], Name: *name, Description: *desc})
	if err != nil {
		return err
	}
	return e.followTemplate(c, t, *noWait, "Sealing into template %s (%s)")
}

// followTemplate waits for a template's build to end, showing its
// progress: a bar on a terminal, a line per phase otherwise.
func (e *env) followTemplate(c *client.Client, t wire.Template, noWait bool, started string) error {
	if noWait {
		if e.json {
			return e.printJSON(t)
		}
		e.out(started+"; follow it with: hivecrew templates ls", t.ID, t.Name)
		return nil
	}
	if !e.json {
		e.out(started+".", t.ID, t.Name)
	}
	width, tty := terminalWidth(e.stderr)
	lastPhase, lastTenth := "", -1
	drawn := false
	clear := func() {
		if drawn {
			fmt.Fprint(e.stderr, "\r\x1b[K")
			drawn = false
		}
	}
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for {
		if t.Status != "building" {
			clear()
			break
		}
		if p := t.Progress; p != nil {
			if tty {
				fmt.Fprintf(e.stderr, "\r%s\x1b[K", clip(progressBar(p, 24)+" "+oneLine(p.Message), width-1))
				drawn = true
			} else if tenth := int(p.Percent / 10); p.Phase != lastPhase || tenth != lastTenth {
				fmt.Fprintf(e.stderr, "%3.0f%% %s: %s\n", p.Percent, p.Phase, oneLine(p.Message))
				lastPhase, lastTenth = p.Phase, tenth
			}
		}
		select {
		case <-e.ctx.Done():
			clear()
			fmt.Fprintf(e.stderr, "Stopped watching; the build goes on in the helper (hivecrew templates ls).\n")
			return e.ctx.Err()
		case <-tick.C:
		}
		next, err := c.Template(e.ctx, t.ID)
		if err != nil {
			if errors.Is(err, errdefs.ErrNotFound) {
				clear()
				return fmt.Errorf("template %s was deleted while it was built", t.ID)
			}
			if e.ctx.Err() != nil {
				continue
			}
			return err
		}
		t = next
	}
	if e.json {
		if err := e.printJSON(t); err != nil {
			return err
		}
	}
	switch t.Status {
	case "failed":
		return fmt.Errorf("template %s failed: %s (full log: hivecrew templates log %s)", t.ID, t.StatusReason, t.ID)
	case "setup":
		if !e.json {
			e.out("Template %s is installed and waits for its guided setup: %s", t.ID, t.StatusReason)
		}
	default:
		if !e.json {
			e.out("Template %s (%s) is ready. Make it the default with: hivecrew templates default %s", t.ID, t.Name, t.ID)
		}
	}
	return nil
}

// progressBar draws [#####-----]  42% phase.
func progressBar(p *wire.TemplateProgress, width int) string {
	n := int(p.Percent / 100 * float64(width))
	n = min(max(n, 0), width)
	return fmt.Sprintf("[%s%s] %3.0f%% %s", strings.Repeat("#", n), strings.Repeat("-", width-n), p.Percent, p.Phase)
}

// connectTemplate connects for a command whose one argument is a
// template (id or name) and resolves it.
func (e *env) connectTemplate(args []string) (*client.Client, string, error) {
	c, pos, err := e.connect(e.flags(), args, 1)
	if err != nil {
		return nil, "", err
	}
	id, err := e.templateID(c, pos[0])
	return c, id, err
}

// templateID resolves a template by id or name.
func (e *env) templateID(c *client.Client, arg string) (string, error) {
	l, err := c.Templates(e.ctx)
	if err != nil {
		return "", err
	}
	for _, t := range l.Templates {
		if t.ID == arg {
			return t.ID, nil
		}
	}
	for _, t := range l.Templates {
		if strings.EqualFold(t.Name, arg) {
			return t.ID, nil
		}
	}
	return "", errdefs.NotFoundf("no template %q (see hivecrew templates ls)", arg)
}

func templatesEdit(e *env, args []string) error {
	fs := e.flags()
	cpus := fs.Int("cpus", -1, "vCPUs of new VMs (`N`, 0: the default from Settings)")
	memory := fs.Int("memory", -1, "memory of new VMs in `MB` (0: the default from Settings)")
	disk := fs.Int("disk", -1, "disk of new VMs in `GB` (0: the default)")
	name := fs.String("name", "", "a new `NAME`")
	desc := fs.String("description", "", "a new `DESCRIPTION`")
	c, pos, err := e.connect(fs, args, 1)
	if err != nil {
		return err
	}
	var in wire.TemplatePatch
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if set["cpus"] {
		in.CPUCount = cpus
	}
	if set["memory"] {
		in.MemoryMB = memory
	}
	if set["disk"] {
		in.DiskGB = disk
	}
	if set["name"] {
		in.Name = name
	}
	if set["description"] {
		in.Description = desc
	}
	if in == (wire.TemplatePatch{}) {
		return e.bad(fs, "templates edit needs at least one of --cpus, --memory, --disk, --name, --description")
	}
	id, err := e.templateID(c, pos[0])
	if err != nil {
		return err
	}
	t, err := c.UpdateTemplate(e.ctx, id, in)
	if err != nil {
		return err
	}
	if e.json {
		return e.printJSON(t)
	}
	e.out("Template %s: %s CPUs, %s, disk %s (for new VMs).", t.ID, orDash(t.CPUCount, ""), orDash(t.MemoryMB, " MB"), orDash(t.DiskGB, " GB"))
	return nil
}

func templatesDefault(e *env, args []string) error {
	c, id, err := e.connectTemplate(args)
	if err != nil {
		return err
	}
	t, err := c.SetDefaultTemplate(e.ctx, id)
	if err != nil {
		return err
	}
	if e.json {
		return e.printJSON(t)
	}
	e.out("New tasks use template %s (%s).", t.ID, t.Name)
	return nil
}

func templatesRm(e *env, args []string) error {
	c, id, err := e.connectTemplate(args)
	if err != nil {
		return err
	}
	if err := c.DeleteTemplate(e.ctx, id); err != nil {
		return err
	}
	e.out("Deleted template %s.", id)
	return nil
}

func templatesLog(e *env, args []string) error {
	c, id, err := e.connectTemplate(args)
	if err != nil {
		return err
	}
	return c.TemplateLog(e.ctx, id, e.stdout)
}

func templatesSetup(e *env, args []string) error {
	fs := e.flags()
	finish := fs.Bool("finish", false, "shut the template down and mark it ready (once its guest agent reports every grant)")
	force := fs.Bool("force", false, "with --finish: finish whatever the guest agent reports")
	c, pos, err := e.connect(fs, args, 1)
	if err != nil {
		return err
	}
	id, err := e.templateID(c, pos[0])
	if err != nil {
		return err
	}
	s, err := c.SetupTemplate(e.ctx, id, wire.TemplateSetupRequest{Finish: *finish, Force: *force})
	if err != nil {
		return err
	}
	if e.json {
		return e.printJSON(s)
	}
	if *finish {
		e.out("Template %s is ready (guest agent %s).", id, or(s.Template.AgentVersion, "unknown"))
		return nil
	}
	e.out("Template %s is running for its guided setup. In its window:", id)
	for i, st := range s.Steps {
		e.out("%d. %s: %s", i+1, st.Title, oneLine(st.Instructions))
	}
	e.out("Then: hivecrew templates setup %s --finish", id)
	return nil
}

// orDash formats n with a unit, or "-" for 0 (the default).
func orDash(n int, unit string) string {
	if n == 0 {
		return "-"
	}
	return fmt.Sprint(n) + unit
}
