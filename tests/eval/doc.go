// Package eval tests the evaluation harness (core/eval) end to end: the
// starter suite's oracles pass and its null runs fail in real sandboxes,
// a broken suite gets an error per task and the rest runs, the report
// renders in headless Chromium, and the starter suite's PDFs are what
// pdf_test.go writes. The suites live in suites/; README.md describes
// their format.
package eval
