package documents

import (
	"bytes"
	"io"
	"strings"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// HTMLText returns the text of an HTML document as a reader sees it: the
// text of its body in order, a line for each block, list items with a
// dash, a table's rows as comma-separated cells (quoted as CSV quotes
// them), links as "text <url>" when they go elsewhere; scripts, styles
// and what a browser does not show are left out. It reads with a
// tokenizer, without building a tree, so that nesting costs nothing, and
// stops at limit bytes of text (cut says so).
func HTMLText(r io.Reader, limit int) (text string, cut bool) {
	z := html.NewTokenizer(r)
	z.SetMaxBuf(4 << 20)
	var out, cell bytes.Buffer
	var row []string
	skip := 0 // depth inside script, style, head ...
	inCell := false
	var href string
	newline := func() {
		if b := out.Bytes(); len(b) > 0 && b[len(b)-1] != '\n' {
			out.WriteByte('\n')
		}
	}
	write := func(s string) {
		if inCell {
			cell.WriteString(s)
			return
		}
		if b := out.Bytes(); len(b) > 0 && b[len(b)-1] != '\n' && b[len(b)-1] != ' ' && !strings.HasPrefix(s, " ") {
			out.WriteByte(' ')
		}
		out.WriteString(s)
	}
	endCell := func() {
		if inCell {
			row = append(row, strings.Join(strings.Fields(cell.String()), " "))
			cell.Reset()
			inCell = false
		}
	}
	endRow := func() {
		endCell()
		if len(row) > 0 {
			newline()
			out.WriteString(csvLine(row))
			out.WriteByte('\n')
			row = nil
		}
	}
	for out.Len()+cell.Len() < limit {
		tt := z.Next()
		switch tt {
		case html.ErrorToken:
			endRow()
			return strings.TrimSpace(collapseBlank(out.String())), false
		case html.TextToken:
			if skip > 0 {
				continue
			}
			if s := strings.Join(strings.Fields(string(z.Text())), " "); s != "" {
				write(s)
			}
		case html.StartTagToken, html.SelfClosingTagToken, html.EndTagToken:
			name, hasAttr := z.TagName()
			a := atom.Lookup(name)
			if hidden[a] {
				if tt == html.StartTagToken {
					skip++
				} else if tt == html.EndTagToken && skip > 0 {
					skip--
				}
				continue
			}
			if skip > 0 {
				continue
			}
			start := tt != html.EndTagToken
			switch a {
			case atom.Tr:
				endRow()
			case atom.Td, atom.Th:
				endCell()
				inCell = start
			case atom.Table:
				endRow()
				newline()
			case atom.Br:
				if inCell {
					cell.WriteByte(' ')
				} else {
					out.WriteByte('\n')
				}
			case atom.Li:
				if start {
					newline()
					out.WriteString("- ")
				}
			case atom.A:
				if start {
					href = ""
					for hasAttr {
						var k, v []byte
						k, v, hasAttr = z.TagAttr()
						if string(k) == "href" {
							href = string(v)
						}
					}
				} else if href != "" && (strings.HasPrefix(href, "http:") || strings.HasPrefix(href, "https:") || strings.HasPrefix(href, "mailto:")) {
					write("<" + href + ">")
					href = ""
				}
			case atom.Img:
				for hasAttr {
					var k, v []byte
					k, v, hasAttr = z.TagAttr()
					if string(k) == "alt" && len(bytes.TrimSpace(v)) > 0 {
						write("[image: " + strings.Join(strings.Fields(string(v)), " ") + "]")
					}
				}
			default:
				if block[a] && !inCell {
					newline()
					if start && (a == atom.H1 || a == atom.H2 || a == atom.H3 || a == atom.P || a == atom.Section || a == atom.Article) {
						out.WriteByte('\n')
					}
				}
			}
		}
	}
	return strings.TrimSpace(collapseBlank(cutRunes(out.String(), limit))), true
}

// hidden are the elements whose content a reader does not see.
var hidden = map[atom.Atom]bool{
	atom.Script: true, atom.Style: true, atom.Head: true, atom.Template: true, atom.Noscript: true,
	atom.Svg: true, atom.Math: true, atom.Iframe: true, atom.Object: true, atom.Select: true,
}

// block are the elements that start a line.
var block = map[atom.Atom]bool{
	atom.P: true, atom.Div: true, atom.H1: true, atom.H2: true, atom.H3: true, atom.H4: true, atom.H5: true, atom.H6: true,
	atom.Ul: true, atom.Ol: true, atom.Dl: true, atom.Dt: true, atom.Dd: true, atom.Blockquote: true, atom.Pre: true,
	atom.Section: true, atom.Article: true, atom.Header: true, atom.Footer: true, atom.Nav: true, atom.Aside: true,
	atom.Main: true, atom.Figure: true, atom.Figcaption: true, atom.Hr: true, atom.Form: true, atom.Fieldset: true,
	atom.Caption: true, atom.Address: true, atom.Center: true, atom.Body: true,
}

// csvLine is cells as a line of CSV: a cell with a comma, a quote or a
// line break is quoted, its quotes doubled.
func csvLine(cells []string) string {
	q := make([]string, len(cells))
	for i, c := range cells {
		if strings.ContainsAny(c, ",\"\n\r") {
			c = `"` + strings.ReplaceAll(c, `"`, `""`) + `"`
		}
		q[i] = c
	}
	return strings.Join(q, ",")
}

// collapseBlank leaves at most one blank line between lines, and none
// with only spaces.
func collapseBlank(s string) string {
	lines := strings.Split(s, "\n")
	out := lines[:0]
	blank := 0
	for _, l := range lines {
		l = strings.TrimRight(l, " ")
		if l == "" {
			if blank++; blank > 1 {
				continue
			}
		} else {
			blank = 0
		}
		out = append(out, l)
	}
	return strings.Join(out, "\n")
}
