package guest

import (
	"encoding/json"
	"fmt"
	"path"
	"strings"
	"unicode"

	"github.com/hivecrew/hivecrew/core/errdefs"
	"github.com/hivecrew/hivecrew/guestagent/protocol"
)

// checkResolved refuses a resolve_app answer that is not what an honest
// guest sends: strings and lists beyond the protocol's bounds, control or
// format characters (a bidi override would show the user another name
// than the guest's), a found program that is not an absolute path, a kind
// the protocol does not have. The host judges what is left as data.
func checkResolved(raw json.RawMessage) error {
	var r protocol.ResolvedApp
	if err := json.Unmarshal(raw, &r); err != nil {
		return errdefs.Invalidf("%s: malformed result from the guest: %v", protocol.MethodResolveApp, err)
	}
	var problems []string
	text := func(field, s string, max int) {
		switch {
		case len(s) > max:
			problems = append(problems, fmt.Sprintf("%s longer than %d bytes", field, max))
		case strings.IndexFunc(s, func(r rune) bool { return unicode.IsControl(r) || unicode.Is(unicode.Cf, r) }) >= 0:
			problems = append(problems, field+" with control or format characters")
		}
	}
	for _, f := range []struct{ name, value string }{
		{"kind", r.Kind}, {"id", r.ID}, {"name", r.Name}, {"file", r.File}, {"executable", r.Executable}, {"mime", r.MIME},
	} {
		text(f.name, f.value, protocol.MaxResolvedString)
	}
	for _, f := range []struct {
		name string
		list []string
	}{{"args", r.Args}, {"categories", r.Categories}} {
		if len(f.list) > protocol.MaxResolvedList {
			problems = append(problems, fmt.Sprintf("%s of more than %d entries", f.name, protocol.MaxResolvedList))
			continue
		}
		for _, s := range f.list {
			text(f.name, s, protocol.MaxResolvedString)
		}
	}
	if r.Target != nil {
		text("shebang", r.Target.Shebang, protocol.MaxShebang)
	}
	switch r.Kind {
	case "", "desktop-entry", "program", "bundle":
	default:
		problems = append(problems, "an unknown kind")
	}
	if r.Found && !path.IsAbs(r.Executable) {
		problems = append(problems, "an executable that is not an absolute path")
	}
	if len(problems) > 0 {
		return errdefs.Invalidf("%s: the guest's answer has %s", protocol.MethodResolveApp, strings.Join(problems, ", "))
	}
	return nil
}
