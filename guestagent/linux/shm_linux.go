package linux

import (
	"fmt"
	"sync"

	"github.com/jezek/xgb"
	"github.com/jezek/xgb/shm"
	"github.com/jezek/xgb/xproto"
	"golang.org/x/sys/unix"
)

// shmScreen reads the screen through a System V shared-memory segment
// (the MIT-SHM extension): the X server writes the pixels into memory the
// agent maps, instead of sending 4 MB through the socket for every
// screenshot. It needs the X server on the same machine and IPC namespace,
// which the guest's own display always is.
type shmScreen struct {
	conn *xgb.Conn

	// mu guards the segment: one capture at a time reads it.
	mu  sync.Mutex
	seg shm.Seg
	mem []byte // the agent's mapping of the segment; nil when none
}

// newSHMScreen checks that the X server offers MIT-SHM and can map a
// segment of size bytes.
func newSHMScreen(conn *xgb.Conn, size int) (*shmScreen, error) {
	if err := shm.Init(conn); err != nil {
		return nil, fmt.Errorf("no MIT-SHM extension: %w", err)
	}
	s := &shmScreen{conn: conn}
	if err := s.attach(size); err != nil {
		return nil, err
	}
	return s, nil
}

// capture reads the root window's w×h pixels (32 bits each) into the
// segment and returns them. The segment stays locked until release is
// called: the pixels are read in place, not copied.
func (s *shmScreen) capture(root xproto.Window, w, h int) (pix []byte, release func(), err error) {
	size := w * h * 4
	s.mu.Lock()
	if len(s.mem) < size {
		if err := s.attach(size); err != nil {
			s.mu.Unlock()
			return nil, nil, err
		}
	}
	if _, err := shm.GetImage(s.conn, xproto.Drawable(root), 0, 0, uint16(w), uint16(h),
		0xffffffff, xproto.ImageFormatZPixmap, s.seg, 0).Reply(); err != nil {
		s.mu.Unlock()
		return nil, nil, fmt.Errorf("shared-memory screen read: %w", err)
	}
	return s.mem[:size:size], sync.OnceFunc(s.mu.Unlock), nil
}

// attach replaces the segment with one of size bytes. The segment is
// marked for removal as soon as both sides have it mapped, so the kernel
// frees it when the agent and the X server let go, even after a crash.
func (s *shmScreen) attach(size int) error {
	s.detach()
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

// close lets go of the segment.
func (s *shmScreen) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.detach()
}
