package guest

import (
	"bytes"
	"context"
	"image"
	_ "image/jpeg" // decode what guests send
	_ "image/png"

	"github.com/hivecrew/hivecrew/core/errdefs"
	"github.com/hivecrew/hivecrew/guestagent/protocol"
)

// maxScreenshotBytes bounds an encoded screenshot from the guest.
const maxScreenshotBytes = 48 << 20

// maxScreenshotPixels bounds a screenshot's size whatever the request
// asked for (an 8K screen has 33 million pixels): a small PNG can claim a
// size whose decoding would take gigabytes.
const maxScreenshotPixels = 40_000_000

// Screenshot takes a screenshot and checks that the image is what the guest
// says it is: a decodable PNG or JPEG of the reported size, within the
// requested bounds.
func (c *Client) Screenshot(ctx context.Context, p protocol.ScreenshotParams) (protocol.ScreenshotResult, error) {
	var res protocol.ScreenshotResult
	if err := c.Call(ctx, protocol.MethodScreenshot, p, &res); err != nil {
		return res, err
	}
	if len(res.Data) == 0 || len(res.Data) > maxScreenshotBytes {
		return res, errdefs.Invalidf("guest screenshot of %d bytes", len(res.Data))
	}
	cfg, format, err := image.DecodeConfig(bytes.NewReader(res.Data))
	if err != nil {
		return res, errdefs.Invalidf("guest screenshot does not decode: %v", err)
	}
	if cfg.Width <= 0 || cfg.Height <= 0 || cfg.Width > 16384 || cfg.Height > 16384 || cfg.Width*cfg.Height > maxScreenshotPixels {
		return res, errdefs.Invalidf("guest screenshot of %dx%d pixels exceeds %d pixels", cfg.Width, cfg.Height, maxScreenshotPixels)
	}
	if format != res.Format || cfg.Width != res.Width || cfg.Height != res.Height {
		return res, errdefs.Invalidf("guest screenshot is a %dx%d %s, not the %dx%d %s it reported",
			cfg.Width, cfg.Height, format, res.Width, res.Height, clean(res.Format))
	}
	if (p.MaxWidth > 0 && res.Width > p.MaxWidth) || (p.MaxHeight > 0 && res.Height > p.MaxHeight) {
		return res, errdefs.Invalidf("guest screenshot %dx%d exceeds the requested %dx%d", res.Width, res.Height, p.MaxWidth, p.MaxHeight)
	}
	return res, nil
}

// Health asks the guest how it is.
func (c *Client) Health(ctx context.Context) (protocol.HealthResult, error) {
	var res protocol.HealthResult
	err := c.Call(ctx, protocol.MethodHealthCheck, nil, &res)
	for i := range res.Problems {
		res.Problems[i] = clean(res.Problems[i])
	}
	return res, err
}

// Shell runs a command in the guest.
func (c *Client) Shell(ctx context.Context, p protocol.ShellParams) (protocol.ShellResult, error) {
	var res protocol.ShellResult
	err := c.Call(ctx, protocol.MethodRunShell, p, &res)
	return res, err
}

// Shutdown asks the guest OS to power off; the connection then ends.
func (c *Client) Shutdown(ctx context.Context) error {
	return c.Call(ctx, protocol.MethodShutdown, nil, nil)
}

// CursorPosition asks where the guest's pointer is (input.v2), and refuses
// a position off the screen the guest reported at hello.
func (c *Client) CursorPosition(ctx context.Context) (protocol.CursorPosition, error) {
	var p protocol.CursorPosition
	if err := c.Call(ctx, protocol.MethodCursorPosition, nil, &p); err != nil {
		return p, err
	}
	scr := c.Hello().Screen
	if !(p.X >= 0 && p.Y >= 0 && p.X <= float64(scr.Width) && p.Y <= float64(scr.Height)) {
		return protocol.CursorPosition{}, errdefs.Invalidf("guest reported the pointer at (%g, %g), off its %dx%d screen", p.X, p.Y, scr.Width, scr.Height)
	}
	return p, nil
}
