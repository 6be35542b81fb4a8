// Package version holds the build's version, set at link time by the Makefile
// (-ldflags "-X github.com/hivecrew/hivecrew/core/version.Version=...").
package version

// Version is the Hivecrew version of this build; "dev" for an untagged build.
var Version = "dev"
