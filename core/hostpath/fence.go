//go:build unix

package hostpath

import (
	"errors"
	"io/fs"
	"slices"

	"github.com/hivecrew/hivecrew/core/errdefs"
)

// Folder is a folder to fence off, named for messages.
type Folder struct {
	// Name says what it is: "the helper's data folder".
	Name string
	Path string
}

// Fence is folders a path may neither be, be inside, nor hold: the
// helper's data folder, a VM's shared folder. They are compared by device
// and inode, so no link, doubled slash or other spelling of a path gets
// past it.
type Fence struct {
	folders []fenced
}

type fenced struct {
	Folder
	chain []ID
}

// NewFence fences off folders as they are now; one that does not exist is
// left out (nothing can be in it).
func NewFence(folders ...Folder) (Fence, error) { return Fence{}.With(folders...) }

// With is f with folders fenced off too.
func (f Fence) With(folders ...Folder) (Fence, error) {
	out := Fence{folders: slices.Clone(f.folders)}
	for _, d := range folders {
		chain, err := Chain(d.Path)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return Fence{}, err
		}
		out.folders = append(out.folders, fenced{d, chain})
	}
	return out, nil
}

// Check refuses a folder, given by its chain (Chain, Dir.Chain: the folder
// first), that is one of the fence's folders, inside one or holds one; the
// error, of class invalid, begins with what.
func (f Fence) Check(what string, chain []ID) error {
	for _, d := range f.folders {
		switch i := slices.Index(chain, d.chain[0]); {
		case i == 0:
			return errdefs.Invalidf("%s is %s (%s): it cannot be used", what, d.Name, d.Path)
		case i > 0:
			return errdefs.Invalidf("%s is inside %s (%s): it cannot be used", what, d.Name, d.Path)
		case slices.Contains(d.chain[1:], chain[0]):
			return errdefs.Invalidf("%s holds %s (%s): it cannot be used", what, d.Name, d.Path)
		}
	}
	return nil
}

// CheckWithin refuses a folder yet to be made, given by the chain of its
// deepest part that exists (CheckDir), when that is one of the fence's
// folders or inside one.
func (f Fence) CheckWithin(what string, chain []ID) error {
	for _, d := range f.folders {
		if slices.Contains(chain, d.chain[0]) {
			return errdefs.Invalidf("%s is inside %s (%s): it cannot be used", what, d.Name, d.Path)
		}
	}
	return nil
}

// Holds says whether id is one of the fence's folders, and which: a walk
// down a folder meets them this way wherever they are mounted.
func (f Fence) Holds(id ID) (Folder, bool) {
	for _, d := range f.folders {
		if d.chain[0] == id {
			return d.Folder, true
		}
	}
	return Folder{}, false
}
