package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/hivecrew/hivecrew/core/wire"
)

// cmdProvision: hivecrew provision show|set — what VMs are given after
// they boot and before their agent starts.
func cmdProvision(e *env, args []string) error {
	return runTable(e, "provision", []command{
		{"show", "", "show the provisioned variables (never a secret's value), files and setup commands", provisionShow},
		{"set", "FILE|-", "replace the provisioning with a JSON or YAML file (- reads stdin)", provisionSet},
	}, args)
}

func provisionShow(e *env, args []string) error {
	c, _, err := e.connect(e.flags(), args, 0)
	if err != nil {
		return err
	}
	p, err := c.Provisioning(e.ctx)
	if err != nil {
		return err
	}
	return e.printProvisioning(p)
}

func (e *env) printProvisioning(p wire.Provisioning) error {
	if e.json {
		return e.printJSON(p)
	}
	if len(p.EnvironmentVariables)+len(p.InjectedFiles)+len(p.SetupCommands) == 0 {
		e.out("Nothing is provisioned: hivecrew provision set FILE (see `hivecrew help provision set`)")
		return nil
	}
	scope := func(t string) string {
		if t == "" {
			return "all templates"
		}
		return "template " + t
	}
	if len(p.EnvironmentVariables) > 0 {
		e.out("Environment variables:")
		for _, v := range p.EnvironmentVariables {
			value := v.Value
			if v.Secret {
				value = "(secret)"
			}
			e.out("  %s=%s  [%s]", v.Key, value, scope(v.Template))
		}
	}
	if len(p.InjectedFiles) > 0 {
		e.out("Files:")
		for _, f := range p.InjectedFiles {
			e.out("  %s -> %s (%s)  [%s]", f.SourcePath, f.GuestPath, f.Mode, scope(f.Template))
		}
	}
	if len(p.SetupCommands) > 0 {
		e.out("Setup commands, in order:")
		for i, c := range p.SetupCommands {
			timeout := ""
			if c.TimeoutSeconds > 0 {
				timeout = fmt.Sprintf(", timeout %ds", c.TimeoutSeconds)
			}
			e.out("  %d. %s  [%s%s]", i+1, strings.ReplaceAll(c.Command, "\n", "\n     "), scope(c.Template), timeout)
		}
	}
	return nil
}

// maxProvisionFile bounds the file set reads.
const maxProvisionFile = 4 << 20

func provisionSet(e *env, args []string) error {
	fs := e.flags()
	rest, err := e.parseN(fs, args, 1)
	if err != nil {
		return err
	}
	var in io.Reader
	if rest[0] == "-" {
		in = e.stdin()
	} else {
		f, err := os.Open(rest[0])
		if err != nil {
			return e.bad(fs, "provision set: %v", err)
		}
		defer f.Close()
		in = f
	}
	data, err := io.ReadAll(io.LimitReader(in, maxProvisionFile+1))
	if err != nil {
		return fmt.Errorf("read %s: %w", rest[0], err)
	}
	if len(data) > maxProvisionFile {
		return e.bad(fs, "provision set: %s is over %d MiB", rest[0], maxProvisionFile>>20)
	}
	body, err := provisionJSON(data)
	if err != nil {
		return e.bad(fs, "provision set: %s: %v", rest[0], err)
	}
	c, err := e.client()
	if err != nil {
		return err
	}
	p, err := c.SetProvisioning(e.ctx, body)
	if err != nil {
		return err
	}
	if !e.json {
		e.out("Provisioning replaced: %d variable(s), %d file(s), %d setup command(s).", len(p.EnvironmentVariables), len(p.InjectedFiles), len(p.SetupCommands))
		return nil
	}
	return e.printJSON(p)
}

// provisionJSON turns a JSON or YAML document into the JSON the helper
// judges (types included: a wrong one is its 400, not guessed here).
func provisionJSON(data []byte) (json.RawMessage, error) {
	if json.Valid(data) {
		return data, nil
	}
	var v any
	if err := yaml.Unmarshal(data, &v); err != nil {
		return nil, fmt.Errorf("neither JSON nor YAML: %w", err)
	}
	if _, ok := v.(map[string]any); !ok {
		return nil, fmt.Errorf("not an object with environmentVariables, injectedFiles and setupCommands")
	}
	return json.Marshal(v)
}
