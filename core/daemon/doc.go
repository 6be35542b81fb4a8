// Package daemon runs the Hivecrew helper, the headless core: it listens on
// the unix socket at once (and on TCP once the configured port is known),
// answers /health immediately, holds every other request until the store is
// open, and shuts down cleanly on context cancellation or a stop request.
// One helper runs per data directory, guarded by a lock file.
package daemon
