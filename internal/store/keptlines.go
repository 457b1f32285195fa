package store

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
)

// keptLineMax is the longest line of a kept file that RestoreKept reads
// into memory: twice what every kept result together may hold (keptBytes),
// more than any line KeepFile or SaveKept writes. A longer line (forged,
// or two glued together) is not read whole but moved aside as it streams
// by, with the lines it cannot read. A variable for tests.
var keptLineMax = 2 * keptBytes

// keptReadBuffer is the size of the buffer the kept file is read through.
const keptReadBuffer = 64 << 10

// scanKept reads r line by line ('\n' ends a line, which line and long are
// given without it; a last line with no '\n' is a line too). A line of at
// most max bytes is given to line whole, in a buffer reused for the next;
// a longer one is given to long as it is read, a chunk at a time, with end
// true on its last chunk (which may be empty). It holds no more than max
// bytes, and a buffer, whatever r holds. It stops at the first error of
// line or long, or of r, and returns it.
func scanKept(r io.Reader, max int, line func([]byte) error, long func(chunk []byte, end bool) error) error {
	br := bufio.NewReaderSize(r, keptReadBuffer)
	var buf []byte
	overlong := false
	for {
		chunk, err := br.ReadSlice('\n')
		complete := err == nil // chunk ends with '\n'
		if err != nil && err != bufio.ErrBufferFull && err != io.EOF {
			return err
		}
		if complete {
			chunk = chunk[:len(chunk)-1]
		}
		eof := err == io.EOF
		if eof && len(chunk) == 0 && len(buf) == 0 && !overlong {
			return nil // the file ends with its last line's '\n' (or is empty)
		}
		ends := complete || eof
		switch {
		case overlong:
			if e := long(chunk, ends); e != nil {
				return e
			}
		case len(buf)+len(chunk) > max:
			overlong = true
			if len(buf) > 0 {
				if e := long(buf, false); e != nil {
					return e
				}
			}
			if e := long(chunk, ends); e != nil {
				return e
			}
			buf = buf[:0]
		case ends:
			if len(buf) > 0 {
				buf = append(buf, chunk...)
				chunk = buf
			}
			if e := line(chunk); e != nil {
				return e
			}
			buf = buf[:0]
		default:
			buf = append(buf, chunk...)
		}
		if ends {
			overlong = false
		}
		if eof {
			return nil
		}
	}
}

// keptSpool is where RestoreKept writes the lines of a kept file it cannot
// read as it reads them, each ended by '\n', for them to be moved aside
// (KeptAside) once the others are written: a file next to it, made at the
// first such line (and emptied: a start killed while it wrote left one).
type keptSpool struct {
	path  string
	f     *os.File
	lines int
	err   error // the first write that failed: the spool is of no use then
}

// keptSpoolSuffix names the spool next to a kept file. Not ".jsonl" at
// the end: that of a kept file (see KeptAside).
const keptSpoolSuffix = ".unreadable-part"

// write appends b to the spool, and '\n' when end (the line's last part).
func (p *keptSpool) write(b []byte, end bool) {
	if p.err != nil {
		return
	}
	if p.f == nil {
		p.f, p.err = os.OpenFile(p.path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
		if p.err != nil {
			return
		}
	}
	if _, p.err = p.f.Write(b); p.err == nil && end {
		_, p.err = p.f.Write([]byte{'\n'})
		p.lines++
	}
}

// moveAside appends what the spool holds to aside (synced, 0600), unless
// aside ends with it already (a start killed after this append, before it
// removed the kept file, read those lines again), and removes the spool.
func (p *keptSpool) moveAside(aside string) error {
	if p.err != nil {
		return p.err
	}
	if err := p.f.Sync(); err != nil {
		return err
	}
	size, err := p.f.Seek(0, io.SeekEnd)
	if err != nil {
		return err
	}
	if same, err := endsWith(aside, p.f, size); err != nil || same {
		return err
	}
	if _, err := p.f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	a, err := os.OpenFile(aside, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(a, p.f); err != nil {
		a.Close()
		return err
	}
	if err := a.Sync(); err != nil {
		a.Close()
		return err
	}
	return a.Close()
}

// endsWith reports whether the file path ends with the size bytes of f
// (from its start), read a buffer at a time; a path that is missing does
// not.
func endsWith(path string, f *os.File, size int64) (bool, error) {
	a, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	defer a.Close()
	fi, err := a.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return false, err // a folder, or another odd file: appending to it says what is wrong
	}
	if fi.Size() < size {
		return false, nil
	}
	x, y := make([]byte, keptReadBuffer), make([]byte, keptReadBuffer)
	for off := int64(0); off < size; {
		n := int(min(int64(len(x)), size-off))
		if _, err := a.ReadAt(x[:n], fi.Size()-size+off); err != nil {
			return false, err
		}
		if _, err := f.ReadAt(y[:n], off); err != nil {
			return false, err
		}
		if !bytes.Equal(x[:n], y[:n]) {
			return false, nil
		}
		off += int64(n)
	}
	return true, nil
}

// close closes the spool and removes it.
func (p *keptSpool) remove() {
	if p.f != nil {
		p.f.Close()
		p.f = nil
	}
	os.Remove(p.path)
}

// keep makes the spool the kept file path, in its place (the lines that
// could not be moved aside stay there, alone: the others are written).
func (p *keptSpool) keep(path string) error {
	if p.err != nil {
		return p.err
	}
	if err := p.f.Sync(); err != nil {
		return err
	}
	if err := p.f.Close(); err != nil {
		return err
	}
	p.f = nil
	return os.Rename(p.path, path)
}
