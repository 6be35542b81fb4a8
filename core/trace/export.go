package trace

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/hivecrew/hivecrew/core/redact"
)

// Info describes the task a session belongs to, for exports.
type Info struct {
	TaskID      string    `json:"taskId"`
	Title       string    `json:"title"`
	Description string    `json:"description"`
	Status      string    `json:"status"`
	Summary     string    `json:"resultSummary,omitempty"`
	Model       string    `json:"model,omitempty"`
	Started     time.Time `json:"startedAt"`
	Ended       time.Time `json:"completedAt,omitempty"`
}

// tokens totals the tokens of a session's events.
func (s Session) tokens() (prompt, completion int) {
	for _, e := range s.Events {
		prompt += e.PromptTokens
		completion += e.CompletionTokens
	}
	return
}

// ExportJSON writes the session as one JSON document: the task, the events
// (screenshots as paths in the session folder) and the conversation.
func ExportJSON(w io.Writer, info Info, s Session) error {
	prompt, completion := s.tokens()
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(map[string]any{
		"task":         info,
		"tokenUsage":   map[string]int{"prompt": prompt, "completion": completion, "total": prompt + completion},
		"events":       s.Events,
		"conversation": s.Conversation,
	})
}

// ExportMarkdown writes the session as a Markdown report; screenshots are
// inlined. What a guest or a model wrote is shown as the text it is:
// control characters as escapes, and nothing a Markdown viewer would act
// on (a link, an image, raw HTML, a heading) is left live; a detail's code
// block has a fence no line of it can close.
func ExportMarkdown(w io.Writer, info Info, s Session) error {
	prompt, completion := s.tokens()
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n\n", mdInline(info.Title))
	fmt.Fprintf(&b, "| | |\n|---|---|\n| Status | %s |\n| Model | %s |\n| Started | %s |\n| Tokens | %d prompt, %d completion |\n\n",
		mdInline(info.Status), mdInline(info.Model), info.Started.Format(time.RFC3339), prompt, completion)
	fmt.Fprintf(&b, "## Task\n\n%s\n\n", mdText(info.Description))
	if info.Summary != "" {
		fmt.Fprintf(&b, "## Result\n\n%s\n\n", mdText(info.Summary))
	}
	b.WriteString("## Steps\n\n")
	for _, e := range s.Events {
		fmt.Fprintf(&b, "%d. `%s` **%s** %s", e.Seq, e.Time.Format("15:04:05"), mdInline(e.Type), mdInline(e.Summary))
		b.WriteString("\n")
		// Inlined: an export is one file, and a link to the session
		// folder's screenshots would lead nowhere beside it.
		if url := s.screenshotURL(e); url != "" {
			fmt.Fprintf(&b, "\n   ![The screen at event %d](%s)\n\n", e.Seq, url)
		}
		if e.Details != "" {
			d := redact.PrintableText(e.Details)
			fence := strings.Repeat("`", max(3, longestRun(d, '`')+1))
			fmt.Fprintf(&b, "\n   %s\n   %s\n   %s\n", fence, strings.ReplaceAll(d, "\n", "\n   "), fence)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// mdSpecial escapes what Markdown (with GitHub's tables and strikethrough)
// or HTML would act on in running text: a backslash escape makes each of
// these characters stand for itself.
var mdSpecial = strings.NewReplacer(
	`\`, `\\`, "`", "\\`", "*", `\*`, "_", `\_`, "[", `\[`, "]", `\]`, "<", `\<`, ">", `\>`,
	"&", `\&`, "|", `\|`, "~", `\~`,
)

// mdInline is text for within a line of Markdown: printable, on one line,
// escaped.
func mdInline(s string) string {
	return mdSpecial.Replace(strings.ReplaceAll(redact.PrintableText(s), "\n", " "))
}

// mdText is text of several lines for a paragraph of Markdown: each line
// escaped, and one that would start a block (a heading, a list, a quote,
// a rule) starting with a backslash.
func mdText(s string) string {
	lines := strings.Split(redact.PrintableText(s), "\n")
	for i, l := range lines {
		l = mdSpecial.Replace(strings.TrimLeft(l, " "))
		digits := len(l) - len(strings.TrimLeft(l, "0123456789"))
		switch {
		case l != "" && strings.ContainsRune("#-+=", rune(l[0])):
			l = `\` + l
		case digits > 0 && digits < len(l) && (l[digits] == '.' || l[digits] == ')'):
			l = l[:digits] + `\` + l[digits:]
		}
		lines[i] = l
	}
	return strings.Join(lines, "\n")
}

// longestRun is the longest run of c in s.
func longestRun(s string, c byte) int {
	longest, n := 0, 0
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			n++
			longest = max(longest, n)
		} else {
			n = 0
		}
	}
	return longest
}

// screenshotURL is an event's screenshot as a data URL, "" when it has
// none (or it is gone). The trace's path is kept inside the session folder.
func (s Session) screenshotURL(e Event) string {
	if e.Screenshot == "" {
		return ""
	}
	p := filepath.Join(s.Dir, filepath.Clean(string(filepath.Separator)+e.Screenshot))
	data, err := os.ReadFile(p)
	if err != nil {
		return ""
	}
	mime := "image/png"
	if strings.HasSuffix(p, ".jpg") || strings.HasSuffix(p, ".jpeg") {
		mime = "image/jpeg"
	}
	return "data:" + mime + ";base64," + base64.StdEncoding.EncodeToString(data)
}

// step is one event as the HTML replay shows it.
type step struct {
	Event
	Image template.URL
}

// ExportHTML writes a self-contained HTML replay: the screenshots inlined,
// a timeline slider synced to the screenshots and the step list, and the
// token totals. It needs nothing beside itself to open. Its text is
// HTML-escaped, control characters and bidirectional overrides shown as
// escapes.
func ExportHTML(w io.Writer, info Info, s Session) error {
	prompt, completion := s.tokens()
	info.Title, info.Description, info.Summary, info.Model = redact.PrintableText(info.Title), redact.PrintableText(info.Description),
		redact.PrintableText(info.Summary), redact.PrintableText(info.Model)
	steps := make([]step, 0, len(s.Events))
	for _, e := range s.Events {
		e.Summary, e.Details = redact.PrintableText(e.Summary), redact.PrintableText(e.Details)
		st := step{Event: e}
		if url := s.screenshotURL(e); url != "" {
			st.Image = template.URL(url)
		}
		steps = append(steps, st)
	}
	return replayTemplate.Execute(w, map[string]any{
		"Info": info, "Steps": steps, "Prompt": prompt, "Completion": completion, "Total": prompt + completion,
	})
}

var replayTemplate = template.Must(template.New("replay").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Info.Title}} · Hivecrew replay</title>
<style>
:root{color-scheme:light dark;--bg:#fff;--fg:#1d1d1f;--muted:#6e6e73;--line:#d2d2d7;--accent:#0a66d8}
@media(prefers-color-scheme:dark){:root{--bg:#161618;--fg:#f5f5f7;--muted:#a1a1a6;--line:#3a3a3c;--accent:#4c9aff}}
body{margin:0;font:14px/1.45 -apple-system,system-ui,sans-serif;background:var(--bg);color:var(--fg)}
header{padding:16px 20px;border-bottom:1px solid var(--line)}h1{font-size:18px;margin:0 0 4px}
.meta{color:var(--muted)}main{display:grid;grid-template-columns:minmax(0,2fr) minmax(260px,1fr);gap:16px;padding:16px 20px}
@media(max-width:800px){main{grid-template-columns:1fr}}
#shot{width:100%;border:1px solid var(--line);border-radius:6px;background:#000;min-height:120px}
#scrub{width:100%;margin:10px 0}ol{list-style:none;margin:0;padding:0;max-height:70vh;overflow:auto}
li{padding:6px 8px;border-radius:6px;cursor:pointer}li.on{background:color-mix(in srgb,var(--accent) 18%,transparent)}
.t{color:var(--muted);font-variant-numeric:tabular-nums}.k{font-weight:600}pre{white-space:pre-wrap;margin:4px 0 0;color:var(--muted)}
</style></head><body>
<header><h1>{{.Info.Title}}</h1>
<div class="meta">{{.Info.Status}} · {{.Info.Model}} · {{.Total}} tokens ({{.Prompt}} prompt, {{.Completion}} completion)</div>
{{if .Info.Summary}}<p>{{.Info.Summary}}</p>{{end}}</header>
<main><section><img id="shot" alt="Screenshot of the selected step">
<input id="scrub" type="range" min="0" max="{{len .Steps}}" value="0" aria-label="Timeline">
<div id="caption" class="meta"></div></section>
<ol id="steps">{{range $i, $s := .Steps}}<li data-i="{{$i}}" data-img="{{$s.Image}}" tabindex="0"><span class="t">{{$s.Time.Format "15:04:05"}}</span> <span class="k">{{$s.Type}}</span> {{$s.Summary}}{{if $s.Details}}<pre>{{$s.Details}}</pre>{{end}}</li>{{end}}</ol>
</main>
<script>
(function(){var items=[].slice.call(document.querySelectorAll('#steps li')),shot=document.getElementById('shot'),scrub=document.getElementById('scrub'),cap=document.getElementById('caption');
scrub.max=Math.max(items.length-1,0);
function show(i){items.forEach(function(li,j){li.classList.toggle('on',j===i)});var img='',j;for(j=i;j>=0&&!img;j--){img=items[j].dataset.img}
for(j=i;j<items.length&&!img;j++){img=items[j].dataset.img}shot.hidden=!img;if(img){shot.src=img}cap.textContent=items[i]?('Step '+(i+1)+' of '+items.length):'';scrub.value=i;if(items[i])items[i].scrollIntoView({block:'nearest'})}
scrub.addEventListener('input',function(){show(+scrub.value)});
items.forEach(function(li,i){li.addEventListener('click',function(){show(i)});li.addEventListener('keydown',function(e){if(e.key==='Enter')show(i)})});
document.addEventListener('keydown',function(e){if(e.key==='ArrowRight')show(Math.min(+scrub.value+1,items.length-1));if(e.key==='ArrowLeft')show(Math.max(+scrub.value-1,0))});
show(0)})();
</script></body></html>
`))
