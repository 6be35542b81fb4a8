// Package good builds for every OS; its darwin file uses cgo correctly.
package good

// Name is implemented per OS.
func Name() string { return name() }
