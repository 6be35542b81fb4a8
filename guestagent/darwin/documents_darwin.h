// documents_darwin.h: the C interface of documents_darwin.m, the macOS
// frameworks read_document reads with (PDFKit, NSAttributedString,
// ImageIO). Only the agent's child process (--extract-document) calls it.
// Strings and buffers returned are malloc'd; the caller frees them.
#ifndef HIVECREW_DOCUMENTS_DARWIN_H
#define HIVECREW_DOCUMENTS_DARWIN_H

#include <stddef.h>

// hc_pdf_text returns pages first .. first+count-1 (from 1) of the PDF at
// path, each followed by a form feed, and sets *total to its pages; NULL
// with *total -1 when PDFKit cannot open it, -2 when it is encrypted.
char *hc_pdf_text(const char *path, int first, int count, int *total);

// hc_rich_text returns the text of the word-processing document at path
// of type ("docx", "odt", "rtf" or "doc"), or NULL with *err set.
char *hc_rich_text(const char *path, const char *type, char **err);

// hc_image_png decodes the image at path with ImageIO, at most max_side
// pixels a side (EXIF orientation applied), and returns it as a PNG of
// *len bytes, or NULL.
void *hc_image_png(const char *path, int max_side, size_t *len);

#endif
