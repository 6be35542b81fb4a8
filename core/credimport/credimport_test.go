package credimport

import (
	"strings"
	"testing"
)

// The three browsers' exports, as they write them.
const (
	chrome  = "name,url,username,password,note\ngithub.com,https://github.com/login,ada,gh-S3CRET-1,\ngithub.com,https://github.com/session,bob,gh-S3CRET-2,work\nintranet,https://intra.example/,ada,in-S3CRET-3,\n"
	firefox = "\"url\",\"username\",\"password\",\"httpRealm\",\"formActionOrigin\",\"guid\",\"timeCreated\",\"timeLastUsed\",\"timePasswordChanged\"\n\"https://www.example.org\",\"ada\",\"ff-S3CRET,with \"\"quotes\"\"\",,\"https://www.example.org\",\"{1}\",\"1\",\"1\",\"1\"\n"
	safari  = "Title,URL,Username,Password,Notes,OTPAuth\nBank (ada),https://bank.example/,ada,sf-S3CRET-4,,otpauth://totp/Bank:ada?secret=JBSWY3DPEHPK3PXP&issuer=Bank\n"
)

func TestBrowsersExports(t *testing.T) {
	for name, c := range map[string]struct {
		csv  string
		want []Login
	}{
		"chrome": {chrome, []Login{
			{Line: 2, Name: "github.com (ada)", Username: "ada", Password: "gh-S3CRET-1"},
			{Line: 3, Name: "github.com (bob)", Username: "bob", Password: "gh-S3CRET-2"},
			{Line: 4, Name: "intranet", Username: "ada", Password: "in-S3CRET-3"}}},
		"firefox": {firefox, []Login{{Line: 2, Name: "example.org", Username: "ada", Password: `ff-S3CRET,with "quotes"`}}},
		"safari":  {"\ufeff" + safari, []Login{{Line: 2, Name: "Bank (ada)", Username: "ada", Password: "sf-S3CRET-4", TOTPSeed: "JBSWY3DPEHPK3PXP"}}},
	} {
		got, err := Parse(strings.NewReader(c.csv))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(got) != len(c.want) {
			t.Fatalf("%s: %+v", name, got)
		}
		for i := range got {
			if got[i] != c.want[i] {
				t.Errorf("%s row %d = %+v, want %+v", name, i, got[i], c.want[i])
			}
		}
	}
}

// TestBadRowsNamedByLine: a row that cannot be taken is an error naming its
// line, and no error quotes a password.
func TestBadRowsNamedByLine(t *testing.T) {
	for file, want := range map[string]string{
		"":                                     "the file is empty",
		"name,url,username\nx,https://x,ada\n": "line 1: no password column",
		"name,url,username,password\n":         "no logins",
		"name,url,username,password\na,https://a,ada,p-S3CRET-1\nb,https://b,bob,\n":                      "line 3: no password",
		"name,url,username,password\na,https://a,ada,p-S3CRET-1\n,,bob,p-S3CRET-2\n":                      "line 3: no name, title or address",
		"name,url,username,password\na,https://a,ada,p-S3CRET-1\nb,https://b,bob,\"p-S3CRET-2\n":          "line 3: not CSV",
		"name,url,username,password\na,https://a,ada,p-S3CRET-1\na,https://a,ada,p-S3CRET-2\n":            "line 3: a second login named \"a (ada)\" with the same username as line 2",
		"name,url,username,password\na,https://a,ada,p-S3CRET-1\n\"b\",https://b,bob,\"p-S3CRET-2\nx\"\n": "line 3: the password has a line break",
		"Title,URL,Username,Password,OTPAuth\na,https://a,ada,p-S3CRET-1,https://not-otp\n":               "line 2: the OTPAuth field",
		"name,url,username,password\na,https://a\n":                                                       "line 2: 2 fields, but the password is field 4",
	} {
		_, err := Parse(strings.NewReader(file))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: err = %v, want %q", file, err, want)
			continue
		}
		if strings.Contains(err.Error(), "S3CRET") {
			t.Errorf("%q: the error quotes a password: %v", file, err)
		}
	}
	big := "name,url,username,password\n" + strings.Repeat("a,https://a,ada,p\n", MaxBytes/18+1)
	if _, err := Parse(strings.NewReader(big)); err == nil || !strings.Contains(err.Error(), "over 4 MB") {
		t.Errorf("a file over the limit: %v", err)
	}
}
