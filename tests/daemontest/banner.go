package daemontest

import (
	"bufio"
	"io"
	"regexp"
	"strings"
)

var (
	apiLine = regexp.MustCompile(`API:\s+http://(\S+)/api/v1`)
	keyLine = regexp.MustCompile(`API key:\s+(hc_\S+)`)
)

// ReadBanner reads a helper's banner from r up to its last line ("Press
// Ctrl+C to stop.") and returns the TCP address and API key it names; addr
// is empty when the banner ended early (the helper did not start), key when
// the helper printed none.
func ReadBanner(r io.Reader) (addr, key string) {
	lines := bufio.NewScanner(r)
	for lines.Scan() {
		line := lines.Text()
		if strings.HasPrefix(line, "Press Ctrl+C") {
			return addr, key
		}
		if m := apiLine.FindStringSubmatch(line); m != nil {
			addr = m[1]
		} else if m := keyLine.FindStringSubmatch(line); m != nil {
			key = m[1]
		}
	}
	return "", key
}
