//go:build !linux && !darwin

package secrets

import (
	"log/slog"

	"github.com/hivecrew/hivecrew/core/config"
)

// openPlatform returns the file store: this OS has no supported keyring.
func openPlatform(paths config.Paths, log *slog.Logger) (Store, error) {
	return openFileFallback(paths, log, "no system keyring is supported on this OS")
}
