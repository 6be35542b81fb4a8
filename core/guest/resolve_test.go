package guest

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/creachadair/jrpc2"
	"github.com/creachadair/jrpc2/handler"

	"github.com/hivecrew/hivecrew/core/errdefs"
	"github.com/hivecrew/hivecrew/guestagent/protocol"
)

// TestResolveAppAnswersAreChecked: what a guest says an app runs reaches
// the host's judgement only within the protocol's bounds, without control
// or format characters, and naming the program by its absolute path;
// anything else is refused as invalid, and the refusal quotes none of it.
func TestResolveAppAnswersAreChecked(t *testing.T) {
	good := protocol.ResolvedApp{Found: true, Kind: "desktop-entry", ID: "debian-xterm", Name: "XTerm", Executable: "/usr/bin/xterm",
		Categories: []string{"System", "TerminalEmulator"}, Target: &protocol.FileFacts{Shebang: "#!/bin/sh"}}
	with := func(change func(*protocol.ResolvedApp)) protocol.ResolvedApp {
		r := good
		r.Target = &protocol.FileFacts{Shebang: good.Target.Shebang}
		change(&r)
		return r
	}
	for name, c := range map[string]struct {
		answer protocol.ResolvedApp
		ok     bool
	}{
		"honest":              {good, true},
		"nothing found":       {protocol.ResolvedApp{MIME: "text/x-shellscript"}, true},
		"escape in the name":  {with(func(r *protocol.ResolvedApp) { r.Name = "Notes\x1b[2K" }), false},
		"bidi override":       {with(func(r *protocol.ResolvedApp) { r.ID = "evil\u202etxt.sh" }), false},
		"relative program":    {with(func(r *protocol.ResolvedApp) { r.Executable = "xterm" }), false},
		"no program":          {with(func(r *protocol.ResolvedApp) { r.Executable = "" }), false},
		"a long path":         {with(func(r *protocol.ResolvedApp) { r.Executable = "/" + strings.Repeat("a", protocol.MaxResolvedString) }), false},
		"too many arguments":  {with(func(r *protocol.ResolvedApp) { r.Args = make([]string, protocol.MaxResolvedList+1) }), false},
		"a long #! line":      {with(func(r *protocol.ResolvedApp) { r.Target.Shebang = "#!/" + strings.Repeat("b", protocol.MaxShebang) }), false},
		"an unknown kind":     {with(func(r *protocol.ResolvedApp) { r.Kind = "magic" }), false},
		"newline in category": {with(func(r *protocol.ResolvedApp) { r.Categories = []string{"Office\nTerminalEmulator"} }), false},
	} {
		t.Run(name, func(t *testing.T) {
			methods := handler.Map{
				protocol.MethodHello: func(context.Context, *jrpc2.Request) (any, error) {
					return protocol.HelloResult{ProtocolVersion: protocol.Version, OS: "linux", Screen: protocol.Screen{Width: 800, Height: 600, Scale: 1},
						Capabilities: []string{protocol.CapResolveApp}}, nil
				},
				protocol.MethodResolveApp: func(context.Context, *jrpc2.Request) (any, error) { return c.answer, nil },
			}
			cl, err := Connect(context.Background(), Config{Dial: liar(t, methods), Key: FixedKey(testKey, false), Log: quiet()})
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			var got protocol.ResolvedApp
			err = cl.Call(context.Background(), protocol.MethodResolveApp, protocol.ResolveAppParams{App: "x"}, &got)
			switch {
			case c.ok && (err != nil || got.Executable != c.answer.Executable || !slices.Equal(got.Categories, c.answer.Categories)):
				t.Fatalf("an honest answer came back as %+v, %v", got, err)
			case !c.ok && !errors.Is(err, errdefs.ErrInvalid):
				t.Fatalf("answer accepted: %+v, %v", got, err)
			case !c.ok && (strings.ContainsAny(err.Error(), "\x1b\n\u202e") || len(err.Error()) > 300):
				t.Fatalf("the refusal quotes the guest: %q", err)
			}
		})
	}
}
