package sandbox

import (
	"crypto/rand"
	"encoding/hex"
	"os"
)

// hostEtc lists the entries of etcAllow present on this host, as root
// entries below etc/ (links recreated as links, so /etc/localtime still
// points into /usr/share/zoneinfo).
func hostEtc() []RootEntry {
	var out []RootEntry
	for _, n := range etcAllow {
		fi, err := os.Lstat("/etc/" + n)
		if err != nil {
			continue
		}
		e := RootEntry{Name: "etc/" + n}
		if fi.Mode()&os.ModeSymlink != 0 {
			if e.Link, err = os.Readlink("/etc/" + n); err != nil {
				continue
			}
		}
		out = append(out, e)
	}
	return out
}

// machineID is a fresh machine id (32 hex digits and a newline, as
// machine-id(5) says) for one start of a VM: the host's is never shown.
func machineID() string {
	b := make([]byte, 16)
	rand.Read(b)
	return hex.EncodeToString(b) + "\n"
}
