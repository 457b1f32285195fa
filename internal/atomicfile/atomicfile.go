// Package atomicfile writes files that readers see whole or not at all, and
// tells whether such a file changed since it was last read.
package atomicfile

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// NoFile is the Stamp of a path where there is no file. No stamp is "", so
// "" can stand for "not read yet".
const NoFile = "-"

// Stamp returns a string that changes when the file at path is written (its
// size and modification time), or NoFile if there is no file, so that a
// store kept in the file can tell cheaply whether to read it again.
func Stamp(path string) (string, error) {
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return NoFile, nil
	}
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%d/%d", fi.Size(), fi.ModTime().UnixNano()), nil
}

// ReadJSON decodes the JSON file at path into v and returns the file's
// Stamp, taken before it is read. Where there is no file, v is left as it
// is and the stamp is NoFile. what names the file's contents in errors:
// "reading what: ...", or "reading what from path: ..." for a file that
// does not decode.
func ReadJSON(path, what string, v any) (string, error) {
	stamp, err := Stamp(path)
	if err != nil {
		return "", fmt.Errorf("reading %s: %w", what, err)
	}
	if stamp == NoFile {
		return stamp, nil
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrPermission) {
		// Most often a file another user's reach made (a sudo once).
		return "", fmt.Errorf("reading %s: %w: this user may not read it: run reach as the user that owns it, or give the data folder and its files to this one (chown -R)", what, err)
	}
	if err != nil {
		return "", fmt.Errorf("reading %s: %w", what, err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		if _, ok := errors.AsType[*json.SyntaxError](err); ok {
			// Cut short or edited by hand: the JSON error alone said
			// nothing of what to do, and nothing here rewrites the file.
			return "", fmt.Errorf("reading %s from %s: the file is not valid JSON (%w): restore it from a backup, or mend it by hand", what, path, err)
		}
		return "", fmt.Errorf("reading %s from %s: %w", what, path, err)
	}
	return stamp, nil
}

// Write writes data to a temporary file in path's folder (made with mode
// 0700 if missing) with mode perm, syncs it, and renames it over path, so
// readers see the old file or the new one, never a part of either.
func Write(path string, data []byte, perm os.FileMode) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp) // after a successful rename there is nothing to remove
	if err := f.Chmod(perm); err != nil {
		f.Close()
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}
