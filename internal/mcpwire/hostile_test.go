package mcpwire

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"
)

// TestNoAnswerReadIntoTheNext: an upstream that sends more than its
// answer (a second answer after a body of a length, a body after a 204 or
// a 304, which have none), or that answers in HTTP/1.0 or with
// Connection: close and keeps the socket open, never has a later call on
// its pool read those bytes as its own answer nor wait on a connection
// the upstream will not answer again: each call reads its own answer.
func TestNoAnswerReadIntoTheNext(t *testing.T) {
	const evil = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nevil!"
	for _, tc := range []struct{ name, answer, body string }{
		{"an answer after a length", "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}" + evil, "{}"},
		{"a body after a 204", "HTTP/1.1 204 No Content\r\nContent-Length: 5\r\n\r\nevil!", ""},
		{"a body after a 304", "HTTP/1.1 304 Not Modified\r\n\r\n" + evil, ""},
		{"an answer after a chunked body", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n" + evil, "{}"},
		{"an empty body and an answer", "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n" + evil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := cannedServer(t, tc.answer)
			for i := range 3 {
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				x, err := p.RoundTrip(ctx, Session{ID: "s1", Protocol: SessionProtocol}, lateBody)
				if err != nil {
					cancel()
					t.Fatalf("call %d: %v", i, err)
				}
				b, err := io.ReadAll(&x.Body)
				x.Release(false)
				cancel()
				if err != nil || string(b) != tc.body {
					t.Fatalf("call %d read %q, %v; want %q", i, b, err, tc.body)
				}
			}
		})
	}
	for _, tc := range []struct{ name, answer string }{
		{"HTTP/1.0", "HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\n{}"},
		{"Connection: close", "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\n{}"},
		{"connection: Close, upper", "HTTP/1.1 200 OK\r\nconnection: CLOSE\r\nContent-Length: 2\r\n\r\n{}"},
		{"close among tokens", "HTTP/1.1 200 OK\r\nConnection: te, close\r\nContent-Length: 2\r\n\r\n{}"},
	} {
		t.Run("not reused/"+tc.name, func(t *testing.T) {
			p := cannedServer(t, tc.answer)
			x, err := p.RoundTrip(context.Background(), Session{ID: "s1", Protocol: SessionProtocol}, lateBody)
			if err != nil {
				t.Fatal(err)
			}
			b, err := io.ReadAll(&x.Body)
			x.Release(false)
			if err != nil || string(b) != "{}" {
				t.Fatalf("read %q, %v", b, err)
			}
			if n := len(idleConns(p)); n != 0 {
				t.Errorf("%d connections kept after an answer that ends its connection", n)
			}
		})
	}
}

// TestFaultyFramingRefusedAtOnce: an HTTP/1.0 answer with a
// Transfer-Encoding (which HTTP/1.0 has not) is an answer whose framing
// is faulty (RFC 9112 6.1): it fails the call at once, with errHead,
// instead of being read to the close of a connection the upstream keeps
// open (until the call's deadline, its chunk sizes taken for data); and a
// body's framing refused (a trailer field that must not be one) says so
// without quoting the upstream's bytes, as a head refused does. A
// Content-Length beside chunked is refused with a space before its colon
// too (fasthttp takes such a field as its name without the space), and
// so is a status line that is not HTTP/1.0's or HTTP/1.1's (fasthttp skips
// empty lines before it and takes any version; FuzzHTTPAnswer found one
// read that net/http refuses).
func TestFaultyFramingRefusedAtOnce(t *testing.T) {
	chunked := "2\r\n{}\r\n0\r\n\r\n"
	for _, tc := range []struct{ name, answer, why string }{
		{"HTTP/1.0 chunked", "HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + chunked, "HTTP/1.0"},
		{"HTTP/1.0 chunked with a length", "HTTP/1.0 200 OK\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n{}", "HTTP/1.0"},
		{"HTTP/1.0 another coding", "HTTP/1.0 200 OK\r\ntransfer-encoding: gzip\r\n\r\n{}", "HTTP/1.0"},
		{"a length with a space before its colon beside chunked", "HTTP/1.1 200 OK\r\nContent-Length : 2\r\nTransfer-Encoding: chunked\r\n\r\n" + chunked, "both Transfer-Encoding and Content-Length"},
		{"an empty line before the status line", "\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}", "status line"},
		{"HTTP/0.0", "HTTP/0.0 200 OK\r\nContent-Length: 2\r\n\r\n{}", "status line"},
		{"HTTP/2.0", "HTTP/2.0 200 OK\r\nContent-Length: 2\r\n\r\n{}", "status line"},
		{"HTTP/1.2", "HTTP/1.2 200 OK\r\nContent-Length: 2\r\n\r\n{}", "status line"},
		{"a forbidden trailer", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\nContent-Length: 5\r\n\r\n", "its body"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := cannedServer(t, tc.answer)
			// A read to the close waits for the call's deadline, and
			// fails with its timeout, not errHead.
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			x, err := p.RoundTrip(ctx, Session{ID: "s1", Protocol: SessionProtocol}, lateBody)
			if err == nil {
				_, err = io.ReadAll(&x.Body)
				x.Release(err != nil)
			}
			if !errors.Is(err, errHead) || !strings.Contains(err.Error(), tc.why) {
				t.Fatalf("error %v, want %v saying %q", err, errHead, tc.why)
			}
			if strings.Contains(err.Error(), "buffer size") || strings.Contains(err.Error(), "contents:") || strings.Contains(err.Error(), "5\r\n") {
				t.Errorf("the error carries the answer's bytes: %q", err)
			}
			if n := len(idleConns(p)); n != 0 {
				t.Errorf("%d connections kept after a faulty answer", n)
			}
		})
	}
}
