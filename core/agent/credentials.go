package agent

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/hivecrew/hivecrew/core/config"
	"github.com/hivecrew/hivecrew/guestagent/protocol"
)

// Credentials (issue 19.1). The model knows a stored credential by its name
// only. use_credential {name, field} makes the host type the username, the
// password or a current TOTP code into the focused field of the guest. The
// secret goes to the guest agent's keyboard and nowhere else: not into a
// prompt, an event, the trace or an export. Anything the guest shows back
// (a tool's output, shell output, the accessibility tree, the clipboard,
// an error that quotes it) has the task's secrets replaced by
// "[secret: NAME FIELD]", in the spellings core/redact knows, before the
// model, the feed or the trace sees it (Runner.filter). The policy asks the
// first time a task uses each credential (use_credential defaults to ask).
//
// A credential may be limited to applications that must be in front. The
// application in front is what the guest reports, and any program in the
// guest can call its window "firefox"; it also sees every key typed in the
// guest whatever is in front. So the limit is a convenience against the
// agent typing a password into the wrong window by mistake, not a safety
// control against a hostile guest, and the UI says so.

// Vault is what a task may know of the credential store.
type Vault interface {
	// Credentials lists the stored credentials (no secrets).
	Credentials() []CredentialInfo
	// Secret returns a credential's field: "username", "password", or
	// "totp" (the current code).
	Secret(name, field string) (string, error)
}

// CredentialInfo is what the model may know of a credential.
type CredentialInfo struct {
	Name        string
	HasUsername bool
	HasPassword bool
	HasTOTP     bool
	// AllowedApps, when set, are the applications one of which must be in
	// front, as the guest reports it, for it to be typed: a convenience,
	// not a safety control (see above).
	AllowedApps []string
}

// fields are the fields it can type.
func (c CredentialInfo) fields() []string {
	var out []string
	if c.HasUsername {
		out = append(out, "username")
	}
	if c.HasPassword {
		out = append(out, "password")
	}
	if c.HasTOTP {
		out = append(out, "totp")
	}
	return out
}

// credentialSpec is use_credential's tool definition.
var credentialSpec = toolSpec{"use_credential",
	"Type a stored credential's username, password or one-time code (totp) into the focused field; you never see the secret, and the user may have to approve.",
	objOpen + `"name":{"type":"string"},"field":{"type":"string","enum":["username","password","totp"]}},"required":["name","field"]}`}

// knowCredentials gives the redactor the password of every credential
// the task may type, before the first step: a guest that got one some
// other way (an earlier task's files carried into a resumed one) cannot
// show it back either. A one-time code is known once typed.
func (r *Runner) knowCredentials(creds []CredentialInfo) {
	for _, c := range creds {
		if !c.HasPassword {
			continue
		}
		if pw, err := r.cfg.Vault.Secret(c.Name, "password"); err == nil {
			r.redactor.Add(pw, c.Name+" password")
		}
	}
}

// credentialNames is the prompt's line about the stored credentials.
func credentialNames(cs []CredentialInfo) string {
	parts := make([]string, 0, len(cs))
	for _, c := range cs {
		parts = append(parts, fmt.Sprintf("%q (%s)", c.Name, strings.Join(c.fields(), ", ")))
	}
	return strings.Join(parts, "; ")
}

// useCredential runs use_credential: the policy (ask once per credential),
// the application in front, then the typing.
func (r *Runner) useCredential(ctx context.Context, step int, args map[string]any, raw string) (string, error) {
	name, _ := args["name"].(string)
	field, _ := args["field"].(string)
	var cred *CredentialInfo
	var names []string
	for _, c := range r.cfg.Vault.Credentials() {
		names = append(names, c.Name)
		if c.Name == name {
			cred = &c
		}
	}
	if cred == nil {
		return "", fmt.Errorf("there is no credential %q: the stored ones are %s", truncate(name, 64), strings.Join(names, ", "))
	}
	if !slices.Contains(cred.fields(), field) {
		return "", fmt.Errorf("credential %q has no %s (it has %s)", name, field, strings.Join(cred.fields(), ", "))
	}
	switch r.task.Policy.For(config.UseCredential) {
	case config.Deny:
		return "", fmt.Errorf("use_credential is not allowed for this task")
	case config.Ask:
		if !r.credOK[name] {
			what := fmt.Sprintf("use_credential (type the %s of %q)", field, name)
			r.emit(step, Event{Type: "permission_request", ActivityType: "user_question", Summary: "Approve " + what + "?", Details: raw})
			ok, _, err := r.ctl.requestPermission(ctx, config.UseCredential, raw)
			if err != nil {
				return "", err
			}
			if !ok {
				return "", fmt.Errorf("the user denied %s", what)
			}
			r.credOK[name] = true // once per credential and task
		}
	}
	if len(cred.AllowedApps) > 0 {
		var front protocol.FrontmostApp
		if err := r.cfg.Guest.Call(ctx, protocol.MethodFrontmostApp, struct{}{}, &front); err != nil {
			return "", fmt.Errorf("cannot tell which application is in front: %w", err)
		}
		allowed := slices.ContainsFunc(cred.AllowedApps, func(app string) bool {
			return strings.EqualFold(app, front.Name) || strings.EqualFold(app, front.BundleID)
		})
		if !allowed {
			// The name the guest reported is not quoted: a guest may name
			// its window after anything, a secret included.
			return "", fmt.Errorf("credential %q may be typed only while %s is in front, and the application in front is another: bring one of them to the front first",
				name, strings.Join(cred.AllowedApps, " or "))
		}
	}
	secret, err := r.cfg.Vault.Secret(name, field)
	if err != nil {
		return "", fmt.Errorf("credential %q: %w", name, err)
	}
	// Every field of it is kept out of what the guest shows back.
	for _, f := range cred.fields() {
		if f == "totp" && f != field {
			continue // a code not typed is not known
		}
		v := secret
		if f != field {
			if v, err = r.cfg.Vault.Secret(name, f); err != nil {
				continue
			}
		}
		if f != "username" {
			r.redactor.Add(v, name+" "+f)
		}
	}
	if err := r.cfg.Guest.Call(ctx, protocol.MethodKeyboardType, protocol.TypeParams{Text: secret}, nil); err != nil {
		return "", err
	}
	return fmt.Sprintf("Typed the %s of %q into the focused field.", field, name), nil
}
