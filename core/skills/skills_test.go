package skills

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

const tidesMD = "---\nname: tide-report\ndescription: Write a tide report from a harbour's tables.\n---\n\n# Tide report\n\nPut the highest spring tide first, in metres.\n"

func write(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// Malformed SKILL.md files get clear errors.
func TestParse(t *testing.T) {
	s, err := Parse([]byte(tidesMD))
	if err != nil || s.Name != "tide-report" || s.Description != "Write a tide report from a harbour's tables." || !strings.HasPrefix(s.Instructions, "# Tide report\n\nPut the highest") {
		t.Fatalf("%+v, %v", s, err)
	}
	for md, want := range map[string]string{
		"# no front matter":                                                    "must begin with front matter",
		"---\nname: a\ndescription: b\n":                                       "no closing ---",
		"---\nname: [a\n---\nx":                                                "not YAML",
		"---\nname: Tide Report\ndescription: b\n---\nx":                       "want 1 to 64 lower-case",
		"---\nname: a\n---\nx":                                                 "the description is empty",
		"---\nname: a\ndescription: b\n---\n":                                  "no instructions",
		"---\nname: a\ndescription: " + strings.Repeat("d", 1100) + "\n---\nx": "over 1024",
		"\xff\xfe": "not UTF-8",
	} {
		if _, err := Parse([]byte(md)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%.40q: %v, want %q", md, err, want)
		}
	}
	back, err := Parse(s.Markdown())
	if err != nil || back != s {
		t.Fatalf("round trip: %+v, %v", back, err)
	}
}

// A folder and a git repository import; links and duplicates are refused;
// a skill turns off and on, and goes.
func TestImport(t *testing.T) {
	lib := Library{Dir: filepath.Join(t.TempDir(), "Skills")}
	src := t.TempDir()
	write(t, filepath.Join(src, "SKILL.md"), tidesMD)
	write(t, filepath.Join(src, "scripts", "tides.py"), "print(5.6)\n")
	s, err := lib.ImportDir(src, false)
	if err != nil || s.Name != "tide-report" || !s.Enabled {
		t.Fatalf("%+v, %v", s, err)
	}
	if b, err := os.ReadFile(filepath.Join(lib.Dir, "tide-report", "scripts", "tides.py")); err != nil || string(b) != "print(5.6)\n" {
		t.Fatalf("its script: %q, %v", b, err)
	}
	if _, err := lib.ImportDir(src, false); err == nil || !strings.Contains(err.Error(), "exists already") {
		t.Fatalf("again: %v", err)
	}
	linked := t.TempDir()
	write(t, filepath.Join(linked, "SKILL.md"), strings.Replace(tidesMD, "tide-report", "linked", 1))
	os.Symlink("/etc/passwd", filepath.Join(linked, "passwd"))
	if _, err := lib.ImportDir(linked, false); err == nil || !strings.Contains(err.Error(), "link or a special file") {
		t.Fatalf("a link: %v", err)
	}
	if _, err := os.Stat(filepath.Join(lib.Dir, "linked")); !os.IsNotExist(err) {
		t.Fatalf("half an import left: %v", err)
	}
	if _, err := lib.SetEnabled("tide-report", false); err != nil {
		t.Fatal(err)
	}
	if all, problems := lib.List(); len(all) != 1 || all[0].Enabled || len(problems) != 0 {
		t.Fatalf("%+v %v", all, problems)
	}

	// A git repository with two skills, made by the test.
	repo := t.TempDir()
	write(t, filepath.Join(repo, "skills", "csv-tidy", "SKILL.md"), "---\nname: csv-tidy\ndescription: Tidy CSV files.\n---\nSort rows by the first column.\n")
	write(t, filepath.Join(repo, "skills", "pdf-notes", "SKILL.md"), "---\nname: pdf-notes\ndescription: Notes from PDFs.\n---\nQuote page numbers.\n")
	for _, args := range [][]string{{"init", "-q"}, {"add", "."}, {"-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "skills"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = repo
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	got, err := lib.ImportGit(context.Background(), "file://"+repo, false)
	if err != nil || len(got) != 2 {
		t.Fatalf("git: %+v, %v", got, err)
	}
	if _, err := lib.ImportGit(context.Background(), "file://"+filepath.Join(repo, "missing"), false); err == nil || !strings.Contains(err.Error(), "git clone") {
		t.Fatalf("a missing repository: %v", err)
	}
	if _, err := lib.ImportGit(context.Background(), "ext::sh -c touch% /tmp/pwned", false); err == nil || !strings.Contains(err.Error(), "is not a git URL") {
		t.Fatalf("an ext:: URL: %v", err)
	}
	// A folder in the library that is not a skill is said, not hidden.
	write(t, filepath.Join(lib.Dir, "broken", "SKILL.md"), "no front matter")
	all, problems := lib.List()
	if len(all) != 3 || len(problems) != 1 || !strings.Contains(problems[0].Error(), "broken: SKILL.md must begin with front matter") {
		t.Fatalf("%d skills, problems %v", len(all), problems)
	}
	if err := lib.Delete("csv-tidy"); err != nil {
		t.Fatal(err)
	}
	if _, err := lib.Get("csv-tidy"); err == nil {
		t.Fatal("deleted, still there")
	}
}

// A mentioned skill's instructions go into the first message; the others
// are a line of the system prompt, read with use_skill; a skill's files
// are copied into the shared folder when it is used.
func TestForTask(t *testing.T) {
	lib := Library{Dir: t.TempDir()}
	a, _ := lib.Save(Skill{Name: "tide-report", Description: "Tide reports.", Instructions: "SECRET-A: highest tide first."})
	b, _ := lib.Save(Skill{Name: "csv-tidy", Description: "Tidy CSV.", Instructions: "SECRET-B: sort by the first column."})
	write(t, filepath.Join(b.Dir, "sort.sh"), "sort\n")
	if got := Mentioned("Please use @tide-report (and mail me@example.org, @nobody)", []Skill{a, b}); len(got) != 1 || got[0] != "tide-report" {
		t.Fatalf("mentioned %v", got)
	}
	shared := t.TempDir()
	prompt, first, tools := ForTask([]Skill{a, b}, []string{"tide-report"}, func() string { return shared })
	if !strings.Contains(first, "SECRET-A") || strings.Contains(first, "SECRET-B") {
		t.Fatalf("first message %q", first)
	}
	p := strings.Join(prompt, "\n")
	if !strings.Contains(p, "- csv-tidy: Tidy CSV.") || strings.Contains(p, "SECRET") {
		t.Fatalf("prompt %q", p)
	}
	out, err := tools[0].Run(context.Background(), json.RawMessage(`{"name":"csv-tidy"}`))
	if err != nil || !strings.Contains(out, "SECRET-B") || !strings.Contains(out, "files are in the shared folder's skills/csv-tidy") {
		t.Fatalf("use_skill: %q, %v", out, err)
	}
	if b, err := os.ReadFile(filepath.Join(shared, "skills", "csv-tidy", "sort.sh")); err != nil || string(b) != "sort\n" {
		t.Fatalf("its file in the VM: %q %v", b, err)
	}
	if _, err := tools[0].Run(context.Background(), json.RawMessage(`{"name":"nope"}`)); err == nil || !strings.Contains(err.Error(), "the skills are tide-report, csv-tidy") {
		t.Fatalf("unknown: %v", err)
	}
	// Threat: the guest put a link where the skill's files go, to write
	// them on the host; they are written inside the shared folder or not
	// at all.
	shared2, outside := t.TempDir(), t.TempDir()
	os.Symlink(outside, filepath.Join(shared2, "skills"))
	_, _, tools = ForTask([]Skill{a, b}, nil, func() string { return shared2 })
	out, _ = tools[0].Run(context.Background(), json.RawMessage(`{"name":"csv-tidy"}`))
	if entries, _ := os.ReadDir(outside); len(entries) != 0 || !strings.Contains(out, "could not be copied") {
		t.Fatalf("written through the link: %v; %q", entries, out)
	}
	d := Draft("Tidy the CSV!", "Sort data.csv by date and save it to the outbox.", "Sorted 40 rows.", []string{"run_shell {\"command\":\"sort\"}", "run_shell {\"command\":\"sort\"}", "write_file {}"})
	if d.Name != "tidy-the-csv" || !strings.Contains(d.Instructions, "1. `run_shell {\"command\":\"sort\"}`\n2. `write_file {}`") || !strings.Contains(d.Instructions, "Sorted 40 rows.") {
		t.Fatalf("draft %+v", d)
	}
	if _, err := Parse(d.Markdown()); err != nil {
		t.Fatalf("the draft does not parse: %v", err)
	}
}
