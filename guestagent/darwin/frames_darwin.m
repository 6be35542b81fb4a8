// frames_darwin.m: redraws of the main display for the capture's settle
// (guestagent/settle): a ScreenCaptureKit stream whose frames are only
// read for their status. ScreenCaptureKit delivers a frame whose status
// is SCFrameStatusComplete when the display changed and Idle when it did
// not, as X DAMAGE reports drawing on Linux. The stream is small (a
// quarter of the display's points, no cursor): its pixels are never
// read. Its calls into Go run on one serial queue, which hc_frames_stop
// drains after it has set the stopped flag: no call comes after it.

#import <CoreMedia/CoreMedia.h>
#import <Foundation/Foundation.h>
#import <ScreenCaptureKit/ScreenCaptureKit.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "bridge_darwin.h"
#include "_cgo_export.h"

static const int64_t hc_frames_wait_seconds = 5;

@interface HCFrames : NSObject <SCStreamOutput, SCStreamDelegate>
@property(nonatomic, strong) SCStream *stream;
@property(nonatomic, strong) dispatch_queue_t queue;
@property(nonatomic, assign) uintptr_t token;
@end

@implementation HCFrames {
	atomic_bool _stopped;
}

- (void)markStopped {
	atomic_store(&_stopped, true);
}

- (void)stream:(SCStream *)stream didOutputSampleBuffer:(CMSampleBufferRef)sampleBuffer ofType:(SCStreamOutputType)type {
	if (type != SCStreamOutputTypeScreen || atomic_load(&_stopped)) return;
	// The frame's info is the first sample attachment; a buffer may have
	// none (then it says nothing of the screen).
	CFArrayRef attachments = CMSampleBufferGetSampleAttachmentsArray(sampleBuffer, false);
	if (attachments == NULL || CFArrayGetCount(attachments) == 0) return;
	NSDictionary *info = (__bridge NSDictionary *)CFArrayGetValueAtIndex(attachments, 0);
	id status = info[SCStreamFrameInfoStatus];
	if ([status isKindOfClass:[NSNumber class]] && [status integerValue] == SCFrameStatusComplete) {
		hcFramesDrawn(self.token);
	}
}

- (void)stream:(SCStream *)stream didStopWithError:(NSError *)error {
	// Through the queue, after the frames before it, and never after
	// hc_frames_stop (which drains the queue once _stopped is set).
	NSString *why = error.localizedDescription ?: @"the capture stream stopped";
	dispatch_async(self.queue, ^{
		if (atomic_load(&self->_stopped)) return;
		atomic_store(&self->_stopped, true);
		const char *utf8 = why.UTF8String;
		hcFramesLost(self.token, (char *)(utf8 != NULL ? utf8 : "the capture stream stopped"));
	});
}
@end

// hc_frames_error is message as a malloc'd string.
static char *hc_frames_error(NSString *message) {
	const char *utf8 = message.UTF8String;
	return strdup(utf8 != NULL ? utf8 : "capture stream error");
}

// hc_frames_await waits for an asynchronous ScreenCaptureKit call whose
// completion hands its error to finish. It answers nil on success.
static NSString *hc_frames_await(void (^start)(void (^finish)(NSError *)), NSString *what) {
	__block NSError *failure = nil;
	dispatch_semaphore_t done = dispatch_semaphore_create(0);
	start(^(NSError *e) {
		failure = e;
		dispatch_semaphore_signal(done);
	});
	if (dispatch_semaphore_wait(done, dispatch_time(DISPATCH_TIME_NOW, hc_frames_wait_seconds * NSEC_PER_SEC)) != 0) {
		return [NSString stringWithFormat:@"%@ timed out", what];
	}
	return failure != nil ? failure.localizedDescription : nil;
}

char *hc_frames_start(uintptr_t token, void **handle) {
	@autoreleasepool {
		__block SCDisplay *display = nil;
		NSString *failed = hc_frames_await(^(void (^finish)(NSError *)) {
			[SCShareableContent getShareableContentExcludingDesktopWindows:NO
			                                           onScreenWindowsOnly:YES
			                                             completionHandler:^(SCShareableContent *content, NSError *error) {
				for (SCDisplay *d in content.displays) {
					if (display == nil || d.displayID == CGMainDisplayID()) display = d;
				}
				finish(error);
			}];
		}, @"listing the displays");
		if (failed != nil) return hc_frames_error(failed);
		if (display == nil) return strdup("no display to watch");

		SCContentFilter *filter = [[SCContentFilter alloc] initWithDisplay:display excludingWindows:@[]];
		SCStreamConfiguration *config = [[SCStreamConfiguration alloc] init];
		config.width = (size_t)MAX(display.width / 4, 16);
		config.height = (size_t)MAX(display.height / 4, 16);
		config.minimumFrameInterval = CMTimeMake(1, 60);
		config.queueDepth = 3;
		config.showsCursor = NO;
		config.pixelFormat = kCVPixelFormatType_32BGRA;

		HCFrames *frames = [[HCFrames alloc] init];
		frames.token = token;
		frames.queue = dispatch_queue_create("com.hivecrew.guestagent.frames", DISPATCH_QUEUE_SERIAL);
		frames.stream = [[SCStream alloc] initWithFilter:filter configuration:config delegate:frames];
		NSError *addError = nil;
		if (![frames.stream addStreamOutput:frames type:SCStreamOutputTypeScreen sampleHandlerQueue:frames.queue error:&addError]) {
			return hc_frames_error(addError.localizedDescription ?: @"the stream refused its output");
		}
		failed = hc_frames_await(^(void (^finish)(NSError *)) {
			[frames.stream startCaptureWithCompletionHandler:finish];
		}, @"starting the capture stream");
		if (failed != nil) {
			[frames markStopped];
			[frames.stream stopCaptureWithCompletionHandler:nil];
			dispatch_sync(frames.queue, ^{});
			return hc_frames_error(failed);
		}
		*handle = (void *)CFBridgingRetain(frames);
		return NULL;
	}
}

void hc_frames_stop(void *handle) {
	if (handle == NULL) return;
	@autoreleasepool {
		HCFrames *frames = CFBridgingRelease(handle);
		[frames markStopped];
		hc_frames_await(^(void (^finish)(NSError *)) {
			[frames.stream stopCaptureWithCompletionHandler:finish];
		}, @"stopping the capture stream");
		[frames.stream removeStreamOutput:frames type:SCStreamOutputTypeScreen error:nil];
		// Frames and stop reports queued before the flag was set see it
		// or ran already: after this no call for the token comes.
		dispatch_sync(frames.queue, ^{});
	}
}
