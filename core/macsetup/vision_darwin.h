// vision_darwin.h: text recognition of a screen with Apple's Vision
// framework (vision_darwin.m), for VisionReader.
#ifndef HIVECREW_VISION_DARWIN_H
#define HIVECREW_VISION_DARWIN_H

#include <stdint.h>

// hc_text is one recognised line: malloc'd UTF-8 text and its box,
// normalised to 0..1 with the origin at the bottom left (Vision's).
typedef struct {
	char *text;
	double x, y, w, h;
} hc_text;

// hc_read_text recognises the text of an RGBA image (stride bytes a row).
// It returns NULL and sets *lines (malloc'd; free each text, then the
// array) and *n, or returns a malloc'd error message.
char *hc_read_text(const uint8_t *rgba, int width, int height, int stride, hc_text **lines, int *n);

#endif
