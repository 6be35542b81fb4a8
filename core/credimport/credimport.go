// Package credimport reads the passwords a browser exports as CSV
// (Chrome's name,url,username,password,note; Firefox's
// url,username,password,httpRealm,...; Safari's
// Title,URL,Username,Password,Notes,OTPAuth) into logins to store as
// credentials. It parses the whole file before anything is stored: a
// row it cannot take is an error naming its line, and no error or value
// it returns quotes a password or a one-time-code seed.
package credimport

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Login is one row of an export.
type Login struct {
	// Line is the row's line in the file (1 is the header).
	Line int
	// Name is the row's name or title, else its address's host.
	Name     string
	Username string
	Password string
	// TOTPSeed is the seed of Safari's OTPAuth column (otpauth://...?secret=).
	TOTPSeed string
}

// Limits of an import.
const (
	MaxBytes  = 4 << 20
	MaxLogins = 5000
	maxName   = 64
)

// columns are the header names each field is read from, lower-cased.
var columns = map[string][]string{
	"name":     {"name", "title"},
	"url":      {"url", "origin", "website"},
	"username": {"username", "login", "user name"},
	"password": {"password"},
	"otp":      {"otpauth"},
}

// Parse reads an export. Rows without a password and a one-time code
// (Chrome's passkey-only rows, say) are errors, as are rows whose name
// cannot be made from a name, title or address; two rows of the same
// name get their usernames added ("github.com (ada)").
func Parse(r io.Reader) ([]Login, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read the export: %w", err)
	}
	if len(data) > MaxBytes {
		return nil, fmt.Errorf("the file is over %d MB: export fewer passwords at once", MaxBytes>>20)
	}
	cr := csv.NewReader(bytes.NewReader(data))
	cr.FieldsPerRecord = -1
	head, err := cr.Read()
	if errors.Is(err, io.EOF) {
		return nil, errors.New("the file is empty: export your passwords from the browser as CSV")
	}
	if err != nil {
		return nil, fmt.Errorf("line 1: %w", csvProblem(err))
	}
	at := map[string]int{}
	for i, h := range head {
		h = strings.ToLower(strings.TrimSpace(strings.TrimPrefix(h, "\ufeff")))
		for field, names := range columns {
			for _, n := range names {
				if _, seen := at[field]; h == n && !seen {
					at[field] = i
				}
			}
		}
	}
	if _, ok := at["password"]; !ok {
		return nil, errors.New("line 1: no password column: want a browser's password export (a header such as name,url,username,password)")
	}
	var out []Login
	names := map[string]int{}
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			var pe *csv.ParseError
			if errors.As(err, &pe) {
				return nil, fmt.Errorf("line %d: %w", pe.StartLine, csvProblem(err))
			}
			return nil, fmt.Errorf("read the export: %w", err)
		}
		line, _ := cr.FieldPos(0)
		if len(out) == MaxLogins {
			return nil, fmt.Errorf("line %d: more than %d logins in one file", line, MaxLogins)
		}
		if len(rec) == 1 && strings.TrimSpace(rec[0]) == "" {
			continue
		}
		l, err := row(rec, at, line)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", line, err)
		}
		out = append(out, l)
		names[l.Name]++
	}
	if len(out) == 0 {
		return nil, errors.New("the file has a header but no logins")
	}
	seen := map[string]int{}
	for i, l := range out {
		if names[l.Name] > 1 && l.Username != "" {
			out[i].Name = clip(l.Name+" ("+l.Username+")", maxName)
		}
		if first, dup := seen[out[i].Name]; dup {
			return nil, fmt.Errorf("line %d: a second login named %q with the same username as line %d: remove one of them", l.Line, out[i].Name, first)
		}
		seen[out[i].Name] = l.Line
	}
	return out, nil
}

// row reads one record.
func row(rec []string, at map[string]int, line int) (Login, error) {
	get := func(field string) string {
		if i, ok := at[field]; ok && i < len(rec) {
			return strings.TrimSpace(rec[i])
		}
		return ""
	}
	if i := at["password"]; i >= len(rec) {
		return Login{}, fmt.Errorf("%d fields, but the password is field %d", len(rec), i+1)
	}
	l := Login{Line: line, Name: get("name"), Username: get("username"), Password: rec[at["password"]]}
	if otp := get("otp"); otp != "" {
		u, err := url.Parse(otp)
		if err != nil || u.Scheme != "otpauth" || u.Query().Get("secret") == "" {
			return l, errors.New("the OTPAuth field is not an otpauth:// address with a secret")
		}
		l.TOTPSeed = u.Query().Get("secret")
	}
	if l.Password == "" && l.TOTPSeed == "" {
		return l, errors.New("no password (a passkey or an empty entry): remove the row")
	}
	if strings.ContainsAny(l.Password, "\r\n") {
		return l, errors.New("the password has a line break: a credential's password is one line")
	}
	if l.Name == "" {
		if u, err := url.Parse(get("url")); err == nil {
			l.Name = strings.TrimPrefix(u.Hostname(), "www.")
		}
	}
	if l.Name == "" {
		return l, errors.New("no name, title or address to name the credential by")
	}
	if strings.ContainsFunc(l.Name, func(r rune) bool { return unicode.IsControl(r) || unicode.Is(unicode.Cf, r) }) {
		return l, errors.New("the name has control characters")
	}
	l.Name = clip(l.Name, maxName)
	return l, nil
}

// clip shortens s to at most n bytes, on a character boundary.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// csvProblem is a CSV error without the reader's quoting of the record
// (which could hold a password): its kind alone.
func csvProblem(err error) error {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return fmt.Errorf("not CSV: %w", pe.Err)
	}
	return err
}
