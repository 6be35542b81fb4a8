package vault

import (
	"errors"
	"testing"
	"time"

	"github.com/pquerna/otp/totp"

	"github.com/hivecrew/hivecrew/core/store"
)

// TestVaultTypesCurrentTOTPCodes: a credential's totp field is the code of
// its seed now (RFC 6238, 30 s steps); its password comes from the secret
// store by the name core/api stores it under; the model's list shows what
// it has and no secret.
func TestVaultTypesCurrentTOTPCodes(t *testing.T) {
	const seed = "JBSWY3DPEHPK3PXP"
	pwRef, totpRef := store.Credential{ID: "c1"}.SecretRefs()
	secrets := map[string]string{pwRef: "pw-123456", totpRef: seed}
	at := time.Date(2026, 11, 25, 9, 0, 0, 0, time.UTC)
	v := New([]store.Credential{{ID: "c1", Name: "bank", Username: "alice", HasTOTP: true, AllowedApps: "Firefox, Chromium"}},
		func(ref string) (string, error) {
			if s, ok := secrets[ref]; ok {
				return s, nil
			}
			return "", errors.New("not found")
		}, func() time.Time { return at })
	want, err := totp.GenerateCode(seed, at)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := v.Secret("bank", "totp"); err != nil || got != want || len(got) != 6 {
		t.Fatalf("totp %q, %v; want %q", got, err, want)
	}
	if got, _ := v.Secret("bank", "password"); got != "pw-123456" {
		t.Fatalf("password %q", got)
	}
	infos := v.Credentials()
	if len(infos) != 1 || !infos[0].HasPassword || !infos[0].HasTOTP || !infos[0].HasUsername || len(infos[0].AllowedApps) != 2 || infos[0].AllowedApps[1] != "Chromium" {
		t.Fatalf("credentials %+v", infos)
	}
	if _, err := v.Secret("nope", "password"); err == nil {
		t.Fatal("an unknown credential gave a secret")
	}
}
