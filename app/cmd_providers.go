package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/hivecrew/hivecrew/core/client"
	"github.com/hivecrew/hivecrew/core/config"
	"github.com/hivecrew/hivecrew/core/llm"
	"github.com/hivecrew/hivecrew/core/wire"
)

// cmdProviders: hivecrew providers add|ls|show|edit|rm|test|models
func cmdProviders(e *env, args []string) error {
	return runTable(e, "providers", []command{
		{"add", "--name N [--type openai-compatible|anthropic|openai] [--base-url U] [--api-key K|-] [--default] [--model M]", "add an LLM provider (--base-url is required for openai-compatible, the default type)", providersAdd},
		{"ls", "", "list providers", providersLs},
		{"show", "NAME|ID", "show a provider (never its key)", providersShow},
		{"edit", "NAME|ID [--name N] [--type T] [--base-url U] [--api-key K|-] [--model M] [--backend-mode M] [--reasoning E] [--default]", "change a provider", providersEdit},
		{"rm", "NAME|ID", "remove a provider", remover((*client.Client).RemoveProvider, "Removed provider %s.")},
		{"test", "NAME|ID", "check a provider's endpoint and key", providersTest},
		{"models", "NAME|ID", "list a provider's models", providersModels},
		{"worker", "[NAME|ID MODEL | --off]", "show or set the worker model: it serves subagents, task titles and history condensing (default: each task's own model)", providersWorker},
	}, args)
}

// workerText says the worker model of Settings.
func workerText(s config.Settings) string {
	if !s.HasWorker() {
		return "No worker model: each task's own model serves its subagents, its title and the condensing of its history."
	}
	return fmt.Sprintf("Worker model: %s of provider %s (subagents, task titles, history condensing).", s.WorkerModelID, s.WorkerProviderName)
}

// providersWorker shows the worker model, sets it to a provider's model,
// or turns it off.
func providersWorker(e *env, args []string) error {
	fs := e.flags()
	off := fs.Bool("off", false, "no worker model: each task's own model serves")
	pos, err := e.parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 && len(pos) != 2 || *off && len(pos) != 0 {
		return e.bad(fs, "%s takes NAME MODEL, --off, or nothing (to show the worker model)", e.cmd)
	}
	c, err := e.client()
	if err != nil {
		return err
	}
	var s config.Settings
	switch {
	case *off:
		s, err = c.PatchSettings(e.ctx, map[string]string{"workerProviderName": "", "workerModelId": ""})
	case len(pos) == 2:
		p, perr := c.Provider(e.ctx, pos[0])
		if perr != nil {
			return perr
		}
		s, err = c.PatchSettings(e.ctx, map[string]string{"workerProviderName": p.DisplayName, "workerModelId": pos[1]})
	default:
		s, err = c.Settings(e.ctx)
	}
	if err != nil {
		return err
	}
	if e.json {
		return e.printJSON(map[string]string{"workerProviderName": s.WorkerProviderName, "workerModelId": s.WorkerModelID})
	}
	e.out("%s", workerText(s))
	return nil
}

// typeHelp says the provider types, for the --type flag.
func typeHelp() string {
	return "provider `TYPE`: " + strings.Join(llm.Types, ", ") + " (" + llm.TypeOpenAICompatible + ", the default, is any endpoint of OpenAI's " +
		"chat-completions protocol: OpenRouter, Ollama, LM Studio, vLLM; " + llm.TypeAnthropic + " and " + llm.TypeOpenAI +
		" are the vendors' own APIs, at " + llm.AnthropicBaseURL + " and " + llm.OpenAIBaseURL + " unless --base-url says otherwise)"
}

// providerFlags are the flags of providers add and edit.
type providerFlags struct {
	name, typ, baseURL, apiKey, model, backend, reasoning *string
	isDefault                                             *bool
}

// newProviderFlags defines the flags on fs, worded for add or for edit.
func newProviderFlags(fs *flag.FlagSet, adding bool) providerFlags {
	nameHelp, baseURLHelp := "a new display `NAME`", "endpoint `URL` (\"\": the type's vendor default, for anthropic and openai)"
	if adding {
		nameHelp = "display `NAME`, used as --provider in run (required)"
		baseURLHelp = "endpoint `URL`, e.g. https://openrouter.ai/api/v1 or http://localhost:11434/v1 (required for openai-compatible)"
	}
	return providerFlags{
		name:      fs.String("name", "", nameHelp),
		typ:       fs.String("type", "", typeHelp()),
		baseURL:   fs.String("base-url", "", baseURLHelp),
		apiKey:    fs.String("api-key", "", "API `KEY` (\"-\" reads it from stdin; never printed)"),
		isDefault: fs.Bool("default", false, "make it the default provider"),
		model:     fs.String("model", "", "default `MODEL` id"),
		backend:   fs.String("backend-mode", "", "`MODE` of an openai-compatible or openai provider: chat_completions or responses (default: responses for openai, else chat_completions)"),
		reasoning: fs.String("reasoning", "", "default reasoning `EFFORT` of its tasks (none, minimal, low, medium, high or xhigh; a task's own wins)"),
	}
}

// input returns the fields given on the command line.
func (pf providerFlags) input(fs *flag.FlagSet) (wire.ProviderInput, error) {
	var in wire.ProviderInput
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	for _, f := range []struct {
		flag  string
		dst   **string
		value *string
	}{
		{"name", &in.DisplayName, pf.name}, {"type", &in.Type, pf.typ}, {"base-url", &in.BaseURL, pf.baseURL},
		{"model", &in.DefaultModelID, pf.model}, {"backend-mode", &in.BackendMode, pf.backend}, {"reasoning", &in.DefaultReasoningEffort, pf.reasoning},
	} {
		if set[f.flag] {
			*f.dst = f.value
		}
	}
	if *pf.isDefault {
		in.IsDefault = pf.isDefault
	}
	if set["api-key"] {
		key := *pf.apiKey
		if key == "-" {
			line, err := bufio.NewReader(os.Stdin).ReadString('\n')
			if err != nil && err != io.EOF {
				return in, fmt.Errorf("read the API key from stdin: %w", err)
			}
			key = strings.TrimSpace(line)
		}
		in.APIKey = &key
	}
	return in, nil
}

func providersAdd(e *env, args []string) error {
	fs := e.flags()
	pf := newProviderFlags(fs, true)
	if _, err := e.parseN(fs, args, 0); err != nil {
		return err
	}
	typ, err := llm.NormalizeType(*pf.typ)
	if err != nil {
		return e.bad(fs, "--type %q: want one of %s", *pf.typ, strings.Join(llm.Types, ", "))
	}
	if strings.TrimSpace(*pf.name) == "" {
		return e.bad(fs, "providers add needs --name")
	}
	if strings.TrimSpace(*pf.baseURL) == "" && llm.DefaultBaseURL(typ) == "" {
		return e.bad(fs, "providers add needs --base-url for an %s provider (--type %s or %s have their vendor's)", typ, llm.TypeAnthropic, llm.TypeOpenAI)
	}
	in, err := pf.input(fs)
	if err != nil {
		return err
	}
	if in.APIKey != nil && *in.APIKey == "" {
		in.APIKey = nil
	}
	return send(e, func(c *client.Client) (wire.Provider, error) {
		return c.AddProvider(e.ctx, in)
	}, func(p wire.Provider) {
		e.out("Added provider %s (%s, %s at %s).", p.DisplayName, p.ID, p.Type, p.BaseURL)
		if !p.HasAPIKey {
			e.out("It has no API key (fine for a local endpoint; else set one with `hivecrew providers edit %s --api-key -`).", p.DisplayName)
		}
	})
}

func providersEdit(e *env, args []string) error {
	fs := e.flags()
	pf := newProviderFlags(fs, false)
	pos, err := e.parseN(fs, args, 1)
	if err != nil {
		return err
	}
	in, err := pf.input(fs)
	if err != nil {
		return err
	}
	if in == (wire.ProviderInput{}) {
		return e.bad(fs, "providers edit needs at least one of --name, --type, --base-url, --api-key, --model, --backend-mode, --reasoning, --default")
	}
	return send(e, func(c *client.Client) (wire.Provider, error) {
		return c.UpdateProvider(e.ctx, pos[0], in)
	}, func(p wire.Provider) {
		e.out("Saved provider %s (%s at %s).", p.DisplayName, p.Type, p.BaseURL)
	})
}

func providersLs(e *env, args []string) error {
	return listing[wire.ProviderList, wire.Provider]{
		get: func(c *client.Client, ctx context.Context) (wire.ProviderList, error) {
			ps, err := c.Providers(ctx)
			return wire.ProviderList{Providers: nonNil(ps)}, err
		},
		items:  func(l wire.ProviderList) []wire.Provider { return l.Providers },
		none:   "No providers yet: add one with `hivecrew providers add --name NAME --base-url URL --api-key KEY` (or --type anthropic|openai without --base-url).",
		header: []string{"NAME", "ID", "TYPE", "BASE URL", "MODEL", "DEFAULT", "API KEY"},
		cells: func(p wire.Provider) []string {
			def := ""
			if p.IsDefault {
				def = "yes"
			}
			return []string{p.DisplayName, shortID(p.ID), p.Type, p.BaseURL, or(p.DefaultModelID, "-"), def, keyState(p)}
		},
	}.run(e, args)
}

// keyState says whether a provider has its key.
func keyState(p wire.Provider) string {
	if p.HasAPIKey {
		return "set"
	}
	return "missing"
}

func providersShow(e *env, args []string) error {
	return ask(e, e.flags(), args, 1, func(c *client.Client, pos []string) (wire.Provider, error) {
		return c.Provider(e.ctx, pos[0])
	}, func(p wire.Provider) error {
		api := p.BackendMode
		if p.Type == llm.TypeAnthropic {
			api = "messages"
		}
		def := "no"
		if p.IsDefault {
			def = "yes"
		}
		timeout := ""
		if p.TimeoutInterval > 0 {
			timeout = fmt.Sprintf("%.0f s", p.TimeoutInterval)
		}
		e.out("Provider %q (%s)", p.DisplayName, p.ID)
		fields(e.stdout, field{"Type", p.Type}, field{"Base URL", p.BaseURL}, field{"API", api}, field{"API key", keyState(p)},
			field{"Model", or(p.DefaultModelID, "-")}, field{"Reasoning", p.DefaultReasoningEffort}, field{"Organization", p.OrganizationID},
			field{"Timeout", timeout}, field{"Default", def})
		return nil
	})
}

func providersTest(e *env, args []string) error {
	return probe(e, args, (*client.Client).TestProvider, func(_ string, r wire.ProviderTest) {
		if r.OK {
			e.out("OK (%.0f ms): %s", r.LatencyMs, r.Message)
		} else {
			e.out("FAILED (%.0f ms): %s", r.LatencyMs, r.Message)
		}
	}, func(_ string, r wire.ProviderTest) error {
		if !r.OK {
			return exitCode(1)
		}
		return nil
	})
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
