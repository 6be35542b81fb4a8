// Package plisttest reads XML property lists (Info.plist, launchd plists,
// entitlements) for tests: dict, array, string, integer and booleans.
package plisttest

import (
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// value decodes an XML property list value: map[string]any, []any,
// string, int64, bool.
func value(d *xml.Decoder, start xml.StartElement) (any, error) {
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
				v, err := value(d, t)
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
				v, err := value(d, t)
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

// Read parses the plist file at path into its top-level dict.
func Read(path string) (map[string]any, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	d := xml.NewDecoder(f)
	for {
		tok, err := d.Token()
		if err == io.EOF {
			return nil, fmt.Errorf("%s: no <plist><dict>", path)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "dict" {
			v, err := value(d, se)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", path, err)
			}
			return v.(map[string]any), nil
		}
	}
}
