package orchestrator

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/pquerna/otp/totp"

	"github.com/hivecrew/hivecrew/core/agent"
	"github.com/hivecrew/hivecrew/core/store"
)

// vault is a task's view of the credential store (agent.Vault): the
// credentials as they were when it started, their secrets read from the
// secret store when typed.
type vault struct {
	creds  []store.Credential
	secret func(ref string) (string, error)
	now    func() time.Time
}

// vaultFor returns the vault of a task, nil when there is no secret store.
func (o *Orchestrator) vaultFor(ctx context.Context) (agent.Vault, error) {
	if o.cfg.Secret == nil {
		return nil, nil
	}
	cs, err := o.cfg.Store.ListCredentials(ctx)
	if err != nil {
		return nil, err
	}
	return &vault{creds: cs, secret: o.cfg.Secret, now: time.Now}, nil
}

func (v *vault) Credentials() []agent.CredentialInfo {
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

func (v *vault) Secret(name, field string) (string, error) {
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
