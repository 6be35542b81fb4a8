package hostpath

import "golang.org/x/sys/unix"

// dirFlags open a folder to walk from, not to read it: O_PATH needs only
// the right to search its parents, not to list it (a 0711 /home).
const dirFlags = unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC
