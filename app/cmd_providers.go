package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/hivecrew/hivecrew/core/client"
	"github.com/hivecrew/hivecrew/core/wire"
)

// cmdProviders: hivecrew providers add|ls|rm|test|models
func cmdProviders(e *env, args []string) error {
	return runTable(e, "providers", []command{
		{"add", "--name N --base-url U --api-key K|- [--default] [--model M]", "add an LLM provider", providersAdd},
		{"ls", "", "list providers", providersLs},
		{"rm", "NAME|ID", "remove a provider", providersRm},
		{"test", "NAME|ID", "check a provider's endpoint and key", providersTest},
		{"models", "NAME|ID", "list a provider's models", providersModels},
	}, args)
}

func providersAdd(e *env, args []string) error {
	fs := e.flags()
	name := fs.String("name", "", "display `NAME`, used as --provider in run (required)")
	baseURL := fs.String("base-url", "", "OpenAI-compatible endpoint `URL`, e.g. https://api.openai.com/v1 (required)")
	apiKey := fs.String("api-key", "", "API `KEY` (\"-\" reads it from stdin; never printed)")
	isDefault := fs.Bool("default", false, "make it the default provider")
	model := fs.String("model", "", "default `MODEL` id")
	backend := fs.String("backend-mode", "", "`MODE`: chat_completions (default) or responses")
	reasoning := fs.String("reasoning", "", "default reasoning `EFFORT` of its tasks (none, minimal, low, medium, high or xhigh; a task's own wins)")
	if _, err := e.parseN(fs, args, 0); err != nil {
		return err
	}
	if strings.TrimSpace(*name) == "" || strings.TrimSpace(*baseURL) == "" {
		return e.bad(fs, "providers add needs --name and --base-url")
	}
	key := *apiKey
	if key == "-" {
		line, err := bufio.NewReader(os.Stdin).ReadString('\n')
		if err != nil && err != io.EOF {
			return fmt.Errorf("read the API key from stdin: %w", err)
		}
		key = strings.TrimSpace(line)
	}
	in := wire.ProviderInput{DisplayName: name, BaseURL: baseURL}
	if key != "" {
		in.APIKey = &key
	}
	if *isDefault {
		in.IsDefault = isDefault
	}
	if *model != "" {
		in.DefaultModelID = model
	}
	if *backend != "" {
		in.BackendMode = backend
	}
	if *reasoning != "" {
		in.DefaultReasoningEffort = reasoning
	}
	c, err := e.client()
	if err != nil {
		return err
	}
	p, err := c.AddProvider(e.ctx, in)
	if err != nil {
		return err
	}
	if e.json {
		return e.printJSON(p)
	}
	e.out("Added provider %s (%s).", p.DisplayName, p.ID)
	if !p.HasAPIKey {
		e.out("It has no API key (fine for a local endpoint; else set one in Settings).")
	}
	return nil
}

func providersLs(e *env, args []string) error {
	return ask(e, e.flags(), args, 0, func(c *client.Client, _ []string) (wire.ProviderList, error) {
		ps, err := c.Providers(e.ctx)
		return wire.ProviderList{Providers: nonNil(ps)}, err
	}, func(l wire.ProviderList) error {
		return printTable(e, l.Providers, "No providers yet: add one with `hivecrew providers add --name NAME --base-url URL --api-key KEY`.",
			[]string{"NAME", "ID", "BASE URL", "MODEL", "DEFAULT", "API KEY"}, func(p wire.Provider) []string {
				def, key := "", "missing"
				if p.IsDefault {
					def = "yes"
				}
				if p.HasAPIKey {
					key = "set"
				}
				return []string{p.DisplayName, shortID(p.ID), p.BaseURL, or(p.DefaultModelID, "-"), def, key}
			})
	})
}

func providersRm(e *env, args []string) error {
	return e.act(args, (*client.Client).RemoveProvider, "Removed provider %s.")
}

func providersTest(e *env, args []string) error {
	c, pos, err := e.connect(e.flags(), args, 1)
	if err != nil {
		return err
	}
	r, err := c.TestProvider(e.ctx, pos[0])
	if err != nil {
		return err
	}
	if e.json {
		if err := e.printJSON(r); err != nil {
			return err
		}
	} else if r.OK {
		e.out("OK (%.0f ms): %s", r.LatencyMs, r.Message)
	} else {
		e.out("FAILED (%.0f ms): %s", r.LatencyMs, r.Message)
	}
	if !r.OK {
		return exitCode(1)
	}
	return nil
}

func providersModels(e *env, args []string) error {
	return ask(e, e.flags(), args, 1, func(c *client.Client, pos []string) (wire.ModelList, error) {
		ms, err := c.Models(e.ctx, pos[0])
		return wire.ModelList{Models: nonNil(ms)}, err
	}, func(l wire.ModelList) error {
		for _, m := range l.Models {
			if m.Name != "" && m.Name != m.ID {
				e.out("%s  (%s)", m.ID, m.Name)
			} else {
				e.out("%s", m.ID)
			}
		}
		return nil
	})
}
