// Package eval is the evaluation harness: suites of tasks with
// deterministic checkers (tests/eval/README.md describes the format), a
// runner that sends each task through the helper's API as any task and
// checks what it left, the run's results as a JSON file, and an HTML
// report that compares models.
//
// A suite is loaded leniently: a malformed task is an error of that task
// (Suite.Problems), and the rest of the suite runs.
package eval
