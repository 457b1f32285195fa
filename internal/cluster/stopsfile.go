package cluster

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/crashpoint"
	"github.com/agentreach/reach/internal/durable"
	"github.com/agentreach/reach/internal/store"
)

// filedStop is one line of Options.StopsFile: a stop of request Request
// that the store refused, with its cause (durable.EncodeCause).
type filedStop struct {
	Request string          `json:"request"`
	Mode    int             `json:"mode"`
	Cause   json.RawMessage `json:"cause"`
}

// fileStop appends the stop of request id with cause to the stops file,
// synced, so that a kill before the store takes it does not lose it: the
// next start stores it (restoreStops). A stop that cannot be written is
// logged and kept in memory only, as before. Called with fileMu held,
// and not c.mu: the append and its sync wait on the disk, and the file's
// removal (unfileStops) waits for them.
func (c *Cluster) fileStop(id string, cause reach.Cause) {
	if c.stopsFile == "" {
		return
	}
	line, err := json.Marshal(filedStop{Request: id, Mode: int(cause.Mode), Cause: durable.EncodeCause(cause)})
	if err == nil {
		err = appendStop(c.stopsFile, append(line, '\n'))
	}
	if err != nil {
		c.log.Error("cluster: a stop the store refused could not be kept in the data folder either: if this instance dies before the store takes it, the stop is lost",
			"request", id, "file", filepath.Base(c.stopsFile), "err", err)
	}
}

// appendStop appends a line to the stops file, synced; a test makes it
// wait.
var appendStop = store.AppendSynced

// unfileStops removes the stops file once every stop in it was stored:
// none kept in memory, none an earlier life left. Called with neither
// c.mu nor fileMu held: it takes fileMu, so a stop being filed
// (keepStop) is either kept by then, and the file stays, or filed after
// the removal.
func (c *Cluster) unfileStops() {
	if c.stopsFile == "" {
		return
	}
	c.fileMu.Lock()
	defer c.fileMu.Unlock()
	c.mu.Lock()
	kept := len(c.unstored) > 0 || len(c.filed) > 0
	c.mu.Unlock()
	if kept {
		return
	}
	if err := os.Remove(c.stopsFile); err != nil && !errors.Is(err, os.ErrNotExist) {
		c.log.Warn("cluster: removing the file of stops kept, all stored", "file", filepath.Base(c.stopsFile), "err", err)
	}
}

// restoreStops reads the stops an earlier life of this instance left in
// the stops file (killed before the store took them) and stores them
// (storeFiled); those the store refuses now are stored again after each
// heartbeat it takes. Call it before any recovery: the dead life's part
// of a stopped request is then recovered as stopped.
func (c *Cluster) restoreStops(ctx context.Context) {
	if c.stopsFile == "" {
		return
	}
	c.fileMu.Lock() // no line half-appended is read
	f, err := os.Open(c.stopsFile)
	if errors.Is(err, os.ErrNotExist) {
		c.fileMu.Unlock()
		return
	}
	if err != nil {
		c.fileMu.Unlock()
		c.log.Error("cluster: reading the stops an earlier life kept", "file", filepath.Base(c.stopsFile), "err", err)
		return
	}
	filed, err := readStops(f, func(n int, err error) {
		// A line a kill cut short: its stop was not durable.
		c.log.Warn("cluster: a line of the stops an earlier life kept could not be read; skipped", "file", filepath.Base(c.stopsFile), "line", n, "err", err)
	})
	f.Close()
	c.fileMu.Unlock()
	if err != nil {
		c.log.Error("cluster: reading the stops an earlier life kept", "file", filepath.Base(c.stopsFile), "err", err)
	}
	c.mu.Lock()
	c.filed = append(c.filed, filed...)
	c.mu.Unlock()
	c.storeFiled(ctx)
}

// maxStopLine bounds a line of the stops file: a stop's request id, its
// principal and its reason are bounded far below it.
const maxStopLine = 1 << 20

// readStops reads the lines of a stops file (fileStop), skipping, with
// skipped, each that is not a stop (a line a kill cut short, one longer
// than maxStopLine); an error ends the read (a read that failed), with the
// stops read before it.
func readStops(r io.Reader, skipped func(line int, err error)) ([]filedStop, error) {
	var filed []filedStop
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), maxStopLine)
	// A line that fills the scanner's buffer with no end is passed over to
	// its end and told as one token, long: the lines after it are read.
	skipping, long := false, false
	sc.Split(func(data []byte, atEOF bool) (int, []byte, error) {
		if skipping {
			i := bytes.IndexByte(data, '\n')
			switch {
			case i >= 0:
				skipping, long = false, true
				return i + 1, []byte{}, nil
			case atEOF:
				skipping, long = false, true
				return len(data), []byte{}, nil
			}
			return len(data), nil, nil
		}
		adv, tok, err := bufio.ScanLines(data, atEOF)
		if adv == 0 && tok == nil && err == nil && len(data) >= maxStopLine {
			skipping = true
			return len(data), nil, nil
		}
		return adv, tok, err
	})
	for n := 1; sc.Scan(); n++ {
		if long {
			long = false
			skipped(n, fmt.Errorf("the line is longer than %d bytes", maxStopLine))
			continue
		}
		var l filedStop
		err := json.Unmarshal(sc.Bytes(), &l)
		if err == nil && l.Request == "" {
			err = errors.New("the line names no request")
		}
		if err != nil {
			skipped(n, err)
			continue
		}
		filed = append(filed, l)
	}
	return filed, sc.Err()
}

// storeFiled stores the stops an earlier life left (restoreStops), unless
// the request ended meanwhile (its writes are not undone then); the file
// goes once they and this life's kept stops are all stored.
func (c *Cluster) storeFiled(ctx context.Context) {
	c.mu.Lock()
	filed := c.filed
	c.mu.Unlock()
	if len(filed) == 0 {
		return
	}
	var left []filedStop
	for _, l := range filed {
		changed, ended, err := c.st.StopOpenRequest(ctx, l.Request, l.Mode, l.Cause)
		if err != nil {
			c.log.Warn("cluster: storing a stop an earlier life kept failed; tried again after the next heartbeat", "request", l.Request, "err", err)
			left = append(left, l)
			continue
		}
		switch {
		case ended:
			c.log.Warn("cluster: a stop an earlier life kept came after its request ended; dropped", "request", l.Request)
		case changed:
			c.log.Info("cluster: a stop an earlier life kept, which the store had refused, is stored", "request", l.Request)
		}
		crashpoint.Reached("stops.restored") // a kill here: the next start stores it again, changing nothing
	}
	c.mu.Lock()
	c.filed = append(left, c.filed[len(filed):]...)
	c.mu.Unlock()
	c.unfileStops()
}
