package sandbox

import (
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// overlay is a machine's copy-on-write clone of a template root filesystem:
// writes land in the machine's upper folder, the template stays untouched.
// The upper and overlayfs's work folder are in cow: the machine's disk
// when it has one (so a guest that fills its root filesystem fills its own
// disk), else the machine's folder.
type overlay struct {
	lower, cow string
	// merged is where the clone is mounted (set by the caller).
	merged string
	// shift, when set, shows the layers' ids shifted (see idmap_linux.go)
	// through idmapped clones of lower and cow mounted in views.
	shift *[2]idShift // uid, gid
	views string
}

func newOverlay(cow, template string) overlay {
	return overlay{lower: template, cow: cow}
}

func (o overlay) upper() string { return filepath.Join(o.cow, "upper") }

// mount mounts the overlay (the helper must be root); writes land in upper.
func (o overlay) mount() error {
	if fi, err := os.Stat(o.lower); err != nil || !fi.IsDir() {
		return fmt.Errorf("template root filesystem %s is not a folder", o.lower)
	}
	for _, d := range []string{o.upper(), filepath.Join(o.cow, "work"), o.merged} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	lower, cow := o.lower, o.cow
	if o.shift != nil {
		ns, err := userns(o.shift[0], o.shift[1])
		if err != nil {
			return err
		}
		defer ns.Close()
		lower, cow = filepath.Join(o.views, "lower"), filepath.Join(o.views, "cow")
		if err := idmapClone(o.lower, lower, ns); err != nil {
			return err
		}
		if err := idmapClone(o.cow, cow, ns); err != nil {
			return err
		}
	}
	opts := fmt.Sprintf("lowerdir=%s,upperdir=%s,workdir=%s", lower, filepath.Join(cow, "upper"), filepath.Join(cow, "work"))
	if err := unix.Mount("overlay", o.merged, "overlay", 0, opts); err != nil {
		return fmt.Errorf("mount the overlay clone of %s: %w", o.lower, err)
	}
	return nil
}
