package main

import (
	"bytes"
	"fmt"
	"html/template"
	"math"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/hivecrew/hivecrew/core/vm"
)

// The HTML report: the table with each row's target and baseline, the
// capacity curve (agents against the p95 step overhead, and against the
// sandboxes' memory) and the soak's resources over tasks, as inline SVG
// drawn here (no script, no external file: it opens anywhere).

// reportRow is one metric as the report's table shows it.
type reportRow struct {
	Name, P50, P95, Target, Baseline, Speedup, Note, Machine string
	Pass, Skipped                                            bool
	Violation                                                string
}

// reportPage is the template's data.
type reportPage struct {
	When                      string
	Host                      string
	Total, Missed, SkippedRun int
	Duration                  string
	// Status, when set, says the report is not a whole run (interrupted,
	// or written while suites still run).
	Status string
	Charts []template.HTML
	Rows   []reportRow
}

var reportTmpl = template.Must(template.New("report").Parse(`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>Hivecrew benchmark — {{.When}}</title>
<style>
body { font: 15px/1.45 system-ui, sans-serif; margin: 2rem auto; max-width: 1200px; padding: 0 1rem; color: #1d2330; }
h1 { margin-bottom: 0.2rem; } .sub { color: #5b6475; margin-top: 0; }
.charts { display: grid; grid-template-columns: repeat(auto-fill, minmax(520px, 1fr)); gap: 1rem; margin: 1.5rem 0; }
figure { margin: 0; border: 1px solid #d8dde6; border-radius: 8px; padding: 0.5rem; }
figcaption { font-weight: 600; margin: 0.2rem 0.4rem; }
table { border-collapse: collapse; width: 100%; font-size: 0.88rem; }
th, td { border-top: 1px solid #d8dde6; padding: 0.35rem 0.5rem; text-align: left; vertical-align: top; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
tr.miss td, tr.miss th { background: #fdecec; } tr.skip td { color: #5b6475; }
.status { background: #fff4d6; border: 1px solid #e0c36a; border-radius: 6px; padding: 0.4rem 0.7rem; }
.pass { color: #17733a; font-weight: 600; } .fail { color: #b3261e; font-weight: 700; }
</style>
</head>
<body>
<h1>Hivecrew benchmark</h1>
<p class="sub">{{.When}} · {{.Host}} · {{.Total}} metrics, {{.Missed}} missed their target, {{.SkippedRun}} skipped here · {{.Duration}}</p>
{{if .Status}}<p class="status">{{.Status}}</p>{{end}}
<p class="sub">Machine: what other processes and the kernel did while each figure was measured (CPU in cores, the bench's own processes aside), and the share of the time tasks stalled on CPU or IO (/proc/pressure). A miss while other processes used ≥ 0.25 cores is the machine's; on a quiet machine it is the product's.</p>
{{if .Charts}}<div class="charts">{{range .Charts}}{{.}}{{end}}</div>{{end}}
<table>
<thead><tr><th scope="col">Metric</th><th scope="col">p50</th><th scope="col">p95</th><th scope="col">Target</th><th scope="col">Baseline p50</th><th scope="col">Speed-up</th><th scope="col">Pass</th><th scope="col">Note</th><th scope="col">Machine</th></tr></thead>
<tbody>
{{range .Rows}}<tr class="{{if .Skipped}}skip{{else if not .Pass}}miss{{end}}">
<th scope="row">{{.Name}}</th>
{{if .Skipped}}<td colspan="5">—</td><td>skipped</td><td>{{.Note}}</td><td>{{.Machine}}</td>
{{else}}<td class="num">{{.P50}}</td><td class="num">{{.P95}}</td><td class="num">{{.Target}}</td><td>{{.Baseline}}</td><td class="num">{{.Speedup}}</td>
<td>{{if .Pass}}<span class="pass">yes</span>{{else}}<span class="fail">no</span>{{end}}</td>
<td>{{if .Violation}}<strong>{{.Violation}}</strong>; {{end}}{{.Note}}</td><td>{{.Machine}}</td>{{end}}
</tr>
{{end}}</tbody>
</table>
</body>
</html>
`))

// writeHTML writes the report to path; status, when set, says it is not a
// whole run.
func writeHTML(path string, metrics []Metric, took time.Duration, status string) error {
	page := reportPage{
		Status:   status,
		When:     time.Now().Format("2006-01-02 15:04 MST"),
		Host:     fmt.Sprintf("%s/%s, %d cores, %.0f GB", runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), float64(vm.HostMemoryMB())/1024),
		Total:    len(metrics),
		Duration: took.Round(time.Second).String(),
		Charts:   charts(metrics),
	}
	for _, m := range metrics {
		if !m.Pass() {
			page.Missed++
		}
		if m.Skipped != "" {
			page.SkippedRun++
		}
		page.Rows = append(page.Rows, rowOf(m))
	}
	var b bytes.Buffer
	if err := reportTmpl.Execute(&b, page); err != nil {
		return err
	}
	return writeFileAtomic(path, b.Bytes())
}

// rowOf formats a metric as the Markdown table does.
func rowOf(m Metric) reportRow {
	r := reportRow{Name: m.Name, Note: m.Note, Pass: m.Pass(), Violation: m.Violation, Target: "—", Baseline: "—", Speedup: "—", Machine: m.Cond.String()}
	if m.Skipped != "" {
		r.Skipped, r.Note = true, m.Skipped
		return r
	}
	unit := or(m.Unit, "ms")
	r.P50, r.P95 = fmt.Sprintf("%.3f %s", ms(m.P50), unit), fmt.Sprintf("%.3f %s", ms(m.P95), unit)
	if m.unmeasured() {
		r.P50, r.P95 = "—", "—"
	}
	if m.Target > 0 {
		r.Target = fmt.Sprintf("%.3f %s", ms(m.Target), unit)
		if m.AtLeast {
			r.Target = "≥ " + r.Target
		} else {
			r.Target = "≤ " + r.Target
		}
		if m.TargetOnP95 {
			r.Target += " (p95)"
		}
	}
	if m.Baseline > 0 {
		r.Baseline = fmt.Sprintf("%.3f %s (%s)", ms(m.Baseline), unit, m.BaselineName)
		r.Speedup = fmt.Sprintf("%.1f×", float64(m.Baseline)/float64(m.P50))
	}
	return r
}

func or(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// charts draws the capacity curve (p95 step overhead and memory against
// agents) and one chart per soak resource.
func charts(metrics []Metric) []template.HTML {
	var out []template.HTML
	curve := func(chart, title, unit string, value func(Metric) float64) {
		var pts []Point
		target := 0.0
		for _, m := range metrics {
			if m.Chart == chart && m.Skipped == "" {
				pts = append(pts, Point{X: m.X, Y: value(m)})
				target = max(target, ms(m.Target))
			}
		}
		if len(pts) > 0 {
			out = append(out, lineChart(title, "concurrent agents", unit, []series{{color: blue, pts: pts}}, target, true))
		}
	}
	curve("capacity", "Capacity: p95 step overhead", "ms", func(m Metric) float64 { return ms(m.P95) })
	curve("capacity-memory", "Capacity: memory of all sandboxes", "MB", func(m Metric) float64 { return ms(m.P50) })
	if c := conditionsChart(metrics); c != "" {
		out = append(out, c)
	}
	for _, m := range metrics {
		if m.Chart == "soak" && len(m.Series) > 0 {
			out = append(out, lineChart(strings.TrimPrefix(m.Name, "soak: "), "tasks done", m.SeriesUnit, []series{{color: blue, pts: m.Series}}, 0, false))
		}
	}
	return out
}

// series is one line of a chart.
type series struct {
	name, color string
	pts         []Point
}

const blue = "#2f5fd0"

// conditionsChart draws, beside the capacity curve, what the machine did
// at each level: the shares of its window stalled on CPU and on IO, and
// the CPU other processes used and the hypervisor took (in percent of a
// core).
func conditionsChart(metrics []Metric) template.HTML {
	lines := []series{{name: "CPU pressure (some)", color: "#c77800"}, {name: "IO pressure (some)", color: "#7b3fbf"},
		{name: "IO pressure (full)", color: "#b3261e"}, {name: "other processes, % of a core", color: "#17733a"},
		{name: "steal (the hypervisor's), % of a core", color: "#6b6b6b"}}
	for _, m := range metrics {
		c := m.Cond
		if m.Chart != "capacity" || c.Window == 0 {
			continue
		}
		for i, y := range []float64{c.CPUSome, c.IOSome, c.IOFull, c.Others, c.Steal} {
			lines[i].pts = append(lines[i].pts, Point{X: m.X, Y: 100 * y})
		}
	}
	if len(lines[0].pts) == 0 {
		return ""
	}
	return lineChart("Capacity: the machine during each level's window", "concurrent agents", "%", lines, 0, true)
}

// lineChart draws each series' points (sorted by X) as an SVG line with
// its points labelled, a legend when there are several, and target as a
// dashed line when it is set. With logX the x axis is logarithmic (agent
// levels double).
func lineChart(title, xLabel, unit string, lines []series, target float64, logX bool) template.HTML {
	const w, h, left, right, top, bottom = 560.0, 300.0, 64.0, 20.0, 16.0, 44.0
	fx := func(x float64) float64 { return x }
	if logX {
		fx = func(x float64) float64 { return math.Log2(max(x, 1)) }
	}
	x0, x1, ymax := math.Inf(1), math.Inf(-1), target
	var xs []float64
	for i := range lines {
		lines[i].pts = slices.Clone(lines[i].pts)
		slices.SortFunc(lines[i].pts, func(a, b Point) int { return cmpFloat(a.X, b.X) })
		for _, p := range lines[i].pts {
			x0, x1, ymax = min(x0, fx(p.X)), max(x1, fx(p.X)), max(ymax, p.Y)
			if !slices.Contains(xs, p.X) {
				xs = append(xs, p.X)
			}
		}
	}
	if x1 == x0 {
		x0, x1 = x0-1, x1+1
	}
	ymax = niceCeil(ymax * 1.1)
	px := func(x float64) float64 { return left + (fx(x)-x0)/(x1-x0)*(w-left-right) }
	py := func(y float64) float64 { return top + (1-y/ymax)*(h-top-bottom) }
	var b strings.Builder
	esc := template.HTMLEscapeString
	fmt.Fprintf(&b, `<figure><figcaption>%s</figcaption><svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %.0f %.0f" role="img" aria-label="%s">`, esc(title), w, h, esc(title))
	fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#8a93a5"/>`, left, h-bottom, w-right, h-bottom)
	fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#8a93a5"/>`, left, top, left, h-bottom)
	for i := 0; i <= 4; i++ {
		y := ymax * float64(i) / 4
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#e6e9ef"/><text x="%.1f" y="%.1f" font-size="11" text-anchor="end" fill="#5b6475">%s</text>`,
			left, py(y), w-right, py(y), left-6, py(y)+4, esc(short(y)))
	}
	for _, x := range xs {
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" font-size="11" text-anchor="middle" fill="#5b6475">%s</text>`, px(x), h-bottom+16, esc(short(x)))
	}
	fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" font-size="12" text-anchor="middle" fill="#1d2330">%s</text>`, (left+w-right)/2, h-8, esc(xLabel))
	fmt.Fprintf(&b, `<text x="14" y="%.1f" font-size="12" text-anchor="middle" fill="#1d2330" transform="rotate(-90 14 %.1f)">%s</text>`, (top+h-bottom)/2, (top+h-bottom)/2, esc(unit))
	if target > 0 {
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#b3261e" stroke-dasharray="6 4"/><text x="%.1f" y="%.1f" font-size="11" text-anchor="end" fill="#b3261e">target %s %s</text>`,
			left, py(target), w-right, py(target), w-right, py(target)-4, esc(short(target)), esc(unit))
	}
	for i, l := range lines {
		var pts []string
		for _, p := range l.pts {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", px(p.X), py(p.Y)))
		}
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>`, l.color, strings.Join(pts, " "))
		for _, p := range l.pts {
			fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="3.5" fill="%s"><title>%s%s: %s %s</title></circle>`, px(p.X), py(p.Y), l.color, esc(prefix(l.name)), esc(short(p.X)), esc(short(p.Y)), esc(unit))
		}
		if len(lines) > 1 {
			fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="10" height="10" fill="%s"/><text x="%.1f" y="%.1f" font-size="11" fill="#1d2330">%s</text>`,
				left+12, top+4+float64(i)*15, l.color, left+26, top+13+float64(i)*15, esc(l.name))
		}
	}
	b.WriteString(`</svg></figure>`)
	return template.HTML(b.String()) // every text in it is escaped above
}

// prefix is a series' name as a point's tooltip starts with it.
func prefix(name string) string {
	if name == "" {
		return ""
	}
	return name + " at "
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// niceCeil rounds v up to 1, 2 or 5 times a power of ten.
func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}

// short formats a figure for an axis: no needless decimals.
func short(v float64) string {
	switch {
	case v == math.Trunc(v):
		return fmt.Sprintf("%.0f", v)
	case math.Abs(v) >= 10:
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.2g", v)
}
