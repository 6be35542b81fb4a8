// documents_darwin.m: what read_document reads with on macOS (see
// documents_darwin.h). Runs in the agent's child process only.
#import <AppKit/AppKit.h>
#import <Foundation/Foundation.h>
#import <ImageIO/ImageIO.h>
#import <PDFKit/PDFKit.h>
#include <stdlib.h>
#include <string.h>

#include "documents_darwin.h"

static char *hc_dup(NSString *s) {
	const char *u = s.UTF8String;
	return strdup(u ? u : "");
}

char *hc_pdf_text(const char *path, int first, int count, int *total) {
	@autoreleasepool {
		PDFDocument *doc = [[PDFDocument alloc] initWithURL:[NSURL fileURLWithPath:@(path)]];
		if (doc == nil) {
			*total = -1;
			return NULL;
		}
		if (doc.isLocked) {
			*total = -2;
			return NULL;
		}
		NSInteger n = doc.pageCount;
		*total = (int)n;
		NSMutableString *out = [NSMutableString string];
		for (NSInteger i = first - 1; i >= 0 && i < n && i < first - 1 + count; i++) {
			NSString *s = [doc pageAtIndex:i].string;
			if (s != nil) {
				[out appendString:s];
			}
			[out appendString:@"\f"];
		}
		return hc_dup(out);
	}
}

char *hc_rich_text(const char *path, const char *type, char **err) {
	@autoreleasepool {
		NSString *t = @(type);
		NSAttributedStringDocumentType dt = NSRTFTextDocumentType;
		if ([t isEqualToString:@"docx"]) {
			dt = NSOfficeOpenXMLTextDocumentType;
		} else if ([t isEqualToString:@"odt"]) {
			dt = NSOpenDocumentTextDocumentType;
		} else if ([t isEqualToString:@"doc"]) {
			dt = NSDocFormatTextDocumentType;
		}
		NSError *e = nil;
		NSAttributedString *s = [[NSAttributedString alloc] initWithURL:[NSURL fileURLWithPath:@(path)]
		                                                        options:@{NSDocumentTypeDocumentOption : dt}
		                                             documentAttributes:nil
		                                                          error:&e];
		if (s == nil) {
			*err = hc_dup(e.localizedDescription ?: @"the document could not be read");
			return NULL;
		}
		return hc_dup(s.string);
	}
}

void *hc_image_png(const char *path, int max_side, size_t *len) {
	@autoreleasepool {
		CGImageSourceRef src = CGImageSourceCreateWithURL((__bridge CFURLRef)[NSURL fileURLWithPath:@(path)], NULL);
		if (src == NULL) {
			return NULL;
		}
		// A thumbnail at most max_side a side: ImageIO decodes no more
		// than that of a huge image.
		NSDictionary *opts = @{
			(__bridge NSString *)kCGImageSourceCreateThumbnailFromImageAlways : @YES,
			(__bridge NSString *)kCGImageSourceCreateThumbnailWithTransform : @YES,
			(__bridge NSString *)kCGImageSourceThumbnailMaxPixelSize : @(max_side),
		};
		CGImageRef img = CGImageSourceCreateThumbnailAtIndex(src, 0, (__bridge CFDictionaryRef)opts);
		CFRelease(src);
		if (img == NULL) {
			return NULL;
		}
		NSMutableData *data = [NSMutableData data];
		CGImageDestinationRef dst = CGImageDestinationCreateWithData((__bridge CFMutableDataRef)data, CFSTR("public.png"), 1, NULL);
		BOOL ok = NO;
		if (dst != NULL) {
			CGImageDestinationAddImage(dst, img, NULL);
			ok = CGImageDestinationFinalize(dst);
			CFRelease(dst);
		}
		CGImageRelease(img);
		if (!ok || data.length == 0) {
			return NULL;
		}
		void *out = malloc(data.length);
		memcpy(out, data.bytes, data.length);
		*len = data.length;
		return out;
	}
}
