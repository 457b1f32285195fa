package upstream

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os/exec"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A stdio upstream may write to stdout what is not a message: a banner, a
// log line, a blank line. The SDK's command transport reads stdout with one
// JSON decoder, which stops at the first such byte, and the upstream is
// never reachable; the reference clients skip the line and read on. So
// commandTransport runs the command itself and the SDK reads its stdout
// through jsonLines, which passes on the lines that are JSON-RPC messages
// and logs and drops the others.

// commandTransport is the SDK's command transport with stdout filtered.
type commandTransport struct {
	cmd   *exec.Cmd
	grace time.Duration // how long the process has to exit after stdin closes, then after SIGTERM
	log   *slog.Logger
}

func (t *commandTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	stdout, err := t.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	stdin, err := t.cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	if err := t.cmd.Start(); err != nil {
		return nil, err
	}
	lines := &jsonLines{r: bufio.NewReaderSize(stdout, 64<<10), log: t.log}
	tr := &mcp.IOTransport{Reader: nopCloser{lines}, Writer: &stdinCloser{WriteCloser: stdin, cmd: t.cmd, grace: t.grace}}
	return tr.Connect(ctx)
}

type nopCloser struct{ io.Reader }

func (nopCloser) Close() error { return nil } // the process ends by closing stdin

// stdinCloser ends the process on Close as the MCP specification asks of a
// client: close its stdin, wait, SIGTERM, wait, SIGKILL.
type stdinCloser struct {
	io.WriteCloser
	cmd   *exec.Cmd
	grace time.Duration
}

func (s *stdinCloser) Close() error {
	if err := s.WriteCloser.Close(); err != nil {
		return fmt.Errorf("closing stdin: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- s.cmd.Wait() }()
	waitExit := func() (error, bool) {
		t := time.NewTimer(s.grace)
		defer t.Stop()
		select {
		case err := <-exited:
			return err, true
		case <-t.C:
			return nil, false
		}
	}
	if err, ok := waitExit(); ok {
		return err
	}
	if s.cmd.Process.Signal(syscall.SIGTERM) == nil {
		if err, ok := waitExit(); ok {
			return err
		}
	}
	if err := s.cmd.Process.Kill(); err != nil {
		return err
	}
	if err, ok := waitExit(); ok {
		return err
	}
	return errors.New("the upstream's process does not exit")
}

// jsonLines reads an upstream's stdout and returns its lines that are
// JSON-RPC messages, each ending in a newline. A line longer than
// mcp.DefaultMaxLineLength is passed on as it is (the SDK refuses it).
// Safe for one reader.
type jsonLines struct {
	r       *bufio.Reader
	log     *slog.Logger
	pending []byte // what is left to return of a line passed on
	long    bool   // passing on the rest of a line too long to check
}

func (j *jsonLines) Read(p []byte) (int, error) {
	for len(j.pending) == 0 {
		if j.long {
			chunk, err := j.r.ReadSlice('\n')
			if err == nil || len(chunk) > 0 {
				j.long = err == bufio.ErrBufferFull
				j.pending = append(j.pending[:0], chunk...)
				continue
			}
			return 0, err
		}
		line, err := j.line()
		if line != nil {
			j.pending = line
			continue
		}
		if err != nil {
			return 0, err
		}
	}
	n := copy(p, j.pending)
	j.pending = j.pending[n:]
	return n, nil
}

// line reads the next line and returns it if it is to be passed on; nil
// for a line dropped.
func (j *jsonLines) line() ([]byte, error) {
	var buf []byte
	for {
		chunk, err := j.r.ReadSlice('\n')
		buf = append(buf, chunk...)
		if err == bufio.ErrBufferFull {
			if len(buf) > mcp.DefaultMaxLineLength {
				j.long = true
				return buf, nil
			}
			continue
		}
		if err != nil && len(buf) == 0 {
			return nil, err
		}
		if j.message(buf) {
			if buf[len(buf)-1] != '\n' {
				buf = append(buf, '\n')
			}
			return buf, err
		}
		if len(bytes.TrimSpace(buf)) > 0 {
			shown := bytes.TrimSpace(buf)
			if len(shown) > 200 {
				shown = shown[:200]
			}
			j.log.Warn("upstream wrote a line to stdout that is not a JSON-RPC message; skipped (write logs to stderr)", "line", string(shown))
		}
		return nil, err
	}
}

// message reports whether a line is a JSON-RPC message. A batch is not:
// the protocol reach speaks to upstreams (mcpwire.SessionProtocol) has
// none, and the SDK closed the connection on one.
func (j *jsonLines) message(line []byte) bool {
	line = bytes.TrimSpace(line)
	if len(line) == 0 || line[0] != '{' {
		return false
	}
	_, err := jsonrpc.DecodeMessage(line)
	return err == nil
}
