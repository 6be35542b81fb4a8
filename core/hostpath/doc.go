// Package hostpath opens folders of the host that someone else may have
// prepared. Another local user can plant a symbolic link where the user's
// folder will be, make that folder in advance, or swap a link in between a
// check and a write; a guest can do the same inside its own shared folder.
// So folders are opened, not named:
//
//   - Resolve turns a path into its real path, following only links the
//     user or root made;
//   - OpenDir opens (or makes) a folder from / down, one component at a
//     time with O_NOFOLLOW, each a folder the user or root owns, and hands
//     back an os.Root checked to be the folder it walked;
//   - Sub descends into a folder of an os.Root without following a link in
//     any component (a VM's inbox the guest replaced with a link);
//   - a Fence compares folders by device and inode, never by cleaned
//     strings: a path that is, is inside or holds the helper's data folder
//     is refused whatever links it went through, and a walk meets the
//     fence's folders by identity, bind mounts too.
//
// Limits: a bind mount of a folder below a fenced one, made elsewhere by
// root, is not seen as inside it (walking up from it leads elsewhere); a
// folder's owner can still change what it holds after it was opened.
package hostpath
