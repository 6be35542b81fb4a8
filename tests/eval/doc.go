// Package eval tests the evaluation harness (core/eval) end to end: the
// starter suite's oracles pass and its null runs fail in real sandboxes,
// a broken suite gets an error per task and the rest runs, and the
// report renders in headless Chromium. The suites live in suites/;
// README.md describes their format.
package eval
