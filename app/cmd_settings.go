package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/hivecrew/hivecrew/core/client"
	"github.com/hivecrew/hivecrew/core/config"
)

// cmdSettings: hivecrew settings [show [KEY]...] | set KEY=VALUE... — the
// helper's settings, as GET and PATCH /api/v1/settings have them.
func cmdSettings(e *env, args []string) error {
	if len(args) == 0 {
		return settingsShow(e, nil)
	}
	return runTable(e, "settings", []command{
		{"show", "[KEY]...", "print the settings (or some of them), one a line", settingsShow},
		{"set", "KEY=VALUE...", "change settings: VALUE is JSON (3, true, [\"a\"]) or else text", settingsSet},
	}, args)
}

func settingsShow(e *env, args []string) error {
	keys, err := e.parse(e.flags(), args)
	if err != nil {
		return err
	}
	c, err := e.client()
	if err != nil {
		return err
	}
	s, err := c.Settings(e.ctx)
	if err != nil {
		return err
	}
	all, err := settingsMap(s)
	if err != nil {
		return err
	}
	if len(keys) == 0 {
		keys = slices.Sorted(maps.Keys(all))
	}
	for _, k := range keys {
		if _, ok := all[k]; !ok {
			return usageError{msg: fmt.Sprintf("no setting %q (known: %s)", k, strings.Join(slices.Sorted(maps.Keys(all)), ", "))}
		}
	}
	if e.json {
		out := make(map[string]json.RawMessage, len(keys))
		for _, k := range keys {
			out[k] = all[k]
		}
		return e.printJSON(out)
	}
	tw := table(e.stdout, "SETTING", "VALUE")
	for _, k := range keys {
		row(tw, k, string(all[k]))
	}
	return tw.Flush()
}

// settingsMap is the settings by their API names, each value as compact
// JSON.
func settingsMap(s config.Settings) (map[string]json.RawMessage, error) {
	b, err := json.Marshal(s)
	if err != nil {
		return nil, err
	}
	var out map[string]json.RawMessage
	return out, json.Unmarshal(b, &out)
}

func settingsSet(e *env, args []string) error {
	fs := e.flags()
	pos, err := e.parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return e.bad(fs, "settings set needs KEY=VALUE (e.g. completionCheckTries=3)")
	}
	patch := map[string]json.RawMessage{}
	for _, kv := range pos {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || strings.TrimSpace(k) == "" {
			return e.bad(fs, "%q is not KEY=VALUE", kv)
		}
		if _, dup := patch[k]; dup {
			return e.bad(fs, "%s is given twice", k)
		}
		patch[k] = settingValue(v)
	}
	return ask(e, e.flags(), nil, 0, func(c *client.Client, _ []string) (config.Settings, error) {
		return c.PatchSettings(e.ctx, patch)
	}, func(s config.Settings) error {
		all, err := settingsMap(s)
		if err != nil {
			return err
		}
		for _, k := range slices.Sorted(maps.Keys(patch)) {
			e.out("%s = %s", k, all[k])
		}
		return nil
	})
}

// settingValue is VALUE as JSON when it is JSON (a number, true, a list,
// a quoted string), else as a string.
func settingValue(v string) json.RawMessage {
	if json.Valid([]byte(v)) {
		var buf bytes.Buffer
		if json.Compact(&buf, []byte(v)) == nil {
			return buf.Bytes()
		}
	}
	b, _ := json.Marshal(v)
	return b
}
