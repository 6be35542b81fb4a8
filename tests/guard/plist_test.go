package guard

import (
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/hivecrew/hivecrew/guestagent/protocol"
)

// plistValue decodes an XML property list value: map[string]any, []any,
// string, int64, bool.
func plistValue(d *xml.Decoder, start xml.StartElement) (any, error) {
	switch start.Name.Local {
	case "dict":
		m := map[string]any{}
		var key string
		for {
			tok, err := d.Token()
			if err != nil {
				return nil, err
			}
			switch t := tok.(type) {
			case xml.StartElement:
				if t.Name.Local == "key" {
					if err := d.DecodeElement(&key, &t); err != nil {
						return nil, err
					}
					continue
				}
				v, err := plistValue(d, t)
				if err != nil {
					return nil, err
				}
				m[key] = v
			case xml.EndElement:
				return m, nil
			}
		}
	case "array":
		var a []any
		for {
			tok, err := d.Token()
			if err != nil {
				return nil, err
			}
			switch t := tok.(type) {
			case xml.StartElement:
				v, err := plistValue(d, t)
				if err != nil {
					return nil, err
				}
				a = append(a, v)
			case xml.EndElement:
				return a, nil
			}
		}
	case "string":
		var s string
		err := d.DecodeElement(&s, &start)
		return s, err
	case "integer":
		var s string
		if err := d.DecodeElement(&s, &start); err != nil {
			return nil, err
		}
		return strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	case "true", "false":
		d.Skip()
		return start.Name.Local == "true", nil
	}
	return nil, fmt.Errorf("unsupported plist element <%s>", start.Name.Local)
}

// readPlist parses a plist file into its top-level dict.
func readPlist(t *testing.T, path string) map[string]any {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	d := xml.NewDecoder(f)
	for {
		tok, err := d.Token()
		if err == io.EOF {
			t.Fatalf("%s: no <plist><dict>", path)
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "dict" {
			v, err := plistValue(d, se)
			if err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			return v.(map[string]any)
		}
	}
}

// TestGuestAgentLaunchAgent: the LaunchAgent starts the agent at load, keeps
// it alive, only in GUI sessions, on the protocol's vsock port.
func TestGuestAgentLaunchAgent(t *testing.T) {
	p := readPlist(t, "../../Resources/com.hivecrew.guestagent.plist")
	if p["Label"] != "com.hivecrew.guestagent" || p["RunAtLoad"] != true || p["KeepAlive"] != true || p["LimitLoadToSessionType"] != "Aqua" {
		t.Fatalf("launch agent keys: %v", p)
	}
	var args []string
	for _, a := range p["ProgramArguments"].([]any) {
		args = append(args, a.(string))
	}
	i := slices.Index(args, "--listen")
	if i < 0 || i+1 >= len(args) || args[i+1] != fmt.Sprintf("vsock:%d", protocol.DefaultVsockPort) || !slices.Contains(args, "--shared") {
		t.Fatalf("ProgramArguments %q do not listen on vsock:%d with a shared folder", args, protocol.DefaultVsockPort)
	}
}

// TestEntitlements: the helper may use the Virtualization framework.
func TestEntitlements(t *testing.T) {
	p := readPlist(t, "../../entitlements.plist")
	if p["com.apple.security.virtualization"] != true {
		t.Fatalf("entitlements: %v", p)
	}
}
