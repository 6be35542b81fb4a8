package linux

import (
	"bufio"
	"io"
	"strings"
)

// desktopEntry is the part of a freedesktop .desktop file open_app needs.
type desktopEntry struct {
	ID         string // file name without .desktop
	File       string // the .desktop file, when read from one
	Name       string
	Exec       string
	NoShow     bool
	Terminal   bool
	Categories []string
}

// parseDesktopEntry reads the [Desktop Entry] group of a .desktop file.
func parseDesktopEntry(id string, r io.Reader) (desktopEntry, bool) {
	e := desktopEntry{ID: id}
	sc := bufio.NewScanner(r)
	inGroup := false
	typ := ""
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		if line[0] == '[' {
			inGroup = line == "[Desktop Entry]"
			continue
		}
		if !inGroup {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		switch strings.TrimSpace(k) {
		case "Name":
			e.Name = strings.TrimSpace(v)
		case "Exec":
			e.Exec = strings.TrimSpace(v)
		case "Type":
			typ = strings.TrimSpace(v)
		case "NoDisplay", "Hidden":
			e.NoShow = e.NoShow || strings.TrimSpace(v) == "true"
		case "Terminal":
			e.Terminal = strings.TrimSpace(v) == "true"
		case "Categories":
			e.Categories = strings.FieldsFunc(v, func(r rune) bool { return r == ';' || r == ' ' })
		}
	}
	return e, typ == "Application" && e.Exec != ""
}

// execArgs splits an Exec value into arguments (the desktop entry quoting
// rules) and substitutes the field codes: %f %u are the first file, %F %U
// all files; the others are dropped. When the line names no file code and
// files are given, they are appended.
func execArgs(exec string, files []string) []string {
	var args []string
	var cur strings.Builder
	inQuote, have, used := false, false, false
	flush := func() {
		if have {
			args = append(args, cur.String())
		}
		cur.Reset()
		have = false
	}
	rs := []rune(exec)
	for i := 0; i < len(rs); i++ {
		c := rs[i]
		switch {
		case inQuote && c == '\\' && i+1 < len(rs):
			i++
			cur.WriteRune(rs[i])
		case c == '"':
			inQuote = !inQuote
			have = true
		case !inQuote && (c == ' ' || c == '\t'):
			flush()
		case c == '%' && i+1 < len(rs):
			i++
			switch rs[i] {
			case '%':
				cur.WriteRune('%')
				have = true
			case 'f', 'u':
				used = true
				if len(files) > 0 {
					cur.WriteString(files[0])
					have = true
				}
			case 'F', 'U':
				used = true
				flush()
				args = append(args, files...)
			}
		default:
			cur.WriteRune(c)
			have = true
		}
	}
	flush()
	if !used {
		args = append(args, files...)
	}
	return args
}
