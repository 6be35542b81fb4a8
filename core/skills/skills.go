// Package skills is the skill library (issue 19.4). A skill is a folder
// with a SKILL.md: YAML front matter with its name and description, then
// its instructions in Markdown, the shape of Anthropic's Agent Skills and
// of the Swift app's. Other files of the folder (scripts, templates) go
// with it.
//
// The library is the data folder's Skills/, a folder per skill named as
// the skill. Skills come in from a folder or a git repository (a shallow
// clone by the git program, then every SKILL.md in it). A task's agent is
// told each enabled skill's name and description only; the instructions
// of the skills the user mentioned go into its first message, and it reads
// any other with use_skill when one fits. So an unused skill costs its one
// line, not its instructions.
package skills

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"gopkg.in/yaml.v3"

	"github.com/hivecrew/hivecrew/core/errdefs"
)

// Bounds of a skill.
const (
	MaxSkillMD     = 256 << 10 // SKILL.md
	MaxFiles       = 200
	MaxBytes       = 20 << 20 // the folder
	MaxDescription = 1024
	cloneTimeout   = 2 * time.Minute
	disabledMarker = ".hivecrew-disabled"
)

// namePattern is Agent Skills' rule for names.
var namePattern = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,62}[a-z0-9])?$`)

// Skill is one skill of the library.
type Skill struct {
	Name         string
	Description  string
	Instructions string
	Dir          string
	Enabled      bool
}

// Parse reads a SKILL.md.
func Parse(data []byte) (Skill, error) {
	if len(data) > MaxSkillMD {
		return Skill{}, fmt.Errorf("SKILL.md is %d bytes, over the %d allowed", len(data), MaxSkillMD)
	}
	if !utf8.Valid(data) {
		return Skill{}, errors.New("SKILL.md is not UTF-8 text")
	}
	text := strings.ReplaceAll(string(data), "\r\n", "\n")
	rest, ok := strings.CutPrefix(text, "---\n")
	if !ok {
		return Skill{}, errors.New("SKILL.md must begin with front matter: a line ---, name: and description:, and a line ---")
	}
	front, body, ok := strings.Cut(rest, "\n---")
	if !ok {
		return Skill{}, errors.New("SKILL.md's front matter has no closing --- line")
	}
	var meta struct {
		Name        string `yaml:"name"`
		Description string `yaml:"description"`
	}
	if err := yaml.Unmarshal([]byte(front), &meta); err != nil {
		return Skill{}, fmt.Errorf("SKILL.md's front matter is not YAML: %v", err)
	}
	s := Skill{Name: strings.TrimSpace(meta.Name), Description: strings.TrimSpace(meta.Description)}
	_, body, _ = strings.Cut(body, "\n") // the rest of the --- line
	s.Instructions = strings.TrimSpace(body)
	return s, s.check()
}

func (s Skill) check() error {
	switch {
	case !namePattern.MatchString(s.Name):
		return fmt.Errorf("skill name %q: want 1 to 64 lower-case letters, digits and hyphens, not beginning or ending with a hyphen", s.Name)
	case s.Description == "":
		return fmt.Errorf("skill %s: the description is empty (it is how the agent knows when to use it)", s.Name)
	case len(s.Description) > MaxDescription:
		return fmt.Errorf("skill %s: the description is %d bytes, over %d", s.Name, len(s.Description), MaxDescription)
	case s.Instructions == "":
		return fmt.Errorf("skill %s: no instructions after the front matter", s.Name)
	}
	return nil
}

// Markdown is s as a SKILL.md.
func (s Skill) Markdown() []byte {
	front, _ := yaml.Marshal(map[string]string{"name": s.Name, "description": s.Description})
	return []byte("---\n" + string(front) + "---\n\n" + strings.TrimSpace(s.Instructions) + "\n")
}

// Library is the skill folder.
type Library struct{ Dir string }

// List returns the library's skills by name, and the folders in it that are
// not skills, as errors.
func (l Library) List() ([]Skill, []error) {
	entries, err := os.ReadDir(l.Dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, []error{err}
	}
	var out []Skill
	var problems []error
	for _, e := range entries {
		if !e.IsDir() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		s, err := l.load(e.Name())
		if err != nil {
			problems = append(problems, fmt.Errorf("%s: %w", e.Name(), err))
			continue
		}
		out = append(out, s)
	}
	return out, problems
}

// Get returns a skill by name.
func (l Library) Get(name string) (Skill, error) {
	if !namePattern.MatchString(name) {
		return Skill{}, errdefs.NotFoundf("no skill %q", name)
	}
	s, err := l.load(name)
	if errors.Is(err, fs.ErrNotExist) {
		return Skill{}, errdefs.NotFoundf("no skill %q", name)
	}
	return s, err
}

func (l Library) load(name string) (Skill, error) {
	dir := filepath.Join(l.Dir, name)
	data, err := readSmall(filepath.Join(dir, "SKILL.md"), MaxSkillMD)
	if err != nil {
		return Skill{}, err
	}
	s, err := Parse(data)
	if err != nil {
		return Skill{}, err
	}
	if s.Name != name {
		return Skill{}, fmt.Errorf("SKILL.md names it %q, but its folder is %q", s.Name, name)
	}
	s.Dir = dir
	_, err = os.Lstat(filepath.Join(dir, disabledMarker))
	s.Enabled = errors.Is(err, fs.ErrNotExist)
	return s, nil
}

// readSmall reads a regular file of at most max bytes.
func readSmall(path string, max int64) ([]byte, error) {
	f, err := os.OpenInRoot(filepath.Dir(path), filepath.Base(path))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", filepath.Base(path))
	}
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > max {
		return nil, fmt.Errorf("%s is over %d bytes", filepath.Base(path), max)
	}
	return data, nil
}

// Save writes a skill's SKILL.md, making its folder if it is new.
func (l Library) Save(s Skill) (Skill, error) {
	s.Name, s.Description, s.Instructions = strings.TrimSpace(s.Name), strings.TrimSpace(s.Description), strings.TrimSpace(s.Instructions)
	if err := s.check(); err != nil {
		return Skill{}, errdefs.Invalidf("%v", err)
	}
	dir := filepath.Join(l.Dir, s.Name)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return Skill{}, err
	}
	if err := writeAtomic(filepath.Join(dir, "SKILL.md"), s.Markdown()); err != nil {
		return Skill{}, err
	}
	return l.load(s.Name)
}

// SetEnabled turns a skill on or off for new tasks.
func (l Library) SetEnabled(name string, on bool) (Skill, error) {
	s, err := l.Get(name)
	if err != nil {
		return s, err
	}
	marker := filepath.Join(s.Dir, disabledMarker)
	if on {
		err = os.Remove(marker)
		if errors.Is(err, fs.ErrNotExist) {
			err = nil
		}
	} else {
		err = os.WriteFile(marker, nil, 0o600)
	}
	if err != nil {
		return s, err
	}
	return l.load(name)
}

// Delete removes a skill and its files.
func (l Library) Delete(name string) error {
	s, err := l.Get(name)
	if err != nil {
		return err
	}
	return os.RemoveAll(s.Dir)
}

// ImportDir copies the skill in dir (a folder with SKILL.md) into the
// library: regular files and folders only, bounded. A skill of the same
// name is replaced only when replace is set.
func (l Library) ImportDir(dir string, replace bool) (Skill, error) {
	data, err := readSmall(filepath.Join(dir, "SKILL.md"), MaxSkillMD)
	if err != nil {
		return Skill{}, errdefs.Invalidf("%s has no readable SKILL.md: %v", dir, err)
	}
	s, err := Parse(data)
	if err != nil {
		return Skill{}, errdefs.Invalidf("%s: %v", dir, err)
	}
	dest := filepath.Join(l.Dir, s.Name)
	if _, err := os.Lstat(dest); err == nil && !replace {
		return Skill{}, errdefs.Conflictf("a skill named %s exists already (replace it to import again)", s.Name)
	}
	if err := os.MkdirAll(l.Dir, 0o700); err != nil {
		return Skill{}, err
	}
	tmp, err := os.MkdirTemp(l.Dir, ".import-")
	if err != nil {
		return Skill{}, err
	}
	defer os.RemoveAll(tmp)
	if err := copyTree(dir, tmp); err != nil {
		return Skill{}, errdefs.Invalidf("%s: %v", dir, err)
	}
	if err := os.RemoveAll(dest); err != nil {
		return Skill{}, err
	}
	if err := os.Rename(tmp, dest); err != nil {
		return Skill{}, err
	}
	return l.load(s.Name)
}

// copyTree copies src's regular files and folders into dst (which exists),
// refusing links and special files, and more than MaxFiles or MaxBytes.
func copyTree(src, dst string) error {
	root, err := os.OpenRoot(src)
	if err != nil {
		return err
	}
	defer root.Close()
	files, total := 0, int64(0)
	return fs.WalkDir(root.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == "." {
			return nil
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == disabledMarker) {
			return fs.SkipDir
		}
		target := filepath.Join(dst, filepath.FromSlash(p))
		switch {
		case d.IsDir():
			return os.Mkdir(target, 0o700)
		case !d.Type().IsRegular():
			return fmt.Errorf("%s is a link or a special file; a skill holds only files and folders", p)
		}
		files++
		info, err := d.Info()
		if err != nil {
			return err
		}
		total += info.Size()
		if files > MaxFiles || total > MaxBytes {
			return fmt.Errorf("a skill may hold at most %d files and %d MB", MaxFiles, MaxBytes>>20)
		}
		in, err := root.Open(p)
		if err != nil {
			return err
		}
		defer in.Close()
		out, err := os.OpenFile(target, os.O_CREATE|os.O_EXCL|os.O_WRONLY, info.Mode().Perm()&0o700|0o600)
		if err != nil {
			return err
		}
		_, err = io.Copy(out, io.LimitReader(in, MaxBytes))
		return errors.Join(err, out.Close())
	})
}

// ImportGit clones a repository (shallow, by the git program) and imports
// every skill in it: each folder up to three levels down with a SKILL.md.
func (l Library) ImportGit(ctx context.Context, url string, replace bool) ([]Skill, error) {
	if !strings.HasPrefix(url, "https://") && !strings.HasPrefix(url, "http://") && !strings.HasPrefix(url, "file://") && !strings.HasPrefix(url, "git@") {
		return nil, errdefs.Invalidf("%q is not a git URL (https://, git@ or file://)", url)
	}
	if _, err := exec.LookPath("git"); err != nil {
		return nil, errdefs.Unavailablef("importing from git needs the git program: %v", err)
	}
	tmp, err := os.MkdirTemp("", "hivecrew-skill-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	ctx, cancel := context.WithTimeout(ctx, cloneTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "git", "-c", "protocol.ext.allow=never", "-c", "core.symlinks=false",
		"clone", "--depth", "1", "--no-tags", "--quiet", "--", url, filepath.Join(tmp, "repo"))
	cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0", "GIT_ASKPASS=/bin/false")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return nil, errdefs.Unavailablef("git clone %s took over %s", url, cloneTimeout)
		}
		return nil, errdefs.Invalidf("git clone %s failed: %s", url, strings.TrimSpace(lastLine(stderr.String())))
	}
	var dirs []string
	repo := filepath.Join(tmp, "repo")
	filepath.WalkDir(repo, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return nil
		}
		if d.Name() == ".git" || strings.Count(strings.TrimPrefix(p, repo), string(filepath.Separator)) > 3 {
			return fs.SkipDir
		}
		if st, err := os.Lstat(filepath.Join(p, "SKILL.md")); err == nil && st.Mode().IsRegular() {
			dirs = append(dirs, p)
		}
		return nil
	})
	if len(dirs) == 0 {
		return nil, errdefs.Invalidf("%s has no SKILL.md (in its top folder or three levels down)", url)
	}
	var out []Skill
	var errs []error
	for _, d := range dirs {
		s, err := l.ImportDir(d, replace)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, s)
	}
	if len(out) == 0 {
		return nil, errors.Join(errs...)
	}
	return out, nil
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// Mentioned returns the names of skills a description mentions as @name,
// among those known.
func Mentioned(description string, known []Skill) []string {
	var out []string
	for _, m := range mention.FindAllStringSubmatch(description, -1) {
		name := m[1]
		if slices.ContainsFunc(known, func(s Skill) bool { return s.Name == name }) && !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	return out
}

var mention = regexp.MustCompile(`(?:^|[\s(])@([a-z0-9][a-z0-9-]{0,63})\b`)

func writeAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".skill-")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// readDirNames lists a folder's entries but the disabled marker.
func readDirNames(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	var out []string
	for _, e := range entries {
		if e.Name() != disabledMarker {
			out = append(out, e.Name())
		}
	}
	return out, err
}
