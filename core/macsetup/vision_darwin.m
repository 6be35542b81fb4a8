// vision_darwin.m: VNRecognizeTextRequest over a screen of the VM. It runs
// on the calling thread (performRequests: is synchronous) and keeps
// nothing between calls.

#import <CoreGraphics/CoreGraphics.h>
#import <Foundation/Foundation.h>
#import <Vision/Vision.h>
#include <stdlib.h>
#include <string.h>

#include "vision_darwin.h"

static char *hc_vision_error(NSString *message) {
	const char *utf8 = message.UTF8String;
	return strdup(utf8 != NULL ? utf8 : "text recognition failed");
}

char *hc_read_text(const uint8_t *rgba, int width, int height, int stride, hc_text **lines, int *n) {
	*lines = NULL;
	*n = 0;
	@autoreleasepool {
		CGColorSpaceRef space = CGColorSpaceCreateWithName(kCGColorSpaceSRGB);
		CGDataProviderRef provider = CGDataProviderCreateWithData(NULL, rgba, (size_t)stride * (size_t)height, NULL);
		CGImageRef image = space != NULL && provider != NULL
		                       ? CGImageCreate((size_t)width, (size_t)height, 8, 32, (size_t)stride, space,
		                                       (CGBitmapInfo)kCGImageAlphaPremultipliedLast | kCGBitmapByteOrder32Big, provider, NULL,
		                                       false, kCGRenderingIntentDefault)
		                       : NULL;
		if (provider != NULL) CGDataProviderRelease(provider);
		if (space != NULL) CGColorSpaceRelease(space);
		if (image == NULL) return strdup("could not make an image of the screen");

		VNRecognizeTextRequest *request = [[VNRecognizeTextRequest alloc] init];
		request.recognitionLevel = VNRequestTextRecognitionLevelAccurate;
		request.usesLanguageCorrection = YES;
		request.recognitionLanguages = @[ @"en-US" ];
		VNImageRequestHandler *handler = [[VNImageRequestHandler alloc] initWithCGImage:image options:@{}];
		NSError *error = nil;
		BOOL ok = [handler performRequests:@[ request ] error:&error];
		CGImageRelease(image);
		if (!ok) return hc_vision_error(error.localizedDescription ?: @"text recognition failed");

		NSArray<VNRecognizedTextObservation *> *results = request.results ?: @[];
		hc_text *out = calloc(results.count > 0 ? results.count : 1, sizeof(hc_text));
		if (out == NULL) return strdup("out of memory");
		int count = 0;
		for (VNRecognizedTextObservation *o in results) {
			VNRecognizedText *best = [o topCandidates:1].firstObject; // nil when Vision has no candidate
			if (best == nil || best.string.length == 0) continue;
			const char *utf8 = best.string.UTF8String;
			if (utf8 == NULL) continue;
			CGRect box = o.boundingBox;
			out[count].text = strdup(utf8);
			out[count].x = box.origin.x;
			out[count].y = box.origin.y;
			out[count].w = box.size.width;
			out[count].h = box.size.height;
			count++;
		}
		*lines = out;
		*n = count;
		return NULL;
	}
}
