package secrets

import (
	"log/slog"

	"github.com/hivecrew/hivecrew/core/config"
)

// openPlatform returns the login keychain. paths is unused: nothing is kept
// in the data directory on macOS.
func openPlatform(_ config.Paths, log *slog.Logger) (Store, error) {
	log.Info("API keys are kept in the macOS keychain", "service", keychainService)
	return keychain{}, nil
}
