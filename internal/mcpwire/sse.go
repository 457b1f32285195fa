package mcpwire

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
	"time"
)

// MaxAnswer bounds one upstream answer (a variable for tests).
var MaxAnswer int64 = 64 << 20

// ReadJSONAnswer reads an application/json answer, of at most MaxAnswer
// bytes: one larger fails saying so (cut at the bound, it was "not a
// JSON-RPC message").
func ReadJSONAnswer(body io.Reader) (*Message, error) {
	buf := GetBuffer()
	defer PutBuffer(buf)
	if _, err := buf.ReadFrom(io.LimitReader(body, MaxAnswer+1)); err != nil {
		return nil, err
	}
	if int64(buf.Len()) > MaxAnswer {
		return nil, &TooLargeError{MaxAnswer}
	}
	msg := &Message{}
	if !ParseAnswer(buf.Bytes(), msg) {
		return nil, errors.New("the answer is not a JSON-RPC message")
	}
	return msg, nil
}

// TooLargeError is an answer larger than MaxAnswer (Limit): asking again
// gets one as large, so it is not a transient failure.
type TooLargeError struct{ Limit int64 }

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("the answer is larger than %d bytes", e.Limit)
}

// sseReaders holds the readers of SSE answers.
var sseReaders = sync.Pool{New: func() any { return &sseReader{br: bufio.NewReaderSize(nil, 4<<10)} }}

// sseReader is a pooled reader of an SSE answer, the limit it reads
// through and the line endings' translation (kept together, so that a call
// allocates none of them).
type sseReader struct {
	br      *bufio.Reader
	limited io.LimitedReader
	lines   lineFeeds
}

// lineFeeds reads r with every line ending the SSE format allows (CR LF, a
// lone LF, a lone CR) turned into one LF, so that lines split at LF alone.
// A CR inside a line is a line ending too, by the format: no byte of an
// event's field is lost.
type lineFeeds struct {
	r       io.Reader
	afterCR bool // the last byte read was a CR: an LF right after it is its pair
}

func (l *lineFeeds) Read(p []byte) (int, error) {
	for {
		n, err := l.r.Read(p)
		if n == 0 {
			return 0, err
		}
		i := bytes.IndexByte(p[:n], '\r')
		if i < 0 && !l.afterCR {
			return n, err
		}
		if i < 0 || l.afterCR {
			i = 0
		}
		w := i
		for _, c := range p[i:n] {
			if c == '\n' && l.afterCR {
				l.afterCR = false
				continue
			}
			l.afterCR = c == '\r'
			if l.afterCR {
				c = '\n'
			}
			p[w] = c
			w++
		}
		if w > 0 || err != nil {
			return w, err
		}
		// Only the LF of a CR LF split across two reads: read on rather
		// than answer with nothing.
	}
}

// ReadSSE reads an SSE answer (at most MaxAnswer bytes an event) and hands each
// JSON-RPC message of its events to each, in the order they come, until
// each reports true: that message is returned. Events that hold no
// JSON-RPC message are skipped. Lines end with LF, CR LF or a lone CR, as
// the SSE format allows, mixed as they come.
//
// cur follows the stream's event ids and the reconnection delay the
// upstream asks for; a stream that ends before each took a message, after
// an event with an id, ends with ErrStreamClosed, and the caller may
// resume it from cur.
func ReadSSE(body io.Reader, cur *SSECursor, each func(*Message) bool) (*Message, error) {
	msg := new(Message)
	if err := ReadSSEInto(body, cur, msg, each); err != nil {
		return nil, err
	}
	return msg, nil
}

// ReadSSEInto is ReadSSE reading each message into msg, the caller's (a
// call's state, made once for the call): each sees its ID, Params and
// Result as slices of a buffer the next event reuses (it copies what it
// keeps), and the message each takes owns one copy of its event's data,
// which they are slices of: one allocation, not one for its result and
// another for its id, nor one for the message itself.
func ReadSSEInto(body io.Reader, cur *SSECursor, msg *Message, each func(*Message) bool) error {
	sr := sseReaders.Get().(*sseReader)
	br, limited := sr.br, &sr.limited
	*limited = io.LimitedReader{R: body, N: MaxAnswer}
	sr.lines = lineFeeds{r: limited}
	br.Reset(&sr.lines)
	data := GetBuffer()
	defer func() {
		br.Reset(nil)
		*limited = io.LimitedReader{}
		sr.lines = lineFeeds{}
		sseReaders.Put(sr)
		PutBuffer(data)
	}()
	var long []byte // a line longer than br's buffer
	first := true   // the stream's first line, which may begin with a byte order mark
	for {
		line, err := br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			long = append(long, line...)
			continue
		}
		if len(long) > 0 {
			long = append(long, line...)
			line = long
			long = long[:0]
		}
		if err != nil {
			// The end, in an event or between two: what the event had so far
			// is dropped, as a browser drops it.
			switch {
			case err != io.EOF:
			case limited.N <= 0:
				err = &TooLargeError{MaxAnswer}
			case cur.LastID != "":
				err = ErrStreamClosed
			default:
				err = io.ErrUnexpectedEOF
			}
			return err
		}
		line = line[:len(line)-1] // its LF (every line ending is one, see lineFeeds)
		if first {
			// A byte order mark that begins the stream is dropped, as the
			// SSE format has it: the line is a field's all the same.
			line, first = bytes.TrimPrefix(line, byteOrderMark), false
		}
		if len(line) > 0 {
			if v, ok := bytes.CutPrefix(line, []byte("data:")); ok {
				if data.Len() > 0 {
					data.WriteByte('\n')
				}
				data.Write(bytes.TrimPrefix(v, []byte(" ")))
			} else {
				cur.field(line)
			}
			continue
		}
		cur.LastID = cur.idBuf // the event is complete: its id counts
		// The bound is of one event (and what the reader holds read ahead,
		// at most its buffer), not of the stream: a call's progress and
		// log events may come for as long as it runs.
		limited.N = MaxAnswer
		if data.Len() == 0 {
			continue
		}
		*msg = Message{}
		d := data.Bytes()
		ok := json.Valid(d) && parseMessage(d, msg, true, false)
		if ok && each(msg) {
			// ID, Params and Result are slices of data, which goes back
			// to its pool on return: the message taken owns a copy of
			// the event's data, and they are slices of that.
			own := bytes.Clone(d)
			msg.ID, msg.Params, msg.Result = sliceOf(own, d, msg.ID), sliceOf(own, d, msg.Params), sliceOf(own, d, msg.Result)
			data.Reset()
			return nil
		}
		data.Reset()
	}
}

// sliceOf returns the part of own, a copy of d, that s is of d (s a
// slice d[i:j] of it, or nil): a slice of d shares the end of its
// capacity, so cap(d)-cap(s) is where it starts.
func sliceOf(own, d, s []byte) []byte {
	if s == nil {
		return nil
	}
	i := cap(d) - cap(s)
	return own[i : i+len(s) : i+len(s)]
}

// SSECursor is how far an SSE answer got: the id of the last event and the
// reconnection delay the upstream asked for (the SSE "id" and "retry"
// fields), to resume the stream when the upstream closes it before
// answering (SEP-1699). The zero SSECursor is the start of a stream.
type SSECursor struct {
	LastID string        // of the last complete event: where to resume
	Retry  time.Duration // the delay the upstream asked for, capped at MaxResumeDelay
	idBuf  string        // the id field last read; it counts once its event is complete
}

// field takes in a line of an event that is not data, as a browser does:
// "id" sets the id (an empty one resets it; one with a NUL is ignored),
// "retry" with only digits sets the delay.
func (c *SSECursor) field(line []byte) {
	name, v, _ := bytes.Cut(line, []byte(":"))
	v = bytes.TrimPrefix(v, []byte(" "))
	switch string(name) {
	case "id":
		if bytes.IndexByte(v, 0) < 0 && len(v) <= MaxEventID {
			c.idBuf = string(v)
		}
	case "retry":
		ms, err := strconv.ParseUint(string(v), 10, 64)
		switch {
		case err == nil:
			c.Retry = time.Duration(min(ms, uint64(MaxResumeDelay/time.Millisecond))) * time.Millisecond
		case errors.Is(err, strconv.ErrRange):
			c.Retry = MaxResumeDelay
		}
	}
}

// ErrStreamClosed ends an SSE answer the upstream closed, after an event
// with an id, without the response: it can be resumed.
var ErrStreamClosed = errors.New("the upstream closed the stream before answering")

// Bounds of reading and resuming SSE answers.
const (
	MaxEventID     = 1024                  // a longer event id is ignored
	MaxResumes     = 100                   // reconnections of one call's stream
	MinResumeDelay = 50 * time.Millisecond // between two reconnections, whatever the upstream asks
	MaxResumeDelay = 30 * time.Second      // and at most
)

// ResumeDelay is how long to wait before resuming a stream at cur.
func (c *SSECursor) ResumeDelay() time.Duration {
	return min(max(c.Retry, MinResumeDelay), MaxResumeDelay)
}

// byteOrderMark is UTF-8's byte order mark.
var byteOrderMark = []byte("\xEF\xBB\xBF")
