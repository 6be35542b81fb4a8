// bridge_darwin.h: the C interface of the Objective-C bridge (bridge_darwin.m)
// used by driver_darwin.go. Strings returned are malloc'd UTF-8; the caller
// frees them with free().
#ifndef HIVECREW_BRIDGE_DARWIN_H
#define HIVECREW_BRIDGE_DARWIN_H

#include <stdint.h>

// Result codes of the open functions.
enum { HC_OK = 0, HC_NOT_FOUND = 1, HC_FAILED = 2 };

typedef struct {
	double width;  // logical points
	double height; // logical points
	double scale;  // pixels per point
} hc_screen;

typedef struct {
	unsigned char *pixels; // RGBA, width*height*4 bytes, malloc'd
	int width;
	int height;
	char *err; // set on failure
} hc_image;

hc_screen hc_main_screen(void);
int hc_accessibility_trusted(void);
int hc_screen_capture_allowed(void);
void hc_request_permissions(void);

hc_image hc_capture(void);

void hc_mouse_move(double x, double y);
void hc_mouse_click(double x, double y, int button, int count);
void hc_mouse_drag(double fx, double fy, double tx, double ty, int steps);
void hc_scroll(double x, double y, int dx, int dy);
void hc_key(uint16_t code, uint64_t flags);
void hc_type_utf16(const uint16_t *units, int n);

int hc_open_app(const char *name, char **err);
int hc_open_file(const char *path, const char *app, char **err);
int hc_open_url(const char *url, char **err);
char *hc_frontmost_app_json(void);
char *hc_running_apps_json(void);
char *hc_ax_tree_json(const char *app, int max_depth, int only_visible, int max_nodes, char **err);

char *hc_clipboard_read(void);
int hc_clipboard_write(const char *text);

void hc_run_main_loop(void);
void hc_stop_main_loop(void);

#endif
