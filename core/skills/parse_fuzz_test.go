package skills

import (
	"bytes"
	"fmt"
	"testing"
	"time"
	"unicode/utf8"
)

// FuzzParse: a SKILL.md comes from folders and git repositories of anyone's
// making. Whatever its bytes, Parse does not panic; what it accepts has a
// valid name, a bounded description and instructions; and a skill it
// accepts is written back (Markdown, as Save and "Save as skill" do) as a
// SKILL.md that parses to the same skill.
func FuzzParse(f *testing.F) {
	for _, seed := range []string{
		"---\nname: csv-report\ndescription: Turn a CSV into a report.\n---\n\nTotal each column.\n",
		"---\r\nname: a\r\ndescription: \"quoted: with colon\"\r\n---\r\nDo it.",
		"---\nname: a\ndescription: |\n  two\n  lines\n---\nx",
		"---\nname: [1, 2]\ndescription: {a: b}\n---\nx",
		"---\nname: &a x\ndescription: *a\n---\nx",
		"---\nname: a\ndescription: b\n---",
		"---\n---\n",
		"no front matter",
		"---\nname: a\ndescription: \"\\u0000\"\n---\nx\n---\nmore",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		timer := time.AfterFunc(2*time.Second, func() { panic(fmt.Sprintf("Parse(%q) takes over 2s", data)) })
		defer timer.Stop()
		s, err := Parse(data)
		if err != nil {
			return
		}
		if !namePattern.MatchString(s.Name) {
			t.Fatalf("accepted the name %q", s.Name)
		}
		if s.Description == "" || len(s.Description) > MaxDescription || !utf8.ValidString(s.Description) {
			t.Fatalf("accepted the description %q", s.Description)
		}
		if s.Instructions == "" {
			t.Fatal("accepted no instructions")
		}
		md := s.Markdown()
		again, err := Parse(md)
		if err != nil {
			t.Fatalf("Parse(Markdown()) of %+v: %v\n%s", s, err, md)
		}
		if again.Name != s.Name || again.Description != s.Description || again.Instructions != s.Instructions {
			t.Fatalf("round trip changed the skill:\n%+v\n%+v\n%s", s, again, md)
		}
		if !bytes.HasPrefix(md, []byte("---\n")) {
			t.Fatalf("Markdown() = %q", md)
		}
	})
}
