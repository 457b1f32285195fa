// Package pin pins upstream tool definitions (P7): the first time reach sees
// a tool its definition (title, description, schemas, annotations) is
// hashed and kept; a later, different definition is held until a human
// approves it, so an upstream server cannot change what a tool says or takes
// behind the users' backs (a "rug pull").
//
//	pins, _ := pin.OpenStore(ctx, st, pin.Path(dataDir)) // in the store (a pins.json there is imported once)
//	pins, _ := pin.Open(pin.Path(dataDir))                // or in the file
//	switch st, _ := pins.Check(name, pin.Definition{Description: t.Description, InputSchema: t.InputSchema}); st {
//	case pin.Held: // keep the tool out of listings and refuse its calls until `reach tools approve NAME`
//	}
package pin

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agentreach/reach/internal/atomicfile"
	"github.com/agentreach/reach/internal/callgraph"
	"github.com/agentreach/reach/internal/crashpoint"
	"github.com/agentreach/reach/internal/store"
)

// File is the name of the pin file in the data folder.
const File = "pins.json"

// Path returns the pin file of a data folder.
func Path(dataDir string) string { return filepath.Join(dataDir, File) }

// Definition is what is pinned of a tool.
type Definition struct {
	Title        string          `json:"title,omitempty"`
	Description  string          `json:"description"`
	InputSchema  json.RawMessage `json:"input_schema,omitempty"`
	OutputSchema json.RawMessage `json:"output_schema,omitempty"`
	Annotations  json.RawMessage `json:"annotations,omitempty"`
	// Icons are the tool's icons, which clients show with it (and fetch
	// from their URLs).
	Icons json.RawMessage `json:"icons,omitempty"`
}

// canonical returns the definition with its JSON parts in canonical form
// (keys sorted, no spacing), so that layout changes are not changes.
func (d Definition) canonical() (Definition, error) {
	for _, p := range []*json.RawMessage{&d.InputSchema, &d.OutputSchema, &d.Annotations, &d.Icons} {
		if len(bytes.TrimSpace(*p)) == 0 {
			*p = nil
			continue
		}
		c, err := callgraph.Normalize(nil, *p)
		if err != nil {
			return d, err
		}
		*p = c
	}
	return d, nil
}

// Hash returns the hex SHA-256 of the canonical definition.
func (d Definition) Hash() (string, error) {
	c, err := d.canonical()
	if err != nil {
		return "", fmt.Errorf("hashing a tool definition: %w", err)
	}
	b, _ := json.Marshal(c)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}

// Pin is a pinned tool and the change waiting for approval, if any.
type Pin struct {
	Tool       string     `json:"tool"`
	Hash       string     `json:"sha256"`
	Definition Definition `json:"definition"`
	Pinned     time.Time  `json:"pinned"`
	// ApprovedBy is who approved the definition pinned, "" when it was
	// pinned at first sight.
	ApprovedBy string  `json:"approved_by,omitempty"`
	Pending    *Change `json:"pending,omitempty"`
	// IconsPinned says the pin covers the tool's icons: every pin made
	// or approved since icons are pinned. A pin without it was made
	// before: the icons a tool has when it is next checked, the rest of
	// it as pinned, are pinned then (as at first sight).
	IconsPinned bool `json:"icons_pinned,omitempty"`
	// Upstream is the configured name of the upstream that lists it, as
	// the gateway last listed it ("" for a pin made before pins said so,
	// until it is listed again).
	Upstream string `json:"upstream,omitempty"`
	// Unlisted is since when its upstream's listing no longer has it (nil
	// while it is listed). The pin is kept while its upstream is
	// configured, so that a definition that comes back changed is held;
	// it is dropped with its upstream (Forget).
	Unlisted *time.Time `json:"unlisted,omitempty"`
}

// Change is a definition seen that differs from the pinned one.
type Change struct {
	Hash       string     `json:"sha256"`
	Definition Definition `json:"definition"`
	Seen       time.Time  `json:"seen"`
}

// Status is what Check found.
type Status string

// Statuses.
const (
	New       Status = "new"       // first seen: pinned now
	Unchanged Status = "unchanged" // as pinned
	Held      Status = "held"      // changed: held until approved
)

// ErrNoPin is returned for a tool that is not pinned or has no change.
var ErrNoPin = errors.New("no such pinned tool")

// Store keeps pins in the gateway's store (OpenStore), or in a JSON file
// (Open; mode 0600, written atomically). It follows changes other
// processes make (`reach tools approve` while the gateway runs): every
// operation looks at the pins' version, or the file, first. Safe for
// concurrent use.
type Store struct {
	path string
	db   store.Pins // if not nil, where the pins are; path is unused

	mu      sync.Mutex
	pins    map[string]*Pin
	bad     map[string]string // tool -> why its stored pin could not be read (kept as it is; the tool is held)
	stamp   string
	version int64 // of db's pins, as last read
}

type pinFile struct {
	Version int    `json:"version"`
	Pins    []*Pin `json:"pins"`
}

// Open opens the pin file at path; a missing file is an empty store.
func Open(path string) (*Store, error) {
	s := &Store{path: path}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.refresh(); err != nil {
		return nil, err
	}
	return s, nil
}

// OpenStore opens the pins kept in db. If a pin file exists at file (the
// data folder's pins.json of an older gateway), its pins are imported, and
// the file is renamed file+".imported". Each pin is one write: an import a
// kill cut short leaves the file, and the next one imports the pins db
// does not keep yet (those it keeps, pinned or unreadable, stay as they
// are), so that no tool of the file is pinned again as new, its change
// taken for a first sight.
func OpenStore(ctx context.Context, db store.Pins, file string) (*Store, error) {
	s := &Store{db: db}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.refresh(); err != nil {
		return nil, err
	}
	if file == "" {
		return s, nil
	}
	old, err := Open(file)
	if err != nil {
		return nil, err
	}
	if len(old.pins) == 0 {
		return s, nil
	}
	for _, tool := range slices.Sorted(maps.Keys(old.pins)) {
		if _, ok := s.pins[tool]; ok {
			continue
		}
		if _, ok := s.bad[tool]; ok {
			continue
		}
		s.pins[tool] = old.pins[tool]
		if err := s.save(tool); err != nil {
			return nil, fmt.Errorf("importing the pins of %s: %w", file, err)
		}
	}
	if err := os.Rename(file, file+".imported"); err != nil {
		return nil, fmt.Errorf("importing the pins of %s: %w", file, err)
	}
	return s, nil
}

// refresh reloads the pins if they changed; s.mu is held.
func (s *Store) refresh() error {
	if s.db != nil {
		ctx := context.Background()
		v, err := s.db.PinsVersion(ctx)
		if err != nil {
			return fmt.Errorf("reading pins: %w", err)
		}
		if v == s.version && s.pins != nil {
			return nil
		}
		stored, v, err := s.db.ListPins(ctx)
		if err != nil {
			return fmt.Errorf("reading pins: %w", err)
		}
		pins, bad := map[string]*Pin{}, map[string]string(nil)
		for tool, data := range stored {
			p, err := decodePin(tool, data)
			if err != nil {
				if bad == nil {
					bad = map[string]string{}
				}
				bad[tool] = err.Error()
				continue
			}
			pins[tool] = p
		}
		s.pins, s.bad, s.version = pins, bad, v
		return nil
	}
	stamp, err := atomicfile.Stamp(s.path)
	if err != nil {
		return fmt.Errorf("reading pins: %w", err)
	}
	if stamp == s.stamp && s.pins != nil {
		return nil
	}
	var f pinFile
	if stamp, err = atomicfile.ReadJSON(s.path, "pins", &f); err != nil {
		return err
	}
	pins := map[string]*Pin{}
	for _, p := range f.Pins {
		pins[p.Tool] = p
	}
	s.pins, s.stamp = pins, stamp
	return nil
}

// save writes the pins of tools, in one write (to the file: every pin);
// s.mu is held.
func (s *Store) save(tools ...string) error {
	if s.db != nil {
		var v int64
		var err error
		if _, ok := s.pins[tools[0]]; len(tools) == 1 && ok {
			var b []byte
			if b, err = json.Marshal(s.pins[tools[0]]); err != nil {
				return err
			}
			v, err = s.db.PutPin(context.Background(), tools[0], b)
		} else {
			data := make(map[string][]byte, len(tools))
			for _, tool := range tools {
				p, ok := s.pins[tool]
				if !ok {
					data[tool] = nil // forgotten: deleted
					continue
				}
				if data[tool], err = json.Marshal(p); err != nil {
					return err
				}
			}
			v, err = s.db.PutPins(context.Background(), data)
		}
		if err != nil {
			return fmt.Errorf("writing pins: %w", err)
		}
		crashpoint.Reached("pin.stored")
		if v == s.version+1 {
			s.version = v // ours alone
		} else {
			s.version = -1 // another process wrote too: read them all again
		}
		return nil
	}
	f := pinFile{Version: 1}
	for _, p := range s.pins {
		f.Pins = append(f.Pins, p)
	}
	slices.SortFunc(f.Pins, func(a, b *Pin) int { return strings.Compare(a.Tool, b.Tool) })
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return err
	}
	if err := atomicfile.Write(s.path, append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("writing pins: %w", err)
	}
	s.stamp, _ = atomicfile.Stamp(s.path)
	return nil
}

// Check compares a tool's definition with its pin: a tool seen for the
// first time is pinned (New); a different definition is recorded as the
// pending change and Held until approved; the pinned one is Unchanged.
func (s *Store) Check(tool string, d Definition) (Status, error) {
	c, err := d.canonical()
	if err != nil {
		return Held, fmt.Errorf("pinning %s: %w", tool, err)
	}
	h, _ := c.Hash()
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.refresh(); err != nil {
		return Held, err
	}
	st, changed := s.check(tool, c, h, time.Now().UTC().Truncate(time.Second))
	if changed {
		return st, s.save(tool)
	}
	return st, nil
}

// CheckAll is Check of many tools at once (an upstream's prompts and
// resources as mirrored, a listing's tools): the same statuses, by tool,
// and what changed saved in one write (the file written once, the store
// in one transaction), not one each. A definition that cannot be hashed
// is Held, and named in the error; if the pins cannot be read or
// written, the error says so (statuses as Check would return them).
func (s *Store) CheckAll(defs map[string]Definition) (map[string]Status, error) {
	return s.CheckListings(defs, nil, nil)
}

// Listing is one upstream's whole listing of one kind: its tools, or
// (Content) its prompts, resources and resource templates.
type Listing struct {
	Upstream string
	Content  bool
}

// CheckListings is CheckAll that also notes, in the same write, each
// pin's upstream (upstreamOf, by key; "" or a nil upstreamOf: not noted)
// and whether it is listed: a pin checked is listed; a pin of an upstream
// and kind in complete (whole listings, of which defs holds every key)
// not in defs is noted unlisted since now, if it was not. An unlisted pin
// is kept (Pin.Unlisted): only Forget drops one. Nothing is written when
// nothing changed.
func (s *Store) CheckListings(defs map[string]Definition, upstreamOf func(key string) string, complete []Listing) (map[string]Status, error) {
	type hashed struct {
		c Definition
		h string
	}
	out := make(map[string]Status, len(defs))
	ok := make(map[string]hashed, len(defs))
	var errs []error
	for _, tool := range slices.Sorted(maps.Keys(defs)) {
		c, err := defs[tool].canonical()
		if err != nil {
			out[tool] = Held
			errs = append(errs, fmt.Errorf("pinning %s: %w", tool, err))
			continue
		}
		h, _ := c.Hash()
		ok[tool] = hashed{c, h}
	}
	if len(ok) == 0 && len(complete) == 0 {
		return out, errors.Join(errs...)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.refresh(); err != nil {
		for tool := range ok {
			out[tool] = Held
		}
		return out, errors.Join(append(errs, err)...)
	}
	now := time.Now().UTC().Truncate(time.Second)
	var changed []string
	for _, tool := range slices.Sorted(maps.Keys(ok)) {
		st, ch := s.check(tool, ok[tool].c, ok[tool].h, now)
		out[tool] = st
		if ch {
			changed = append(changed, tool)
		}
	}
	changed = s.noteListed(defs, upstreamOf, complete, now, changed)
	if len(changed) > 0 {
		if err := s.save(changed...); err != nil {
			errs = append(errs, err)
		}
	}
	return out, errors.Join(errs...)
}

// check is Check of the canonical definition c, of hash h, seen at now;
// s.mu is held and the pins fresh. It reports whether it changed the
// tool's pin, which is then to be saved.
func (s *Store) check(tool string, c Definition, h string, now time.Time) (Status, bool) {
	if _, ok := s.bad[tool]; ok {
		// Its pin cannot be read: held as changed, and the row is not
		// written over (Unreadable names it).
		return Held, false
	}
	p := s.pins[tool]
	if p != nil && !p.IconsPinned {
		p.IconsPinned = true
		bare := c
		bare.Icons = nil
		if p.Hash != h && len(c.Icons) > 0 {
			if bh, _ := bare.Hash(); bh == p.Hash {
				p.Hash, p.Definition, p.Pending = h, c, nil
				return Unchanged, true
			} else if again, err := p.Definition.Hash(); err == nil && again == bh {
				p.Hash, p.Definition, p.Pending = h, c, nil
				return Unchanged, true
			}
		}
		if p.Hash == h {
			return Unchanged, true
		}
	}
	if p != nil && p.Hash != h {
		if again, err := p.Definition.Hash(); err == nil && again == h {
			// The pin was hashed under an older canonical form (a number
			// spelled another way, say): the definition has not changed.
			p.Hash, p.Definition, p.Pending = h, c, nil
			return Unchanged, true
		}
	}
	switch {
	case p == nil:
		s.pins[tool] = &Pin{Tool: tool, Hash: h, Definition: c, Pinned: now, IconsPinned: true}
		return New, true
	case p.Hash == h:
		if p.Pending != nil { // the upstream went back to the pinned definition
			p.Pending = nil
			return Unchanged, true
		}
		return Unchanged, false
	case p.Pending != nil && p.Pending.Hash == h:
		return Held, false
	}
	p.Pending = &Change{Hash: h, Definition: c, Seen: now}
	return Held, true
}

// decodePin reads the pin of tool as the store keeps it: an error if it is
// not one (not JSON, another tool's, no hash).
func decodePin(tool string, data []byte) (*Pin, error) {
	var p Pin
	if err := json.Unmarshal(data, &p); err != nil {
		return nil, err
	}
	switch {
	case p.Tool != tool:
		return nil, fmt.Errorf("its data is the pin of %q", p.Tool)
	case p.Hash == "":
		return nil, errors.New("its data has no hash")
	case p.Pending != nil && p.Pending.Hash == "":
		return nil, errors.New("its pending change has no hash")
	}
	return &p, nil
}

// Unreadable returns the tools whose stored pin could not be read, with
// why: each is held as changed, and its row is kept as it is.
func (s *Store) Unreadable() (map[string]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.refresh(); err != nil {
		return nil, err
	}
	return maps.Clone(s.bad), nil
}

// Get returns a tool's pin.
func (s *Store) Get(tool string) (Pin, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.refresh(); err != nil {
		return Pin{}, false, err
	}
	p, ok := s.pins[tool]
	if !ok {
		return Pin{}, false, nil
	}
	return clonePin(p), true, nil
}

func clonePin(p *Pin) Pin {
	c := *p
	if p.Pending != nil {
		ch := *p.Pending
		c.Pending = &ch
	}
	if p.Unlisted != nil {
		u := *p.Unlisted
		c.Unlisted = &u
	}
	return c
}

// Content reports whether a pin key is a prompt's, resource's or resource
// template's (upstream.PinKey), not a tool's.
func Content(key string) bool {
	return strings.HasPrefix(key, "prompt:") || strings.HasPrefix(key, "resource:") || strings.HasPrefix(key, "resource_template:")
}

// noteListed notes the pins' upstreams and listings as CheckListings
// says, and returns changed with the keys of the pins it changed (each
// once); s.mu is held and the pins fresh.
func (s *Store) noteListed(defs map[string]Definition, upstreamOf func(string) string, complete []Listing, now time.Time, changed []string) []string {
	if upstreamOf == nil && len(complete) == 0 {
		return changed
	}
	was := make(map[string]bool, len(changed))
	for _, k := range changed {
		was[k] = true
	}
	note := func(k string) {
		if !was[k] {
			was[k] = true
			changed = append(changed, k)
		}
	}
	for k := range defs {
		p := s.pins[k]
		if p == nil {
			continue
		}
		up := p.Upstream
		if upstreamOf != nil && (up == "" || p.Unlisted != nil) {
			// The upstream that lists it first keeps it while it lists it:
			// two listing one key (a resource's URI) do not take it in
			// turns, a write at each listing.
			up = cmp.Or(upstreamOf(k), up)
		}
		if p.Upstream != up || p.Unlisted != nil {
			p.Upstream, p.Unlisted = up, nil
			note(k)
		}
	}
	for _, l := range complete {
		for k, p := range s.pins {
			if _, listed := defs[k]; !listed && p.Unlisted == nil && p.Upstream == l.Upstream && Content(k) == l.Content {
				p.Unlisted = &now
				note(k)
			}
		}
	}
	return changed
}

// Forget drops the pins drop names (reach tools forget), in one write, and returns their keys, sorted. A pin that could not be
// read is kept (Unreadable).
func (s *Store) Forget(drop func(Pin) bool) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.refresh(); err != nil {
		return nil, err
	}
	var gone []string
	for k, p := range s.pins {
		if drop(clonePin(p)) {
			gone = append(gone, k)
		}
	}
	if len(gone) == 0 {
		return nil, nil
	}
	slices.Sort(gone)
	kept := maps.Clone(s.pins)
	for _, k := range gone {
		delete(s.pins, k) // saved as deleted: save writes a missing pin as none
	}
	if err := s.save(gone...); err != nil {
		s.pins = kept
		return nil, err
	}
	return gone, nil
}

// List returns the pins sorted by tool; with held, only those with a
// change waiting.
func (s *Store) List(held bool) ([]Pin, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.refresh(); err != nil {
		return nil, err
	}
	var out []Pin
	for _, p := range s.pins {
		if !held || p.Pending != nil {
			out = append(out, clonePin(p))
		}
	}
	slices.SortFunc(out, func(a, b Pin) int { return strings.Compare(a.Tool, b.Tool) })
	return out, nil
}

// Approve pins a tool's pending definition, recording who approved it.
func (s *Store) Approve(tool, by string) error {
	if strings.TrimSpace(by) == "" {
		return errors.New("approving a tool definition: say who approves it")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.refresh(); err != nil {
		return err
	}
	p := s.pins[tool]
	if p == nil || p.Pending == nil {
		return fmt.Errorf("%w with a held change: %s", ErrNoPin, tool)
	}
	p.Hash, p.Definition, p.Pinned, p.ApprovedBy, p.Pending, p.IconsPinned = p.Pending.Hash, p.Pending.Definition,
		time.Now().UTC().Truncate(time.Second), by, nil, true
	return s.save(tool)
}

// Diff shows a tool's held change: the pinned definition against the new
// one, line by line ("-" pinned, "+" new).
func (s *Store) Diff(tool string) (string, error) {
	p, ok, err := s.Get(tool)
	if err != nil {
		return "", err
	}
	if !ok || p.Pending == nil {
		return "", fmt.Errorf("%w with a held change: %s", ErrNoPin, tool)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "--- %s pinned sha256:%s (%s)\n", tool, p.Hash[:12], p.Pinned.Format(time.RFC3339))
	fmt.Fprintf(&b, "+++ %s new    sha256:%s (seen %s)\n", tool, p.Pending.Hash[:12], p.Pending.Seen.Format(time.RFC3339))
	b.WriteString(diffLines(render(p.Definition), render(p.Pending.Definition)))
	return b.String(), nil
}

// render lays a definition out as lines a human can compare.
func render(d Definition) []string {
	var out []string
	// Every line of the upstream's text is indented under its heading, so
	// that no line of it reads as a line of the diff (a "+ " or "- ").
	if d.Title != "" {
		out = append(out, "title:")
		for _, l := range strings.Split(d.Title, "\n") {
			out = append(out, "  "+l)
		}
	}
	out = append(out, "description:")
	for _, l := range strings.Split(d.Description, "\n") {
		out = append(out, "  "+l)
	}
	for _, part := range []struct {
		name string
		raw  json.RawMessage
	}{{"input_schema", d.InputSchema}, {"output_schema", d.OutputSchema}, {"annotations", d.Annotations}, {"icons", d.Icons}} {
		if len(part.raw) == 0 {
			continue
		}
		var buf bytes.Buffer
		if json.Indent(&buf, part.raw, "  ", "  ") != nil {
			buf.Reset()
			buf.Write(part.raw)
		}
		out = append(out, part.name+":")
		for _, l := range strings.Split(buf.String(), "\n") {
			out = append(out, "  "+l)
		}
	}
	return out
}

// maxDiffLines bounds the line-by-line comparison; longer definitions are
// shown whole, old then new.
const maxDiffLines = 3000

// diffLines compares two line lists by their longest common subsequence.
func diffLines(a, b []string) string {
	var out strings.Builder
	if len(a) > maxDiffLines || len(b) > maxDiffLines {
		for _, l := range a {
			out.WriteString("- " + l + "\n")
		}
		for _, l := range b {
			out.WriteString("+ " + l + "\n")
		}
		return out.String()
	}
	// lcs[i][j] is the LCS length of a[i:] and b[j:].
	lcs := make([][]int32, len(a)+1)
	for i := range lcs {
		lcs[i] = make([]int32, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case i < len(a) && j < len(b) && a[i] == b[j]:
			out.WriteString("  " + a[i] + "\n")
			i++
			j++
		case i < len(a) && (j == len(b) || lcs[i+1][j] >= lcs[i][j+1]):
			out.WriteString("- " + a[i] + "\n")
			i++
		default:
			out.WriteString("+ " + b[j] + "\n")
			j++
		}
	}
	return out.String()
}
