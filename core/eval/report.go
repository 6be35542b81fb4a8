package eval

import (
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"net/url"
	"strings"
)

//go:embed report.html
var reportHTML string

var reportTmpl = template.Must(template.New("report").Funcs(template.FuncMap{
	"pct": func(f float64) string { return fmt.Sprintf("%.0f%%", 100*f) },
	"usd": func(f float64) string { return fmt.Sprintf("$%.4f", f) },
	"usdp": func(f *float64) string {
		if f == nil {
			return "—"
		}
		return fmt.Sprintf("$%.4f", *f)
	},
	"secs": func(f float64) string { return fmt.Sprintf("%.0f s", f) },
	"num":  func(f float64) string { return fmt.Sprintf("%.1f", f) },
	"time": func(r Record) string { return r.StartedAt.Format("2006-01-02 15:04 MST") },
	"join": strings.Join,
}).Parse(reportHTML))

// replay returns the link to a result's replay in the web UI ("" when
// the helper never took the task).
func (s Summary) Replay(r Result) string {
	if r.HelperTask == "" {
		return ""
	}
	return strings.TrimRight(s.Record.WebBase, "/") + "/tasks/" + url.PathEscape(r.HelperTask) + "/replay"
}

// WriteReport writes the HTML report of a run.
func WriteReport(w io.Writer, r Record) error {
	return reportTmpl.Execute(w, Summarize(r))
}
