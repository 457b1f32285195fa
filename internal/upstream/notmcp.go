package upstream

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// notMCP says, of an upstream at a URL that did not connect, what its URL
// answers when that names the fix, else "". Two mistakes answer HTTP and
// read as "start it" otherwise: a server of the HTTP+SSE transport of
// 2024-11-05 (its stream's first event names the endpoint to post to),
// which reach does not speak to upstreams, and a URL whose path serves no
// MCP (the server's base URL, its /mcp left out), which answers 404 or 405
// to an MCP POST. Asked only after the connection failed: a GET of the
// stream (closed at its first event), and a POST of an empty object, which
// opens no session at an MCP endpoint.
func (u *upstream) notMCP(ctx context.Context) string {
	if u.http == nil || u.cfg.URL == "" {
		return ""
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	path := "/"
	if pu, err := url.Parse(u.cfg.URL); err == nil && pu.Path != "" {
		path = pu.Path
	}
	if req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.cfg.URL, nil); err == nil {
		req.Header.Set("Accept", "text/event-stream")
		if resp, err := u.http.Do(req); err == nil {
			mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
			sse := false
			if resp.StatusCode == http.StatusOK && mt == "text/event-stream" {
				sc := bufio.NewScanner(io.LimitReader(resp.Body, 4096))
				for sc.Scan() {
					if line := strings.TrimSpace(sc.Text()); line == "event: endpoint" || line == "event:endpoint" {
						sse = true
						break
					} else if line == "" {
						break // the first event ended
					}
				}
			}
			resp.Body.Close()
			if sse {
				return fmt.Sprintf("it serves the HTTP+SSE transport of 2024-11-05 at %s (its stream names an endpoint to post to), which reach does not speak to upstreams: serve it on Streamable HTTP (often at /mcp) and give that url, or run it over stdio (command:)", path)
			}
		}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.cfg.URL, strings.NewReader("{}"))
	if err != nil {
		return ""
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := u.http.Do(req)
	if err != nil {
		return ""
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
	resp.Body.Close()
	if resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusMethodNotAllowed {
		return fmt.Sprintf("it answers %d %s to an MCP POST at %s: no MCP endpoint is at that path; check the url's path (a Streamable HTTP server often serves /mcp)", resp.StatusCode, http.StatusText(resp.StatusCode), path)
	}
	return ""
}
