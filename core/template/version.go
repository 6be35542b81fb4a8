package template

import (
	"regexp"
	"strconv"
	"strings"

	"golang.org/x/mod/semver"
)

// describe matches a version as `git describe --tags --dirty` prints it:
// a tag, then commits since it and the commit ("-5-gabc1234"), then
// "-dirty".
var describe = regexp.MustCompile(`^(.*?)(?:-(\d+)-g([0-9a-f]+))?(-dirty)?$`)

// AgentOutdated reports whether a guest agent of version guest is older
// than the host's (host). Versions are compared as `git describe` prints
// them: the tags by semantic version ("v1.2.0" < "v1.10.0"), then the
// commits since the tag ("v1.3.0" < "v1.3.0-2-gabc"); builds that cannot be
// ordered ("dev", a bare commit, two commits at the same distance) are
// outdated when they differ. An unknown version (empty) is not outdated.
func AgentOutdated(guest, host string) bool {
	guest, host = strings.TrimSpace(guest), strings.TrimSpace(host)
	if guest == "" || host == "" || guest == host {
		return false
	}
	gt, gn, gc := split(guest)
	ht, hn, hc := split(host)
	if !semver.IsValid(gt) || !semver.IsValid(ht) {
		return true
	}
	if c := semver.Compare(gt, ht); c != 0 {
		return c < 0
	}
	if gn != hn {
		return gn < hn
	}
	return gc != hc
}

// split returns a version's tag (with its "v"), its commits since the tag
// and the commit.
func split(v string) (tag string, commits int, commit string) {
	m := describe.FindStringSubmatch(v)
	if m == nil {
		return v, 0, ""
	}
	tag = m[1]
	if !strings.HasPrefix(tag, "v") {
		tag = "v" + tag
	}
	commits, _ = strconv.Atoi(m[2])
	return tag, commits, m[3]
}
