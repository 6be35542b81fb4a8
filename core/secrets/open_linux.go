package secrets

import (
	"context"
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"time"

	"github.com/hivecrew/hivecrew/core/config"
)

// secretServiceTimeout bounds finding and connecting to the Secret Service at
// startup, and opening each session afterwards, so a missing or wedged
// session bus cannot hang the helper.
const secretServiceTimeout = 3 * time.Second

// openPlatform returns the Secret Service store when a session bus is running
// (never launching one) with a Secret Service whose default collection is
// unlocked, and otherwise the file store with a warning saying why.
func openPlatform(paths config.Paths, log *slog.Logger) (Store, error) {
	address, ok := sessionBusAddress(os.Getenv, os.Getuid(), pathExists)
	if !ok {
		return openFileFallback(paths, log, "no D-Bus session bus")
	}
	ctx, cancel := context.WithTimeout(context.Background(), secretServiceTimeout)
	defer cancel()
	s, err := openSecretService(ctx, address, secretServiceTimeout)
	if err != nil {
		return openFileFallback(paths, log, err.Error())
	}
	log.Info("API keys are kept in the Secret Service", "collection", string(s.collection))
	return s, nil
}

// pathExists reports whether path exists (a dangling or unreadable path
// counts as existing unless the OS says it does not).
func pathExists(path string) bool {
	_, err := os.Stat(path)
	return !errors.Is(err, fs.ErrNotExist)
}
