// Package vault is a task's view of the stored credentials (agent.Vault):
// the credentials as they were when the task started, their secrets read
// from the secret store only when the agent types one.
//
// It owns the credential fields an agent may ask for (username, password,
// a TOTP code computed from the stored seed at the moment it is asked
// for) and what the model is told of each credential (names and which
// fields exist, never a secret). It needs from its caller the credential
// list (Credentials, a small interface *store.Store satisfies) and a
// function that reads the secret store. It guarantees that Credentials
// holds no secret, and that a secret is read at the time it is typed, so
// a password changed during a task is the new one.
package vault

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/pquerna/otp/totp"

	"github.com/hivecrew/hivecrew/core/agent"
	"github.com/hivecrew/hivecrew/core/store"
)

// Credentials lists the stored credentials; *store.Store is one.
type Credentials interface {
	ListCredentials(ctx context.Context) ([]store.Credential, error)
}

// SecretFunc reads a secret by its reference in the secret store.
type SecretFunc func(ref string) (string, error)

// Vault is one task's vault.
type Vault struct {
	creds  []store.Credential
	secret SecretFunc
	now    func() time.Time
}

var _ agent.Vault = (*Vault)(nil)

// New returns the vault of creds, their secrets read with secret; now is
// the clock of TOTP codes (time.Now when nil).
func New(creds []store.Credential, secret SecretFunc, now func() time.Time) *Vault {
	if now == nil {
		now = time.Now
	}
	return &Vault{creds: creds, secret: secret, now: now}
}

// Open returns the vault of a task starting now: the credentials cs lists
// at this moment.
func Open(ctx context.Context, cs Credentials, secret SecretFunc) (*Vault, error) {
	list, err := cs.ListCredentials(ctx)
	if err != nil {
		return nil, fmt.Errorf("list credentials: %w", err)
	}
	return New(list, secret, nil), nil
}

// Credentials describes the credentials to the model: names, allowed
// apps and which fields each has; no secret.
func (v *Vault) Credentials() []agent.CredentialInfo {
	out := make([]agent.CredentialInfo, 0, len(v.creds))
	for _, c := range v.creds {
		ref, _ := c.SecretRefs()
		pw, _ := v.secret(ref)
		info := agent.CredentialInfo{Name: c.Name, HasUsername: c.Username != "", HasPassword: pw != "", HasTOTP: c.HasTOTP}
		for _, app := range strings.Split(c.AllowedApps, ",") {
			if app = strings.TrimSpace(app); app != "" {
				info.AllowedApps = append(info.AllowedApps, app)
			}
		}
		out = append(out, info)
	}
	return out
}

// Secret is a credential's field: "username", "password" or "totp" (the
// current code of its seed).
func (v *Vault) Secret(name, field string) (string, error) {
	for _, c := range v.creds {
		if c.Name != name {
			continue
		}
		pwRef, totpRef := c.SecretRefs()
		switch field {
		case "username":
			return c.Username, nil
		case "password":
			return v.secret(pwRef)
		case "totp":
			seed, err := v.secret(totpRef)
			if err != nil || seed == "" {
				return "", fmt.Errorf("no TOTP seed stored (%v)", err)
			}
			return totp.GenerateCode(seed, v.now())
		}
		return "", fmt.Errorf("no field %q", field)
	}
	return "", fmt.Errorf("no credential %q", name)
}
