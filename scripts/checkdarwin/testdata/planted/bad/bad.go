// Package bad builds on linux, but its darwin file has a planted type error
// that only a darwin type-check sees.
package bad

// Count is implemented per OS.
func Count() int { return count() }
