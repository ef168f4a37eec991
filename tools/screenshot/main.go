// Command screenshot opens a page in headless Chromium, waits until a
// JavaScript condition holds (by default: the explorer UI has drawn its
// graph) and writes a PNG of the window. `make demo` (scripts/demo.sh) uses
// it to show the explorer on the demo's graph.
//
//	screenshot -url 'http://127.0.0.1:8080/?node=...' -out docs/explorer.png
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"time"

	"github.com/chromedp/chromedp"
)

func main() {
	var (
		pageURL  = flag.String("url", "", "page to open (required)")
		out      = flag.String("out", "explorer.png", "PNG file to write")
		wait     = flag.String("wait", "window.__lf && __lf.ready && !__lf.cy.animated() && document.getElementById('details').getAttribute('aria-busy') !== 'true'", "JavaScript condition to wait for before the screenshot")
		width    = flag.Int("width", 1440, "window width")
		height   = flag.Int("height", 820, "window height")
		timeout  = flag.Duration("timeout", 60*time.Second, "give up after this long")
		chromium = flag.String("chromium", os.Getenv("LINEAGEFLOW_CHROMIUM"), "Chromium executable (default: chromium on PATH)")
	)
	flag.Parse()
	if err := shoot(*pageURL, *out, *wait, *chromium, *width, *height, *timeout); err != nil {
		fmt.Fprintln(os.Stderr, "screenshot:", err)
		os.Exit(1)
	}
	fmt.Println(*out)
}

func shoot(pageURL, out, wait, chromium string, width, height int, timeout time.Duration) error {
	if pageURL == "" {
		return errors.New("-url is required")
	}
	if chromium == "" {
		for _, n := range []string{"chromium", "chromium-browser", "google-chrome"} {
			if p, err := exec.LookPath(n); err == nil {
				chromium = p
				break
			}
		}
	}
	if chromium == "" {
		return errors.New("no Chromium found: apt-get install chromium, or pass -chromium")
	}
	dir, err := os.MkdirTemp("", "screenshot-profile-")
	if err != nil {
		return fmt.Errorf("profile dir: %w", err)
	}
	defer func() { _ = os.RemoveAll(dir) }()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium),
		chromedp.NoSandbox,
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("hide-scrollbars", true),
		chromedp.UserDataDir(dir),
		chromedp.WindowSize(width, height),
	)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	actx, cancelA := chromedp.NewExecAllocator(ctx, opts...)
	defer cancelA()
	bctx, cancelB := chromedp.NewContext(actx)
	defer cancelB()
	var png []byte
	err = chromedp.Run(bctx,
		chromedp.EmulateViewport(int64(width), int64(height)),
		chromedp.Navigate(pageURL),
		chromedp.Poll(wait, nil, chromedp.WithPollingInterval(50*time.Millisecond)),
		chromedp.Sleep(300*time.Millisecond), // let the last frame paint (not a synchronisation)
		chromedp.CaptureScreenshot(&png),
	)
	if err != nil {
		return fmt.Errorf("%s: %w", pageURL, err)
	}
	if err := os.WriteFile(out, png, 0o644); err != nil {
		return fmt.Errorf("write %s: %w", out, err)
	}
	return nil
}
