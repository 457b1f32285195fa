package mcpwire

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net"
	"strconv"
	"testing"

	"github.com/valyala/fasthttp"
)

// BenchmarkRoundTrip is one call of the wire client alone on a pooled
// connection: the request written, the answer's head and body read to
// the end, the connection released. The upstream is a raw socket writing
// a canned answer (an SSE event in a chunk, its last chunk with it; or a
// JSON body with a length), so that the client's own work is most of
// what is measured.
func BenchmarkRoundTrip(b *testing.B) {
	chunk := strconv.FormatInt(int64(len(lateEvent)), 16) + "\r\n" + lateEvent + "\r\n"
	const result = `{"jsonrpc":"2.0","id":1,"result":{"content":[],"ok":true}}`
	for _, bc := range []struct{ name, answer string }{
		{"sse", "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\nMcp-Session-Id: s1\r\nDate: Sun, 06 Dec 2026 14:00:00 GMT\r\nTransfer-Encoding: chunked\r\n\r\n" + chunk + "0\r\n\r\n"},
		{"json", "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nMcp-Session-Id: s1\r\nDate: Sun, 06 Dec 2026 14:00:00 GMT\r\nContent-Length: " + strconv.Itoa(len(result)) + "\r\n\r\n" + result},
	} {
		b.Run(bc.name, func(b *testing.B) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			defer ln.Close()
			go func() {
				for {
					c, err := ln.Accept()
					if err != nil {
						return
					}
					go func() {
						defer c.Close()
						var in [4096]byte
						for n := 0; ; {
							k, err := c.Read(in[n:])
							if err != nil {
								return
							}
							if n += k; !bytes.HasSuffix(in[:n], lateBody) {
								continue
							}
							n = 0
							if _, err := c.Write([]byte(bc.answer)); err != nil {
								return
							}
						}
					}()
				}
			}()
			p := NewConns("http://"+ln.Addr().String()+"/mcp", nil)
			defer p.Close()
			s := Session{ID: "s1", Protocol: SessionProtocol}
			var buf [512]byte
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				x, err := p.RoundTrip(ctx, s, lateBody)
				if err != nil {
					b.Fatal(err)
				}
				for {
					_, err := x.Body.Read(buf[:])
					if err == io.EOF {
						break
					}
					if err != nil {
						b.Fatal(err)
					}
				}
				x.Release(false)
			}
		})
	}
}

// BenchmarkReadAnswer is the parsing alone: an answer's head read, its
// body read to the end, and the drain that Release runs, from memory.
func BenchmarkReadAnswer(b *testing.B) {
	chunk := strconv.FormatInt(int64(len(lateEvent)), 16) + "\r\n" + lateEvent + "\r\n"
	const result = `{"jsonrpc":"2.0","id":1,"result":{"content":[],"ok":true}}`
	for _, bc := range []struct{ name, answer string }{
		{"sse", "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\nMcp-Session-Id: s1\r\nDate: Sun, 06 Dec 2026 14:00:00 GMT\r\nTransfer-Encoding: chunked\r\n\r\n" + chunk + "0\r\n\r\n"},
		{"json", "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nMcp-Session-Id: s1\r\nDate: Sun, 06 Dec 2026 14:00:00 GMT\r\nContent-Length: " + strconv.Itoa(len(result)) + "\r\n\r\n" + result},
	} {
		b.Run(bc.name, func(b *testing.B) {
			answer := []byte(bc.answer)
			var r bytes.Reader
			br := bufio.NewReaderSize(&r, 8<<10)
			x := &Exchange{}
			var buf [512]byte
			b.ReportAllocs()
			for b.Loop() {
				r.Reset(answer)
				br.Reset(&r)
				if err := readHead(br, x); err != nil {
					b.Fatal(err)
				}
				for {
					_, err := x.Body.Read(buf[:])
					if err == io.EOF {
						break
					}
					if err != nil {
						b.Fatal(err)
					}
				}
				if x.Body.drainBuffered() != drainDone {
					b.Fatal("not drained")
				}
			}
		})
	}
}

// BenchmarkRequestWrite: the wire client's request written by hand
// (writeRequest) and the same request by fasthttp's Request.Write (the
// same headers; fasthttp's own order and spelling, within a few bytes).
func BenchmarkRequestWrite(b *testing.B) {
	p := NewConns("http://127.0.0.1:8080/mcp", map[string]string{"Authorization": "Bearer x"})
	s := Session{ID: "s1-abcdef0123456789", Protocol: SessionProtocol}
	var got [2][]byte
	b.Run("hand", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			head := GetBuffer()
			p.writeRequest(head, s, lateBody)
			io.Discard.Write(head.Bytes())
			got[0] = append(got[0][:0], head.Bytes()...)
			PutBuffer(head)
		}
	})
	b.Run("fasthttp", func(b *testing.B) {
		var req fasthttp.Request
		var out bytes.Buffer
		bw := bufio.NewWriterSize(&out, 4096)
		b.ReportAllocs()
		for b.Loop() {
			out.Reset()
			req.Reset()
			req.Header.SetMethod("POST")
			req.SetRequestURI("/mcp")
			req.Header.SetHost("127.0.0.1:8080")
			req.Header.SetUserAgent("reach")
			req.Header.SetContentType("application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set("Authorization", "Bearer x")
			req.Header.Set(HeaderSession, s.ID)
			req.Header.Set(HeaderProtocol, s.Protocol)
			req.SetBodyRaw(lateBody)
			if err := req.Write(bw); err != nil {
				b.Fatal(err)
			}
			bw.Flush()
			got[1] = append(got[1][:0], out.Bytes()...)
		}
	})
	if len(got[0]) > 0 && len(got[1]) > 0 && (len(got[1]) < len(got[0])-8 || len(got[1]) > len(got[0])+8) {
		b.Fatalf("not the same request:\n%s\n%s", got[0], got[1])
	}
}
