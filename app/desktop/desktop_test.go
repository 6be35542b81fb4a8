package desktop

import (
	"encoding/xml"
	"strings"
	"testing"
)

func TestGeneratedFiles(t *testing.T) {
	unit := SystemdUnitFile("/opt/Hive Crew/hivecrew-helper")
	if !strings.Contains(unit, `ExecStart="/opt/Hive Crew/hivecrew-helper" serve`) || !strings.Contains(unit, "WantedBy=default.target") {
		t.Fatalf("unit:\n%s", unit)
	}
	if u := SystemdUnitFile("/usr/bin/hivecrew-helper"); !strings.Contains(u, "ExecStart=/usr/bin/hivecrew-helper serve\n") {
		t.Fatalf("unit:\n%s", u)
	}
	entry := AutostartEntry("/home/a b/hivecrew")
	if !strings.Contains(entry, `Exec="/home/a b/hivecrew"`) || !strings.HasPrefix(entry, "[Desktop Entry]\n") {
		t.Fatalf("entry:\n%s", entry)
	}
	plist := LaunchAgentPlist(HelperLabel, []string{"/Applications/Hivecrew.app/Contents/MacOS/hivecrew-helper", "serve"}, true, "/tmp/a&b.log")
	// It is well-formed XML with the keys launchd needs.
	dec := xml.NewDecoder(strings.NewReader(plist))
	var keys []string
	for {
		tok, err := dec.Token()
		if err != nil {
			break
		}
		if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "key" {
			var k string
			dec.DecodeElement(&k, &se)
			keys = append(keys, k)
		}
	}
	want := "Label ProgramArguments RunAtLoad ProcessType KeepAlive SuccessfulExit StandardOutPath StandardErrorPath"
	if strings.Join(keys, " ") != want {
		t.Fatalf("keys = %v", keys)
	}
	if !strings.Contains(plist, "/tmp/a&amp;b.log") {
		t.Fatal("the log path is not escaped")
	}
}
