package upstream

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/agentreach/reach/internal/mcpwire"
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

	// exited is closed once the process was waited for, its exit then in
	// state; made by Connect.
	exited chan struct{}
	state  *os.ProcessState
}

// exitState returns the process's exit, waiting for it at most wait; nil
// if it has not exited by then (or never started).
func (t *commandTransport) exitState(wait time.Duration) *os.ProcessState {
	if t.exited == nil {
		return nil
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case <-t.exited:
		return t.state
	case <-timer.C:
		return nil
	}
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
	t.exited = make(chan struct{})
	lines := &jsonLines{r: bufio.NewReaderSize(stdout, 64<<10), log: t.log, max: mcpwire.MaxAnswer}
	// The SDK reads a message of at most MaxLineLength bytes (16 MiB by
	// default) and ends the connection past it, every call on it failing
	// as unreachable. jsonLines passes on no line longer than max and its
	// newline, so the SDK's bound is set past it.
	tr := &mcp.IOTransport{Reader: nopCloser{lines}, Writer: &stdinCloser{WriteCloser: stdin, cmd: t.cmd, grace: t.grace, t: t},
		MaxLineLength: int(lines.max) + 2}
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
	t     *commandTransport // told of the exit
}

func (s *stdinCloser) Close() error {
	if err := s.WriteCloser.Close(); err != nil {
		return fmt.Errorf("closing stdin: %w", err)
	}
	exited := make(chan error, 1)
	go func() {
		err := s.cmd.Wait()
		if s.t != nil {
			s.t.state = s.cmd.ProcessState
			close(s.t.exited)
		}
		exited <- err
	}()
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
// JSON-RPC messages, each ending in a newline. A line longer than max
// (mcpwire.MaxAnswer, the bound of an HTTP upstream's answer) is not kept:
// it is read on to its end, nothing of it kept but its id (a response may
// put its id after its result, as the TypeScript SDK's do), and a response
// is passed on as an error response to its call (tooLargeAnswer) that
// forward turns into too_large; any other line that long is dropped. The
// upstream's other calls go on: its stdout is framed by lines, and the line
// after the one skipped is the next message.
// Safe for one reader.
type jsonLines struct {
	r       *bufio.Reader
	log     *slog.Logger
	max     int64
	pending []byte // what is left to return of a line passed on
}

func (j *jsonLines) Read(p []byte) (int, error) {
	for len(j.pending) == 0 {
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
		n := int64(len(buf) + len(chunk))
		if err == nil {
			n-- // the newline
		}
		if n > j.max {
			return j.tooLong(buf, chunk, err)
		}
		buf = append(buf, chunk...)
		if err == bufio.ErrBufferFull {
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

// tooLong reads the rest of a line longer than j.max, of which buf and
// chunk were read (err the error of reading chunk), keeping none of it: it
// returns the error response that takes its place if the line is a
// response, else nil (dropped).
func (j *jsonLines) tooLong(buf, chunk []byte, err error) ([]byte, error) {
	var s idScan
	s.feed(buf)
	s.feed(chunk)
	for err == bufio.ErrBufferFull {
		chunk, err = j.r.ReadSlice('\n')
		s.feed(chunk)
	}
	if id := s.responseID(); id != nil {
		j.log.Warn("upstream answered with a message larger than reach passes on; its call fails as too_large", "bound", j.max, "id", string(id))
		return tooLargeAnswer(id, j.max), err
	}
	j.log.Warn("upstream wrote a line to stdout larger than reach reads of a message, and no response; skipped", "bound", j.max)
	return nil, err
}

// codeTooLarge and tooLargeData mark the error response jsonLines passes
// on in place of a response larger than it passes on; callError turns it
// into too_large. An upstream could send it too: it only makes its own
// call's failure permanent, as an error it answers does.
const codeTooLarge = -32001

var tooLargeData = json.RawMessage(`{"reach":"too_large"}`)

// tooLargeAnswer is the error response to call id whose answer is larger
// than max bytes.
func tooLargeAnswer(id []byte, max int64) []byte {
	msg, _ := json.Marshal(fmt.Sprintf("the upstream's answer is larger than %d bytes", max))
	return fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%s,"error":{"code":%d,"message":%s,"data":%s}}`+"\n", id, codeTooLarge, msg, tooLargeData)
}

// isTooLarge reports whether we is the error response jsonLines passed on
// in place of an answer too large (tooLargeAnswer).
func isTooLarge(we *jsonrpc.Error) bool {
	return we.Code == codeTooLarge && bytes.Equal(we.Data, tooLargeData)
}

// idScan reads a JSON object as it comes, in pieces, keeping nothing of it
// but its top-level "id" (128 bytes at most) and whether it has a top-level
// "method": what tells a response and its call. Keys match as
// encoding/json matches them (escapes decoded, case folded), the last of
// a key repeated counting.
type idScan struct {
	started, ended, bad bool
	depth               int
	inStr, esc          bool
	inKey, expectKey    bool
	key                 []byte // the raw key being read, up to 64 bytes
	member              string // "id" or "method" while its value is read, else ""
	id                  []byte
	idRead, hasMethod   bool
}

func (s *idScan) feed(b []byte) {
	for i := 0; i < len(b); i++ {
		if s.bad {
			return
		}
		if s.inStr && !s.esc && !s.inKey && s.member != "id" { // inside a string nothing is kept of
			k := bytes.IndexAny(b[i:], `"\`)
			if k < 0 {
				return
			}
			i += k
		}
		s.step(b[i])
	}
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func (s *idScan) step(c byte) {
	if !s.started || s.ended {
		if isSpace(c) {
			return
		}
		if s.ended || c != '{' {
			s.bad = true
			return
		}
		s.started, s.depth, s.expectKey = true, 1, true
		return
	}
	valueEnds := !s.inStr && s.depth == 1 && (c == ',' || c == '}')
	if s.member == "id" && !valueEnds {
		if len(s.id) < 128 {
			s.id = append(s.id, c)
		} else {
			s.id = append(s.id[:0], '!') // too long to be an id reach sent
		}
	}
	if s.inStr {
		switch {
		case s.esc:
			s.esc = false
		case c == '\\':
			s.esc = true
		case c == '"':
			s.inStr = false
			if s.inKey {
				s.inKey = false
				return
			}
		}
		if s.inKey && len(s.key) < 64 {
			s.key = append(s.key, c)
		}
		return
	}
	switch c {
	case '"':
		s.inStr = true
		if s.depth == 1 && s.expectKey {
			s.inKey, s.expectKey, s.key = true, false, s.key[:0]
		}
	case ':':
		if s.depth == 1 && s.member == "" {
			var k string
			if json.Unmarshal(append(append([]byte{'"'}, s.key...), '"'), &k) == nil {
				switch {
				case strings.EqualFold(k, "id"):
					s.member, s.id, s.idRead = "id", s.id[:0], false
				case strings.EqualFold(k, "method"):
					s.hasMethod = true
				}
			}
			if s.member == "" {
				s.member = "-"
			}
		}
	case '{', '[':
		s.depth++
	case '}', ']':
		s.depth--
		if s.depth == 0 {
			s.ended = true
		}
		if s.depth < 0 {
			s.bad = true
		}
	}
	if valueEnds {
		if s.member == "id" {
			s.idRead = true
		}
		s.member = ""
		s.expectKey = c == ','
	}
}

// responseID returns the id of the object read, if it is a whole object
// with an id (a string or a number) and no method: a response.
func (s *idScan) responseID() []byte {
	if s.bad || !s.ended || !s.idRead || s.hasMethod {
		return nil
	}
	id := bytes.TrimSpace(s.id)
	if len(id) == 0 || !json.Valid(id) || (id[0] != '"' && id[0] != '-' && (id[0] < '0' || id[0] > '9')) {
		return nil
	}
	return id
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
