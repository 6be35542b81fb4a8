package api_test

import (
	"encoding/json"
	"io"
	"log/slog"
	"maps"
	"strings"
	"testing"

	"github.com/hivecrew/hivecrew/core/secrets"
	"github.com/hivecrew/hivecrew/core/wire"
)

// storedSecrets reads the helper's secret file (the daemon tests' store).
func (h *helper) storedSecrets() map[string]string {
	h.t.Helper()
	f, err := secrets.NewFile(h.paths.SecretsFile(), slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		h.t.Fatal(err)
	}
	out := map[string]string{}
	var list wire.CredentialList
	json.Unmarshal(h.expect(200, "GET", "/api/v1/credentials", nil), &list)
	for _, c := range list.Credentials {
		for _, kind := range []string{"password", "totp"} {
			if v, err := f.Get("credential/" + c.ID + "/" + kind); err == nil && v != "" {
				out[c.Name+"/"+kind] = v
			}
		}
	}
	return out
}

// TestImportCredentials: a browser's CSV export is imported whole: every
// login with its password (and Safari's one-time-code seed) stored as
// secrets and never answered; a file with a bad row, or a name that is
// taken, is refused naming the line, quoting no secret, and imports
// nothing.
func TestImportCredentials(t *testing.T) {
	t.Parallel()
	h := startHelper(t, nil)
	bad := "name,url,username,password,note\nmail,https://mail.example,ada,ml-S3CRET-1,\nempty,https://e.example,bob,,\n"
	out := h.expect(400, "POST", "/api/v1/credentials/import", []byte(bad), "Content-Type", "text/csv")
	if !strings.Contains(string(out), "line 3: no password") || strings.Contains(string(out), "S3CRET") {
		t.Fatalf("bad row: %s", out)
	}
	if got := h.storedSecrets(); len(got) != 0 {
		t.Fatalf("a refused import stored %v", got)
	}

	chrome := "name,url,username,password,note\ngithub.com,https://github.com/login,ada,gh-S3CRET-1,\ngithub.com,https://github.com/,bob,gh-S3CRET-2,\n"
	var list wire.CredentialList
	out = h.expect(201, "POST", "/api/v1/credentials/import", []byte(chrome), "Content-Type", "text/csv")
	json.Unmarshal(out, &list)
	if strings.Contains(string(out), "S3CRET") || len(list.Credentials) != 2 || list.Credentials[0].Name != "github.com (ada)" ||
		!list.Credentials[1].HasPassword || list.Credentials[1].Username != "bob" {
		t.Fatalf("import answered %s", out)
	}
	safari := "Title,URL,Username,Password,Notes,OTPAuth\nBank,https://bank.example/,ada,bk-S3CRET-3,,otpauth://totp/Bank:ada?secret=JBSWY3DPEHPK3PXP\ngithub.com (ada),https://github.com,ada,gh-S3CRET-4,,\n"
	out = h.expect(409, "POST", "/api/v1/credentials/import", []byte(safari), "Content-Type", "text/csv")
	if !strings.Contains(string(out), `line 3: a credential named \"github.com (ada)\" exists already`) {
		t.Fatalf("taken name: %s", out)
	}
	want := map[string]string{"github.com (ada)/password": "gh-S3CRET-1", "github.com (bob)/password": "gh-S3CRET-2"}
	if got := h.storedSecrets(); !maps.Equal(got, want) {
		t.Fatalf("secrets after a refused second import %v, want %v", got, want)
	}
	h.expect(201, "POST", "/api/v1/credentials/import", []byte(strings.Replace(safari, "github.com (ada),", "github work,", 1)), "Content-Type", "text/csv")
	want["Bank/password"], want["Bank/totp"], want["github work/password"] = "bk-S3CRET-3", "JBSWY3DPEHPK3PXP", "gh-S3CRET-4"
	if got := h.storedSecrets(); !maps.Equal(got, want) {
		t.Fatalf("secrets %v, want %v", got, want)
	}
	if out := h.expect(200, "GET", "/api/v1/credentials", nil); strings.Contains(string(out), "S3CRET") || strings.Contains(string(out), "JBSWY3DP") {
		t.Fatalf("the list answers a secret: %s", out)
	}
}

// TestEditCredential: a credential's name, username, password, seed and
// applications change by PATCH; a field left out stays; the password is
// never answered; removing both secrets is refused.
func TestEditCredential(t *testing.T) {
	t.Parallel()
	h := startHelper(t, nil)
	h.expect(201, "POST", "/api/v1/credentials", map[string]any{"name": "intranet", "username": "ada", "password": "old-S3CRET"})
	var c wire.Credential
	out := h.expect(200, "PATCH", "/api/v1/credentials/intranet", map[string]any{"name": "intra", "password": "new-S3CRET", "allowedApps": []string{"Firefox"}})
	json.Unmarshal(out, &c)
	if strings.Contains(string(out), "S3CRET") || c.Name != "intra" || c.Username != "ada" || len(c.AllowedApps) != 1 || !c.HasPassword {
		t.Fatalf("edit answered %s", out)
	}
	if got := h.storedSecrets(); got["intra/password"] != "new-S3CRET" {
		t.Fatalf("secrets %v", got)
	}
	h.expect(200, "PATCH", "/api/v1/credentials/intra", map[string]any{"totpSeed": "jbsw y3dp ehpk 3pxp", "username": "ada2"})
	if got := h.storedSecrets(); got["intra/password"] != "new-S3CRET" || got["intra/totp"] != "JBSWY3DPEHPK3PXP" {
		t.Fatalf("secrets after adding a seed %v", got)
	}
	h.expect(200, "PATCH", "/api/v1/credentials/intra", map[string]any{"password": ""})
	if got := h.storedSecrets(); got["intra/password"] != "" {
		t.Fatalf("a removed password stays: %v", got)
	}
	if out := h.expect(400, "PATCH", "/api/v1/credentials/intra", map[string]any{"totpSeed": ""}); !strings.Contains(string(out), "needs a password or a totpSeed") {
		t.Fatalf("removing both: %s", out)
	}
	h.expect(400, "PATCH", "/api/v1/credentials/intra", map[string]any{"totpSeed": "not base32!"})
	h.expect(201, "POST", "/api/v1/credentials", map[string]any{"name": "mail", "password": "x"})
	h.expect(409, "PATCH", "/api/v1/credentials/intra", map[string]any{"name": "mail"})
	h.expect(404, "PATCH", "/api/v1/credentials/nope", map[string]any{"name": "x"})
}
