package store

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
)

// keptCompactLines is how many lines the kept file (KeepFile) holds before
// it is rewritten with only what is still kept, once it holds four times
// as many lines as that: the lines of completions the store took since
// stay in it until nothing is kept (journalDone), and a store that keeps
// refusing one while it takes the others grew it with every completion it
// refused for as long as that lasted, for the next start to read whole.
var keptCompactLines = 2 * keptEntries

// keptCompactSuffix names the copy compact writes next to the kept file
// before renaming it over it; KeepFile removes one a kill left.
const keptCompactSuffix = ".compact"

// compact rewrites the kept file with the lines of what is kept now, when
// it holds many more: written to a file next to it, synced, then renamed
// over it, so that a kill leaves either file, each with every line still
// kept. A line kept meanwhile may be in both (RestoreKept drops the second
// write: a conflict). Called with fmu held, after a line is appended; a
// file a line could not be written to (fileBroken) is left as it is, and
// so is one whose rewrite fails (logged).
func (s *Idempotency) compact() {
	if s.file == "" || s.fileBroken || s.fileLines < keptCompactLines {
		return
	}
	if s.fileLines < 4*s.keptLen() {
		return
	}
	keys, ends := s.kept.Keys(), s.endsKept()
	var b bytes.Buffer
	n := 0
	add := func(l keptLine) bool {
		line, err := json.Marshal(l)
		if err != nil {
			s.log.Warn("idempotency: the kept completions' file was not rewritten", "err", err)
			return false
		}
		b.Write(line)
		b.WriteByte('\n')
		n++
		return true
	}
	for _, f := range ends { // before the completions, as SaveKept writes them
		if !add(keptLine{Owner: s.owner, End: f}) {
			return
		}
	}
	for _, key := range keys {
		e, ok := s.kept.Get(key)
		if ok && !add(keptLine{Owner: s.owner, Key: key, Args: e.Args, Result: e.Result, Expires: e.Expires}) {
			return
		}
	}
	tmp := s.file + keptCompactSuffix
	err := writeSynced(tmp, b.Bytes())
	if err == nil {
		err = os.Rename(tmp, s.file)
	}
	if err != nil {
		os.Remove(tmp)
		s.log.Warn("idempotency: the kept completions' file could not be rewritten with only what is still kept; it grows on", "lines", s.fileLines, "kept", n, "err", err)
		return
	}
	if d, err := os.Open(filepath.Dir(s.file)); err == nil {
		d.Sync() // the rename, durable
		d.Close()
	}
	s.fileLines = n
}

// writeSynced writes b to path (0600, truncated) and syncs it.
func writeSynced(path string, b []byte) error { return fileSynced(path, os.O_TRUNC, b) }
