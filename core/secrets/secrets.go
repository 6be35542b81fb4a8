// Package secrets keeps the LLM providers' API keys for the helper daemon, the
// only process that touches them.
//
// Open picks the platform's store: the macOS keychain; on Linux the Secret
// Service when a session bus answers and its default collection is unlocked;
// everywhere else, and as the Linux fallback, a 0600 JSON file in the data
// directory, with a logged warning. EnvOverride reads the
// HIVECREW_API_KEY_<PROVIDER> environment variables that take precedence over
// any stored key.
package secrets

import (
	"log/slog"
	"strings"

	"github.com/hivecrew/hivecrew/core/config"
	"github.com/hivecrew/hivecrew/core/errdefs"
)

// Store keeps secrets by reference name (e.g. "provider/<id>").
//
// Implementations are safe for concurrent use. A ref is any non-empty string;
// a value is any non-empty string (to remove a secret, Delete it). Get of a
// ref never Set, or Deleted since, returns an error of the errdefs.ErrNotFound
// class; Set replaces any previous value; Delete of an absent ref succeeds.
// Empty refs and empty values are errdefs.ErrInvalid errors.
type Store interface {
	// Get returns the value stored under ref.
	Get(ref string) (string, error)
	// Set stores value under ref, replacing any previous value.
	Set(ref, value string) error
	// Delete removes ref; deleting an absent ref is not an error.
	Delete(ref string) error
	// Kind names the backend for logs and status: KindKeychain,
	// KindSecretService or KindFile.
	Kind() string
}

// The values Store.Kind returns.
const (
	// KindKeychain is the macOS keychain.
	KindKeychain = "keychain"
	// KindSecretService is the freedesktop.org Secret Service (GNOME Keyring,
	// KWallet, KeePassXC) reached over the D-Bus session bus.
	KindSecretService = "secret-service"
	// KindFile is a plain JSON file readable by the user only.
	KindFile = "file"
)

// EnvPrefix starts the name of every environment variable that overrides a
// provider's stored API key.
const EnvPrefix = "HIVECREW_API_KEY_"

// Open returns the platform's store (see the package comment). log receives
// which store was chosen and, for the file, a warning; nil discards.
func Open(paths config.Paths, log *slog.Logger) (Store, error) {
	return openPlatform(paths, orDiscard(log))
}

// EnvVar returns the environment variable that overrides providerName's API
// key: EnvPrefix followed by providerName upper-cased, every run of characters
// other than A-Z and 0-9 replaced by one "_", and leading and trailing "_"
// trimmed ("Open Router" -> HIVECREW_API_KEY_OPEN_ROUTER). It returns "" when
// nothing of the name remains.
func EnvVar(providerName string) string {
	var b strings.Builder
	pendingSep := false
	for _, r := range strings.ToUpper(providerName) {
		if (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9') {
			if pendingSep && b.Len() > 0 {
				b.WriteByte('_')
			}
			pendingSep = false
			b.WriteRune(r)
			continue
		}
		pendingSep = true
	}
	if b.Len() == 0 {
		return ""
	}
	return EnvPrefix + b.String()
}

// EnvOverride returns the value of providerName's override variable (see
// EnvVar) as getenv reports it, and whether it is set to a non-empty value.
func EnvOverride(providerName string, getenv func(string) string) (string, bool) {
	name := EnvVar(providerName)
	if name == "" {
		return "", false
	}
	v := getenv(name)
	return v, v != ""
}

// openFileFallback opens the file store at paths.SecretsFile() and logs, once,
// that secrets are kept in a plain file and why.
func openFileFallback(paths config.Paths, log *slog.Logger, reason string) (Store, error) {
	f, err := NewFile(paths.SecretsFile(), log)
	if err != nil {
		return nil, err
	}
	log.Warn("API keys are stored in a plain file, protected only by its permissions",
		"path", f.Path(), "reason", reason)
	return f, nil
}

// checkRef rejects an empty ref.
func checkRef(ref string) error {
	if ref == "" {
		return errdefs.Invalidf("secret reference is empty")
	}
	return nil
}

// checkSet rejects an empty ref or value.
func checkSet(ref, value string) error {
	if err := checkRef(ref); err != nil {
		return err
	}
	if value == "" {
		return errdefs.Invalidf("secret %q: empty value (delete it instead)", ref)
	}
	return nil
}

// notFound is the error Get returns for an absent ref.
func notFound(ref string) error {
	return errdefs.NotFoundf("secret %q not found", ref)
}

// orDiscard returns log, or a logger that discards when log is nil.
func orDiscard(log *slog.Logger) *slog.Logger {
	if log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return log
}
