// Package tmplarchive writes and reads template archives: one file that
// carries a VM template from one helper to another.
//
// An archive is a zstd-compressed tar stream of exactly three regular
// files, in this order:
//
//   - manifest.json: what the template is (name, kind, resources, its
//     guest agent's version) and the size of the disk, strictly decoded and
//     at most MaxManifestBytes;
//   - disk.tar: the template's files as a tar stream of their own: a Linux
//     template's root filesystem under rootfs/ (folders, files, the
//     guest's own symbolic links and hard links between its files), or a
//     macOS bundle's files (disk.img, aux.img, hardware-model.bin,
//     machine-id.bin, config.json), nothing else;
//   - SHA256SUMS: the SHA-256 of the other two, as sha256sum prints them.
//
// Write streams (a disk is read once, holes skipped where the file system
// says where they are; its size is measured first without reading the
// data) and follows no link: the template's folder is an os.Root, every
// file is opened and checked to be the regular file that was listed.
//
// Open and Extract read an archive nobody vouches for. Everything is
// checked before it is believed: an entry that is not a regular file at
// the top, a name that is absolute or climbs with "..", a disk entry whose
// size is not the one the manifest declares, a file larger than the whole
// disk, an entry reached through a link or before its folder, a hard link
// to anything but a file the same archive wrote, a device node, a
// manifest over its size or with unknown fields, an archive that ends
// early, a checksum that does not match, anything after the checksums:
// each is an error of class invalid that names the entry. Files are
// written beneath an os.Root into a folder the caller made empty, without
// their set-id bits or extended attributes, owned by root or the guest's
// account, holes left where the data is zero. The caller stages into a
// temporary folder and renames it into place only after Extract returned
// nil, so a refused archive leaves nothing behind but that folder, which
// the caller removes.
package tmplarchive
