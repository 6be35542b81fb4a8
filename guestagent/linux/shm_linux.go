package linux

import (
	"fmt"
	"log/slog"
	"sync"

	"github.com/jezek/xgb"
	"github.com/jezek/xgb/damage"
	"github.com/jezek/xgb/shm"
	"github.com/jezek/xgb/xfixes"
	"github.com/jezek/xgb/xproto"
	"golang.org/x/sys/unix"

	"github.com/hivecrew/hivecrew/guestagent/frame"
)

// shmScreen reads the screen through a System V shared-memory segment
// (the MIT-SHM extension): the X server writes the pixels into memory the
// agent maps, instead of sending 4 MB through the socket for every
// screenshot. It needs the X server on the same machine and IPC namespace,
// which the guest's own display always is.
//
// Where the X server also offers DAMAGE, the segment is kept as a copy of
// the screen and each capture reads only the rows X drew on since the
// previous one (as VNC servers do), and says which rows those were, so
// the encoder compares nothing else.
type shmScreen struct {
	conn *xgb.Conn
	root xproto.Window
	log  *slog.Logger

	// mu guards everything below: one capture at a time uses the segment.
	mu  sync.Mutex
	seg shm.Seg
	mem []byte // the agent's mapping of the segment; nil when none
	// damage accumulates what X draws; parts receives it at each capture.
	// Both are zero without DAMAGE.
	damage damage.Damage
	parts  xfixes.Region
	// seq counts captures; w and h are the size the segment holds a copy
	// of (0 when it holds none, and the next capture reads everything).
	seq  uint64
	w, h int
}

// newSHMScreen checks that the X server offers MIT-SHM and can map a
// segment of size bytes, and starts tracking damage where it can.
func newSHMScreen(conn *xgb.Conn, root xproto.Window, size int, log *slog.Logger) (*shmScreen, error) {
	if err := shm.Init(conn); err != nil {
		return nil, fmt.Errorf("no MIT-SHM extension: %w", err)
	}
	s := &shmScreen{conn: conn, root: root, log: log}
	if err := s.attach(size); err != nil {
		return nil, err
	}
	if err := s.trackDamage(); err != nil {
		log.Info("screenshots read the whole screen each time", "reason", err)
	}
	return s, nil
}

// trackDamage creates the damage object on the root window (which hears
// about drawing in every window) and the region that receives it.
func (s *shmScreen) trackDamage() error {
	if err := damage.Init(s.conn); err != nil {
		return fmt.Errorf("no DAMAGE extension: %w", err)
	}
	if err := xfixes.Init(s.conn); err != nil {
		return fmt.Errorf("no XFIXES extension: %w", err)
	}
	// Both extensions want the client's version before anything else.
	if _, err := xfixes.QueryVersion(s.conn, 2, 0).Reply(); err != nil {
		return fmt.Errorf("XFIXES: %w", err)
	}
	if _, err := damage.QueryVersion(s.conn, 1, 1).Reply(); err != nil {
		return fmt.Errorf("DAMAGE: %w", err)
	}
	parts, err := xfixes.NewRegionId(s.conn)
	if err != nil {
		return err
	}
	if err := xfixes.CreateRegionChecked(s.conn, parts, nil).Check(); err != nil {
		return fmt.Errorf("XFIXES region: %w", err)
	}
	d, err := damage.NewDamageId(s.conn)
	if err == nil {
		// NonEmpty: one event when damage starts to accumulate, not one per
		// drawing; the captures collect the damage themselves.
		err = damage.CreateChecked(s.conn, d, xproto.Drawable(s.root), damage.ReportLevelNonEmpty).Check()
	}
	if err != nil {
		xfixes.DestroyRegion(s.conn, parts)
		return fmt.Errorf("DAMAGE on the root window: %w", err)
	}
	s.damage, s.parts = d, parts
	return nil
}

// capture brings the segment up to date with the root window's w×h pixels
// (32 bits each) and returns them with what changed since the previous
// capture. The segment stays locked until release is called: the pixels
// are read in place, not copied.
func (s *shmScreen) capture(w, h int) (pix []byte, seq uint64, changes *frame.Changes, release func(), err error) {
	size := w * h * 4
	s.mu.Lock()
	defer func() {
		if err != nil {
			s.w, s.h = 0, 0 // what was drawn may be lost with the damage: read everything next time
			s.mu.Unlock()
		}
	}()
	if len(s.mem) < size {
		if err := s.attach(size); err != nil {
			return nil, 0, nil, nil, err
		}
	}
	var rows []frame.Rows
	whole := s.damage == 0 || s.w != w || s.h != h
	if s.damage != 0 {
		// Take what X drew so far before reading: whatever it draws from
		// now on is in this read or in the next damage.
		damage.Subtract(s.conn, s.damage, xfixes.RegionNone, s.parts)
		reply, err := xfixes.FetchRegion(s.conn, s.parts).Reply()
		if err != nil {
			return nil, 0, nil, nil, fmt.Errorf("read the damaged region: %w", err)
		}
		if !whole {
			rows = damagedRows(reply.Rectangles, h)
		}
	}
	if whole {
		rows = []frame.Rows{{Y0: 0, Y1: h}}
	}
	for _, r := range rows {
		// Whole rows land in the segment where the full screen's would.
		if _, err := shm.GetImage(s.conn, xproto.Drawable(s.root), 0, int16(r.Y0), uint16(w), uint16(r.Y1-r.Y0),
			0xffffffff, xproto.ImageFormatZPixmap, s.seg, uint32(r.Y0*w*4)).Reply(); err != nil {
			return nil, 0, nil, nil, fmt.Errorf("shared-memory screen read: %w", err)
		}
	}
	s.seq++
	if !whole {
		changes = &frame.Changes{Since: s.seq - 1, Rows: rows}
	}
	s.w, s.h = w, h
	return s.mem[:size:size], s.seq, changes, sync.OnceFunc(s.mu.Unlock), nil
}

// damagedRows turns damaged rectangles into sorted, merged row ranges
// within [0, h).
func damagedRows(rects []xproto.Rectangle, h int) []frame.Rows {
	rows := make([]frame.Rows, 0, len(rects))
	for _, r := range rects {
		y0, y1 := max(int(r.Y), 0), min(int(r.Y)+int(r.Height), h)
		if y0 < y1 {
			rows = append(rows, frame.Rows{Y0: y0, Y1: y1})
		}
	}
	return frame.MergeRows(rows)
}

// attach replaces the segment with one of size bytes. The segment is
// marked for removal as soon as both sides have it mapped, so the kernel
// frees it when the agent and the X server let go, even after a crash.
// Callers hold mu (or own s alone).
func (s *shmScreen) attach(size int) error {
	s.detach()
	s.w, s.h = 0, 0
	id, err := unix.SysvShmGet(unix.IPC_PRIVATE, size, unix.IPC_CREAT|0o600)
	if err != nil {
		return fmt.Errorf("create a shared-memory segment of %d bytes: %w", size, err)
	}
	defer unix.SysvShmCtl(id, unix.IPC_RMID, nil)
	mem, err := unix.SysvShmAttach(id, 0, 0)
	if err != nil {
		return fmt.Errorf("map the shared-memory segment: %w", err)
	}
	seg, err := shm.NewSegId(s.conn)
	if err == nil {
		err = shm.AttachChecked(s.conn, seg, uint32(id), false).Check()
	}
	if err != nil {
		unix.SysvShmDetach(mem)
		return fmt.Errorf("the X server cannot map the shared-memory segment: %w", err)
	}
	s.seg, s.mem = seg, mem
	return nil
}

// detach lets go of the segment, if any. Callers hold mu.
func (s *shmScreen) detach() {
	if s.mem == nil {
		return
	}
	shm.Detach(s.conn, s.seg)
	unix.SysvShmDetach(s.mem)
	s.mem = nil
}

// close lets go of the segment and the damage object.
func (s *shmScreen) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.detach()
	if s.damage != 0 {
		damage.Destroy(s.conn, s.damage)
		xfixes.DestroyRegion(s.conn, s.parts)
		s.damage = 0
	}
}
