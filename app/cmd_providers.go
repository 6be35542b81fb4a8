package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strings"

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
	if _, err := e.parseN(e.flags(), args, 0); err != nil {
		return err
	}
	c, err := e.client()
	if err != nil {
		return err
	}
	ps, err := c.Providers(e.ctx)
	if err != nil {
		return err
	}
	if e.json {
		if ps == nil {
			ps = []wire.Provider{}
		}
		return e.printJSON(wire.ProviderList{Providers: ps})
	}
	if len(ps) == 0 {
		e.out("No providers yet: add one with `hivecrew providers add --name NAME --base-url URL --api-key KEY`.")
		return nil
	}
	tw := table(e.stdout, "NAME", "ID", "BASE URL", "MODEL", "DEFAULT", "API KEY")
	for _, p := range ps {
		def, key := "", "missing"
		if p.IsDefault {
			def = "yes"
		}
		if p.HasAPIKey {
			key = "set"
		}
		row(tw, p.DisplayName, shortID(p.ID), p.BaseURL, or(p.DefaultModelID, "-"), def, key)
	}
	return tw.Flush()
}

// providerArg parses a command that takes one provider name or id.
func providerArg(e *env, args []string) (string, error) {
	pos, err := e.parseN(e.flags(), args, 1)
	if err != nil {
		return "", err
	}
	return pos[0], nil
}

func providersRm(e *env, args []string) error {
	name, err := providerArg(e, args)
	if err != nil {
		return err
	}
	c, err := e.client()
	if err != nil {
		return err
	}
	if err := c.RemoveProvider(e.ctx, name); err != nil {
		return err
	}
	e.out("Removed provider %s.", name)
	return nil
}

func providersTest(e *env, args []string) error {
	name, err := providerArg(e, args)
	if err != nil {
		return err
	}
	c, err := e.client()
	if err != nil {
		return err
	}
	r, err := c.TestProvider(e.ctx, name)
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
	name, err := providerArg(e, args)
	if err != nil {
		return err
	}
	c, err := e.client()
	if err != nil {
		return err
	}
	ms, err := c.Models(e.ctx, name)
	if err != nil {
		return err
	}
	if e.json {
		if ms == nil {
			ms = []wire.Model{}
		}
		return e.printJSON(wire.ModelList{Models: ms})
	}
	for _, m := range ms {
		if m.Name != "" && m.Name != m.ID {
			e.out("%s  (%s)", m.ID, m.Name)
		} else {
			e.out("%s", m.ID)
		}
	}
	return nil
}
