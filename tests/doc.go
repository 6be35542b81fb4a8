// Package tests holds Hivecrew's end-to-end tests (real helper processes, real
// sandboxes, real X servers), its guard tests on the code base itself, the
// benchmark behind `make bench` and, under browser/, the browser tests.
package tests
